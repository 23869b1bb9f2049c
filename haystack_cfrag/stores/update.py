"""`update_store`: passages written into a store the one safe way (`cfrag index`, the demo store, your code).

In order, under the store's lock (`stores.lock`: a second writer waits `wait` seconds, then refuses in one line):
open the store (none yet: created with the first passage) → plan the changes by file (`stores.changes`) → embed
the added and replaced passages → mark the graph beside the store → write and save → with `graph`, build the
family's index-time parts over the store's passages. A run killed anywhere is finished by the next (kill tests
stop at `stores.checkpoints`). A dry run plans and reads only: nothing is embedded, locked or written.

>>> folder = Path(tempfile.mkdtemp())
>>> _ = (folder / "notes.txt").write_text("Rain causes floods. Floods close roads.", encoding="utf-8")
>>> embed = lambda docs: [replace(d, embedding=[1.0, 0.0]) for d in docs]  # or a Haystack document embedder
>>> done = update_store(f"memory:{folder / 'store.json'}", [folder], embedder=embed)
>>> done.plan.summary(), done.count
('1 added, 0 replaced, 0 removed, 0 kept', 1)
>>> update_store(f"memory:{folder / 'store.json'}", [folder], embedder=embed).plan.summary()
'0 added, 0 replaced, 0 removed, 1 kept'
"""

from __future__ import annotations

import os
import tempfile  # noqa: F401  (the doctest's folder)
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace  # noqa: F401  (replace: the doctest's embedder)
from pathlib import Path  # noqa: F401  (the doctest's folder)
from typing import Any

from haystack import Document

from haystack_cfrag import models
from haystack_cfrag.stores import checkpoints
from haystack_cfrag.stores.changes import MAX_PRUNE_SHARE, Changes, apply_changes, plan_changes
from haystack_cfrag.stores.lock import DEFAULT_WAIT, store_lock
from haystack_cfrag.stores.sources import Passages, read_sources
from haystack_cfrag.stores.specs import StoreSpec, parse_store_spec

Embedder = str | Callable[[list[Document]], list[Document]] | Any
"""A model spec (`haystack_cfrag.models`), a Haystack document embedder (`run(documents=…)`), a function."""


class PruneRefused(ValueError):
    """`prune` would remove more than the guard allows (`stores.changes`); one line, nothing written."""


@dataclass(frozen=True)
class GraphBuild:
    """What `update_store(graph=…)` builds after the passages: the family's index-time parts (CausalRAG's graph)."""

    llm: str = models.EMBEDDED_LLM
    extractor: str = ""
    """The family's extractor (`cfrag index --extractor`); "": its default."""
    engine: str = "local"
    ray_address: str | None = None
    progress: Callable[[str], None] | None = None
    """Told each step of the extraction in one line (`cfrag index`: its status line)."""
    text_embedder: Any = None
    """The query embedder of the passages' space (None: made from `update_store`'s embedder, a model spec)."""


@dataclass
class Update:
    """What `update_store` did (a dry run: would do): its plan by file, and the store after it."""

    plan: Changes
    written: int = 0
    count: int = 0
    """Passages in the store after the update (before it, in a dry run)."""
    stale: bool = False
    """Whether a graph beside the store was marked stale (its passages changed without `graph`)."""
    graph: str = ""
    """The graph step's one-line summary ("" without `graph`)."""
    dry_run: bool = False


def update_store(spec: str | os.PathLike[str] | StoreSpec, sources: Passages | Iterable[Any], *,
                 embedder: Embedder = models.EMBEDDED_EMBEDDER, device: str | None = None,
                 prune: bool = False, force: bool = False, dry_run: bool = False, wait: float = DEFAULT_WAIT,
                 graph: GraphBuild | None = None, preparation: Any = None,
                 notify: Callable[[str], None] | None = None, saved: Callable[[Update], None] | None = None,
                 max_prune_share: float = MAX_PRUNE_SHARE) -> Update:
    """Write `sources` into the store `spec` (module doc) and return what changed, by file.

    :param sources: files and folders (read by `stores.sources.read_sources` with its defaults), what
        `read_sources` gave, or Documents as they are (never removed by file).
    :param embedder: embeds the added and replaced passages (loaded only when there are some).
    :param prune: also remove the passages whose every file is provably gone (guarded: `stores.changes`).
    :param wait: seconds to wait for another writer of the store before refusing (`stores.lock.StoreBusy`).
    :param graph: also build `preparation`'s index-time parts over the store's passages.
    :param preparation: what a family keeps beside the store (`family.StorePreparation`;
        `haystack_cfrag.registry.store_preparation()`: CausalRAG's graph, as `cfrag index` passes): what `graph`
        builds, and what a change of the passages marks stale. None: nothing beside the store is built or marked.
    :param notify: told in one line when another writer holds the store and this one waits.
    :param saved: called with the result once the passages are saved, before the graph is built.
    :raises StoreBusy: another writer held the store for `wait` seconds.
    :raises PruneRefused: the prune guard (one line; nothing written).
    :raises ValueError: one line: a store that cannot be opened or written, another embedding dimension, a
        file that cannot be read.
    """
    s = spec if isinstance(spec, StoreSpec) else parse_store_spec(spec)
    if graph is not None and graph.text_embedder is None and not isinstance(embedder, str):
        raise ValueError("graph= with an embedder that is not a model spec needs GraphBuild(text_embedder="
                         "…), the query embedder of the same model; nothing written.")
    if graph is not None and preparation is None:
        raise ValueError("graph= needs the preparation that builds it (preparation=haystack_cfrag.registry."
                         "store_preparation()); nothing written.")
    read = _passages(sources)
    if dry_run:
        return _write(s, read, embedder, device, prune=prune, force=force, share=max_prune_share, dry_run=True)
    writes = preparation.writes() if preparation is not None and preparation.writes is not None else None
    try:
        with store_lock(s, wait=wait, notify=notify):
            done = _write(s, read, embedder, device, prune=prune, force=force, share=max_prune_share,
                          graph=graph is not None, writes=writes)
            if saved is not None:
                saved(done)
            if graph is not None:
                done.graph = _build_graph(s, embedder, device, graph, preparation)
    finally:
        if writes is not None:
            writes.forget_marks()
    return done


def _passages(sources: Passages | Iterable[Any]) -> Passages:
    if isinstance(sources, Passages):
        return sources
    items = [sources] if isinstance(sources, str | os.PathLike) else list(sources)
    if items and all(isinstance(i, Document) for i in items):
        return Passages(items)
    return read_sources(items)


def _write(spec: StoreSpec, read: Passages, embedder: Embedder, device: str | None, *, prune: bool,
           force: bool, share: float, graph: bool = False, dry_run: bool = False, writes: Any = None) -> Update:
    """The passages written into the store (under its lock), or only planned (`dry_run`); `writes`: the
    preparation's writer of what it keeps beside the store (`family.StoreWrites`), None without one."""
    from haystack_cfrag.stores.existing import stored_dim  # noqa: PLC0415
    from haystack_cfrag.stores.opening import close_document_store, open_document_store, save_document_store  # noqa: PLC0415

    if graph and writes is not None:
        writes.check_graph_writable(spec)  # before a model loads: a read-only graph refused, nothing written
    try:  # an existing store: the passages it holds as they are are neither embedded nor written
        store = open_document_store(spec)
    except FileNotFoundError:
        store = None
    try:
        plan = plan_changes(store, read.passages, sources=read.read, prune=prune, unread=read.kept,
                            force=force, max_share=share)
        done = Update(plan, count=store.count_documents() if store is not None else 0, dry_run=dry_run)
        if dry_run:
            return done
        if plan.refusal:
            raise PruneRefused(plan.refusal)
        embedded = _embed(embedder, device)(plan.to_embed) if plan.to_embed else []
        checkpoints.reached("passages embedded")
        dim = len(embedded[0].embedding) if embedded and embedded[0].embedding is not None else None
        if store is None and embedded:
            store = open_document_store(spec, embedding_dim=dim, create=True)
        elif store is not None and dim is not None and (held_dim := stored_dim(store)) not in (None, dim):
            raise ValueError(f"{spec} holds {held_dim}-dimensional embeddings, not {dim} "
                             f"({_name(embedder)}); the store is unchanged.")
        # the graph learns first that its passages change: a kill from here on leaves it marked, never stale
        # without a word
        if graph and writes is not None:
            writes.prepare_graph(spec)
        elif plan.changes_store() and store is not None and writes is not None:
            done.stale = writes.mark_stale(spec)
        if store is not None and (plan.changes_store() or plan.retag):
            done.written = apply_changes(store, plan, embedded)
            save_document_store(store, spec)
            checkpoints.reached("passages saved")
        done.count = store.count_documents() if store is not None else 0
        return done
    finally:
        if store is not None:
            close_document_store(store)


def _embed(embedder: Embedder, device: str | None) -> Callable[[list[Document]], list[Document]]:
    """The embedding function of a model spec (its embedder made and loaded now), a component, a function."""
    if isinstance(embedder, str):
        from haystack_cfrag.adapters import factories  # noqa: PLC0415

        embedder = factories.document_embedder(embedder, device=device, progress_bar=True)
    if hasattr(embedder, "run"):
        if hasattr(embedder, "warm_up"):
            embedder.warm_up()
        return lambda docs: embedder.run(documents=docs)["documents"]
    return embedder


def _name(embedder: Embedder) -> str:
    return embedder if isinstance(embedder, str) else type(embedder).__name__


def _build_graph(spec: StoreSpec, embedder: Embedder, device: str | None, build: GraphBuild, prep: Any) -> str:
    """The graph of the store's passages, written beside it (new or changed passages extracted, others
    cached)."""
    from haystack_cfrag.adapters import factories  # noqa: PLC0415
    from haystack_cfrag.common import interrupts  # noqa: PLC0415
    from haystack_cfrag.stores.opening import close_document_store, open_document_store  # noqa: PLC0415

    store = open_document_store(spec)  # FileNotFoundError: --prune alone, into no store
    try:
        stored = [d for d in store.filter_documents() if d.content]
    finally:
        close_document_store(store)
    extractor = build.extractor or prep.default_extractor
    generator = None
    if extractor not in prep.parse_only:
        generator = factories.chat_generator(build.llm, device=device)
        interrupts.warm_up(generator)  # loaded before the extraction, with Ctrl-C held
    text_embedder = build.text_embedder or factories.text_embedder(embedder, device=device)
    # the graph's node names in batches, by the passages' own model (a function embedder: one by one)
    documents = factories.document_embedder(embedder, device=device) if isinstance(embedder, str) else (
        embedder if hasattr(embedder, "run") else None)
    try:
        stats = prep.index(stored, chat_generator=generator, cache_dir=models.graph_cache_dir(),
                           progress=build.progress, extractor=extractor, engine=build.engine,
                           ray_address=build.ray_address, store_spec=spec, text_embedder=text_embedder,
                           document_embedder=documents)
    except (ImportError, RuntimeError) as exc:  # spaCy or Ray missing, a model not the pinned one
        raise ValueError(str(exc)) from exc
    return prep.summarize(stats)


__all__ = ["GraphBuild", "PruneRefused", "Update", "update_store"]
