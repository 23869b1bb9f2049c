"""`cfrag index --graph`: CausalRAG's graph extraction ahead of time, incremental, with progress and its cost.

Each passage's extraction lands in the cache the runtime reads, keyed by its content hash and the extractor: a
cached passage costs nothing, a new or changed one is extracted, a deleted one leaves the graph. The store's
documents are only read. In process, or on Ray (`engine="ray"`): the same graph.

>>> from haystack import Document
>>> from haystack_cfrag.testing import MockChatGenerator
>>> import tempfile
>>> stats = extract_passages([Document(content="Rain causes floods.")], chat_generator=MockChatGenerator(),
...                          cache_dir=tempfile.mkdtemp())
>>> stats["passages"], stats["llm_calls"], stats["extracted"]
(1, 1, 1)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from haystack import Document

from haystack_cfrag.causal_rag.components._extraction_cache import ExtractionCache
from haystack_cfrag.causal_rag.components.causal_graph_builder import CausalGraphBuilder
from haystack_cfrag.causal_rag.extractors import BUILDER_SETTINGS, check_extractor_name, make_extractor
from haystack_cfrag.causal_rag.math.extraction import (
    Extraction,
    cache_key,
    chunk_text,
    passage_hash,
    per_extracted_passage,
)
from haystack_cfrag.common import interrupts

COUNTED = ("chunks", "extracted", "cached", "parse_failures", "failed_calls", "llm_calls", "extractor_calls",
           "prompt_tokens", "completion_tokens", "rejected")
ENGINES = ("local", "ray")


def extract_passages(
    passages: list[Document],
    *,
    chat_generator: Any | None = None,
    cache_dir: str | Path,
    progress: Callable[[str], None] | None = None,
    extractor: Any = None,
    extractor_name: str | None = None,
    builder_settings: dict[str, Any] | None = None,
    batch_size: int = 64,
    engine: str = "local",
    ray_address: str | None = None,
    store_spec: Any = None,
    text_embedder: Any = None,
    document_embedder: Any = None,
) -> dict[str, Any]:
    """Extract (or find in the cache) every passage's graph; the summed stats, seconds and the graph's size.

    :param chat_generator: the LLM of CausalRAG's recipe (when `extractor` is None).
    :param extractor: a graph extractor component (`causal_rag.extractors`), or its name ("llm", "llm-json",
        "spacy": built here, with its builder settings); None = "llm", the chat generator's recipe.
    :param extractor_name: the name shown in the summary (default: the name given, the class, or "llm").
    :param builder_settings: more `CausalGraphBuilder` init parameters (`extractors.BUILDER_SETTINGS`).
    :param batch_size: passages per extractor call (and per progress line); the LLM recipe goes one by one.
    :param engine: "local" or "ray" (then `ray_address`: None = a local Ray, or a cluster's address).
    :param store_spec: the store of the passages: the graph is written beside it (`graph_write.write_graph`,
        nodes embedded by `document_embedder` in batches, else the text embedder); None: only counted in memory.
    """
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r:.40}; choose one of {', '.join(ENGINES)}.")
    if isinstance(extractor, str):
        extractor_name = check_extractor_name(extractor)
        builder_settings = {**BUILDER_SETTINGS.get(extractor, {}), **(builder_settings or {})}
        extractor = make_extractor(extractor, chat_generator=chat_generator)
    builder = CausalGraphBuilder(
        chat_generator=chat_generator,
        extractor=extractor,
        cache_dir=str(cache_dir),
        progress_bar=False,
        batch_size=max(1, min(batch_size, 4096)),
        **(builder_settings or {}),
    )  # `progress` says where it is
    name = extractor_name or (type(extractor).__name__ if extractor is not None else "llm")
    total: dict[str, Any] = {key: 0 for key in COUNTED} | {"cached_priced": 0, "cached_seconds": 0.0,
                                                           "extractor": name, "engine": engine}
    every = passages
    in_graph = _in_stored_graph(passages, store_spec) if store_spec is not None else set()
    passages = [d for d in passages if d.id not in in_graph]  # the graph already holds these: nothing to read
    total["in_graph"] = len(in_graph)
    start = time.perf_counter()
    if engine == "ray":
        if extractor is None:
            raise ValueError(
                "engine 'ray' runs a graph extractor component (--extractor spacy or llm-json), "
                "not the builder's in-process LLM recipe."
            )
        if passages:
            _extract_on_ray(passages, builder, total, progress, batch_size, ray_address)
    elif passages:  # nothing new: no model loaded
        interrupts.warm_up(
            builder
        )  # the extractor's model too; a Ctrl-C during the load takes effect after it
        step = 1 if extractor is None else max(1, batch_size)
        done = 0
        for batch in _batches(passages, step):
            if progress is not None:
                progress(_progress_line(name, done, len(passages), total, time.perf_counter() - start))
            _add(total, builder.run(documents=batch))
            done += len(batch)
    total["seconds"] = time.perf_counter() - start
    total["passages"] = len(every)
    if store_spec is not None:  # the graph as data beside the passages, batch by batch
        from haystack_cfrag.causal_rag.graph_write import write_graph  # noqa: PLC0415
        from haystack_cfrag.causal_rag.node_store import TextEmbedderForDocuments  # noqa: PLC0415

        embedder = TextEmbedderForDocuments(text_embedder, document_embedder)
        embedder.warm_up()
        stored = write_graph(every, store_spec, builder=builder, embedder=embedder, progress=progress)
        total.update(stored, stored_graph=True)
        return total
    # the graph itself, put together from the cache (no extraction: every passage is in it now)
    graph = builder.assemble(every)["stats"] if every else {}
    total.update({k: int(graph.get(k, 0) or 0) for k in ("nodes", "edges", "causal_edges")})
    return total


def _in_stored_graph(passages: list[Document], store_spec: Any) -> set[str]:
    """Ids of the passages the store's tables already hold with the same text (neither extracted nor read);
    empty when a recorded passage is gone or changed (the tables are then rebuilt from the cache)."""
    from haystack_cfrag.causal_rag.stored_graph import graph_home  # noqa: PLC0415

    home = graph_home(store_spec)
    if not home.exists():
        return set()
    tables = home.tables()
    try:
        recorded = tables.passages()
    finally:
        tables.close()
    current = {d.id: passage_hash(d.content or "") for d in passages}
    if any(current.get(pid) != digest for pid, digest in recorded.items()):
        return set()
    return set(recorded)


def _batches(passages: list[Document], size: int) -> Iterator[list[Document]]:
    for i in range(0, len(passages), size):
        yield passages[i : i + size]


def _add(total: dict[str, Any], out: dict[str, Any]) -> None:
    for key in COUNTED:
        total[key] += int(out["stats"].get(key, 0) or 0)
    for cost in out["costs"]:  # a passage found in the cache, with what its extraction cost when made
        if cost["how"] == "cached" and cost["seconds"] is not None:
            total["cached_priced"] += 1
            total["cached_seconds"] += cost["seconds"]


def _progress_line(name: str, done: int, n: int, total: dict[str, Any], seconds: float) -> str:
    rate = total["extracted"] / seconds if seconds > 0 and total["extracted"] else 0.0
    return f"graph ({name}): passage {done}/{n}, {total['extracted']} extracted, {total['cached']} cached" + (
        f", {rate:.1f} passages/s" if rate else ""
    )


# ------------------------------------------------------------------ Ray
def _ray_extract(
    extractor: Any, texts_by_passage: list[list[str]]
) -> list[tuple[list[dict[str, Any]], list[Any], float]]:
    """On a Ray worker: one batch's extractions (as cache records' chunk dicts), their meta and seconds."""
    if hasattr(extractor, "warm_up"):
        extractor.warm_up()
    start = time.perf_counter()
    flat = [t for texts in texts_by_passage for t in texts]
    out = extractor.run(texts=flat)
    seconds = time.perf_counter() - start
    results, at = [], 0
    for texts in texts_by_passage:
        chunk = out["extractions"][at : at + len(texts)]
        meta = out["meta"][at : at + len(texts)]
        results.append(([e.to_dict() for e in chunk], list(meta), seconds * len(texts) / max(len(flat), 1)))
        at += len(texts)
    return results


def _extract_on_ray(
    passages: list[Document],
    builder: CausalGraphBuilder,
    total: dict[str, Any],
    progress: Callable[[str], None] | None,
    batch_size: int,
    address: str | None,
) -> None:
    try:
        import ray  # noqa: PLC0415
    except ImportError as exc:
        raise RuntimeError("engine 'ray' needs Ray: pip install 'haystack-cfrag[ray]'.") from exc
    if not ray.is_initialized():
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False, include_dashboard=False)
    cache = ExtractionCache(builder.cache_dir)  # type: ignore[arg-type]
    fingerprint = builder.fingerprint()
    todo: dict[str, list[str]] = {}
    for doc in passages:
        if not isinstance(doc.content, str) or not doc.content.strip():
            continue
        key = cache_key(passage_hash(doc.content), fingerprint)
        if key in todo:
            continue
        try:
            if cache.load(key) is not None:
                continue
        except ValueError:  # a corrupt entry: extracted again
            pass
        todo[key] = chunk_text(doc.content, builder.chunk_chars, builder.chunk_overlap)[
            : builder.max_chunks_per_passage
        ]
    keys = list(todo)
    extract = ray.remote(_ray_extract)
    handle = ray.put(builder.extractor)
    batches = [keys[i : i + max(1, batch_size)] for i in range(0, len(keys), max(1, batch_size))]
    futures = {extract.remote(handle, [todo[k] for k in batch]): batch for batch in batches}
    machine = f"ray:{address or 'local'}"
    pending = list(futures)
    while pending:
        ready, pending = ray.wait(pending, num_returns=1)
        for ref in ready:
            for key, (chunks, meta, seconds) in zip(futures[ref], ray.get(ref), strict=True):
                for ex in chunks:  # the record is checked as the cache will read it
                    Extraction.from_dict(ex)
                tokens = [
                    sum(int(m.get(k, 0) or 0) for m in meta if isinstance(m, dict))
                    for k in ("prompt_tokens", "completion_tokens")
                ]
                total["rejected"] += sum(int(m.get("rejected", 0) or 0) for m in meta if isinstance(m, dict))
                cache.store(
                    key,
                    {
                        "chunks": chunks,
                        "prompt_tokens": tokens[0],
                        "completion_tokens": tokens[1],
                        "timed_on": {machine: round(seconds, 3)},
                    },
                )
                total["extracted"] += 1
                total["chunks"] += len(chunks)
            total["extractor_calls"] += 1
        if progress is not None:
            progress(
                f"graph ({total['extractor']}, ray): {total['extracted']}/{len(keys)} new passages extracted"
            )
    total["cached"] += len(passages) - total["extracted"]


def summary_line(stats: dict[str, Any]) -> str:
    """One line: what was extracted, by which extractor, what it cost per extracted passage, and the graph.

    >>> line = summary_line({"passages": 4, "extracted": 3, "cached": 1, "llm_calls": 3, "parse_failures": 1,
    ...                      "prompt_tokens": 900, "completion_tokens": 300, "nodes": 9, "edges": 7,
    ...                      "seconds": 30.0})
    >>> for part in line.split("; "):
    ...     print(part)
    graph: 4 passages (1 cached), 3 LLM calls, 1 unparsed
    extractor llm, 3 new or changed passages
    9 nodes, 7 edges (0 causal), 0 rejected by validation
    10.0 s and 400 tokens per extracted passage (0.1 passages/s)
    >>> summary_line({"passages": 2, "extracted": 0, "cached": 2, "seconds": 0.5}).split("; ")[-1]
    'no extraction (every passage from the cache)'
    >>> priced = {"passages": 2, "extracted": 0, "cached": 2, "cached_priced": 2, "cached_seconds": 19.0}
    >>> summary_line(priced).split("; ")[-1]
    'no extraction (every passage from the cache: 9.5 s each when it was extracted)'
    """
    cost = per_extracted_passage(stats)
    priced = int(stats.get("cached_priced", 0) or 0)
    then = (
        f"{float(stats.get('cached_seconds', 0.0)) / priced:.1f} s each when it was extracted"
        if priced
        else ""
    )
    if cost is None:
        tail = f"no extraction (every passage from the cache{': ' + then if then else ''})"
    else:
        rate = 1.0 / cost[0] if cost[0] > 0 else float("inf")
        tail = (
            (f"{cost[0]:.1f} s" if cost[0] >= 0.1 else f"{cost[0] * 1000:.1f} ms")
            + (f" and {cost[1]:.0f} tokens" if cost[1] else "")
            + f" per extracted passage ({rate:.1f} passages/s)"
            + (f" (the cached ones: {then})" if then else "")
        )
    calls = (
        f"{stats.get('llm_calls', 0)} LLM calls, {stats.get('parse_failures', 0)} unparsed"
        if stats.get("extractor", "llm") == "llm"
        else f"{stats.get('extractor_calls', 0)} extractor calls"
    )
    return (
        f"graph: {stats.get('passages', 0)} passages ("
        + (f"{stats['in_graph']} already in the graph, " if stats.get("in_graph") else "")
        + f"{stats.get('cached', 0)} cached), {calls}; "
        f"extractor {stats.get('extractor', 'llm')}, {stats.get('extracted', 0)} new or changed passages; "
        f"{stats.get('nodes', 0)} nodes, {stats.get('edges', 0)} edges "
        f"({stats.get('causal_edges', 0)} causal), "
        f"{stats.get('rejected', 0)} rejected by validation; {tail}"
        + (f"; stored beside the store: {stats.get('nodes_embedded', 0)} nodes embedded in "
           f"{float(stats.get('node_embedding_seconds', 0.0)):.1f} s, tables written in "
           f"{float(stats.get('edge_seconds', 0.0)):.1f} s" + (" (rebuilt: passages deleted or changed)"
                                                            if stats.get("rebuilt") else "")
           + (f" (an unfinished run completed: {stats.get('nodes_deleted', 0)} stale node vectors removed)"
              if stats.get("recovered") else "")
           if stats.get("stored_graph") else "")
    )


__all__ = ["ENGINES", "extract_passages", "summary_line"]
