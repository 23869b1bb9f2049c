"""`cfrag eval`: systems side by side on one store with the same models, scored per question, each result
appended to `records.jsonl` at once (a second run resumes); replies cached in `llm_cache.jsonl`.

Usage (the fakes stand in for the models):
    >>> import tempfile
    >>> from haystack_cfrag.testing.fakes import HashingDocumentEmbedder, HashingTextEmbedder, KeywordReader
    >>> out = tempfile.mkdtemp()
    >>> config = EvalConfig(data="tests/data/hotpotqa_dev_a_30.jsonl", limit=2, systems=["standard_rag", "cf_rag_fast"],
    ...                     out=out, progress=False, allowed_modules=["tests"])
    >>> records = run_eval(config, chat_generator=KeywordReader(candidates=["Tulsa"]),
    ...                    text_embedder=HashingTextEmbedder(), document_embedder=HashingDocumentEmbedder())
    >>> len(records), sorted({r["system"] for r in records})
    (4, ['cf_rag_fast', 'standard_rag'])
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from haystack import logging

from haystack_cfrag import models
from haystack_cfrag.adapters import factories
from haystack_cfrag.common.files import open_append
from haystack_cfrag.common.text import normalize_answer
from haystack_cfrag.common.timing import by_machine
from haystack_cfrag.common.validation import check_choice
from haystack_cfrag.evaluation import provenance
from haystack_cfrag.evaluation.corpus import CORPUS_MODES, INJECTION_VARIANTS, Corpus
from haystack_cfrag.evaluation.datasets import EvalItem, load_items
from haystack_cfrag.evaluation.llm_cache import CachingChatGenerator
from haystack_cfrag.evaluation.metrics import exact_match, f1, lenient_containment, trap_hit
from haystack_cfrag.evaluation.summary import read_records
from haystack_cfrag.evaluation.systems import DEFAULT_SYSTEMS, System, parse_systems
from haystack_cfrag.registry import injection_pipelines, resolve, store_preparation
from haystack_cfrag.runtime import Runtime

logger = logging.getLogger(__name__)

INJECTION_SYSTEMS = injection_pipelines()


@dataclass
class EvalConfig:
    """What to evaluate (every field is also a `cfrag eval` option).

    :param data: a JSONL file in one of the formats of `datasets.py`.
    :param limit, offset: the rows read (the pooled store and the distractors come from all of them).
    :param main_limit: questions of the main comparison (default: all of `limit`).
    :param corpus: `pooled` or `per-question` for the main comparison.
    :param systems: system names for the main comparison (see `systems.py`).
    :param inject_levels: N_inject levels; each runs in per-question mode with the injected passages.
    :param inject_variants: `distractor`, `near_duplicate`, `conflicting`.
    :param inject_systems: systems run at each injection level.
    :param inject_limit: questions per injection level (default: all of `limit`).
    :param out: the output folder (records, cache, results, report, plots).
    :param allowed_modules: extra trusted modules for pipeline files given by path (your components).
    :param cache: answer repeated prompts from `out/llm_cache.jsonl`; False: a latency run (every call made,
        each system its own model instance).
    :param graph_extractor: "llm", "llm-json" or "spacy" for the graph family (None: its default).
    """

    data: str
    format: str = "auto"
    limit: int | None = 100
    offset: int = 0
    main_limit: int | None = None
    corpus: str = "pooled"
    systems: list[str] = field(default_factory=lambda: list(DEFAULT_SYSTEMS))
    inject_levels: list[int] = field(default_factory=list)
    inject_variants: list[str] = field(default_factory=lambda: ["distractor"])
    inject_systems: list[str] = field(default_factory=lambda: list(INJECTION_SYSTEMS))
    inject_limit: int | None = None
    skip_main: bool = False
    out: str = "eval-results"
    llm: str = models.EMBEDDED_LLM
    embedder: str = models.EMBEDDED_EMBEDDER
    scorer: str | None = None
    device: str | None = None
    max_tokens: int = 256
    allowed_modules: list[str] | None = None
    progress: bool = True
    cache: bool = True
    graph_extractor: str | None = None

    def __post_init__(self) -> None:
        if self.graph_extractor is None:  # the name goes into the folder's config (provenance compares it)
            preparation = store_preparation()
            self.graph_extractor = preparation.default_extractor if preparation else ""
        check_choice("corpus", self.corpus, CORPUS_MODES)
        bad = [v for v in self.inject_variants if v not in INJECTION_VARIANTS]
        if bad:
            raise ValueError(f"inject_variants must be among {INJECTION_VARIANTS}, got {bad}.")
        if any(n < 0 for n in self.inject_levels):
            raise ValueError("inject_levels must be >= 0.")
        for name in ("limit", "main_limit", "inject_limit"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1.")
        if self.max_tokens < 1:
            raise ValueError("max_tokens must be >= 1.")


@dataclass(frozen=True)
class Condition:
    """A corpus setting: the main comparison or one injection level of one variant."""

    name: str
    corpus: str
    inject: int
    variant: str | None
    systems: tuple[System, ...]
    items: tuple[EvalItem, ...]


def conditions(config: EvalConfig, items: list[EvalItem]) -> list[Condition]:
    """The main comparison first, then each injection variant and level."""
    out = []
    if not config.skip_main:
        out.append(Condition(config.corpus, config.corpus, 0, None, tuple(parse_systems(",".join(config.systems))),
                             tuple(items[: config.main_limit])))
    inject_items = tuple(items[: config.inject_limit])
    inject_systems = tuple(parse_systems(",".join(config.inject_systems))) if config.inject_levels else ()
    if 0 in config.inject_levels:  # no injection: the same for every variant, run once
        out.append(Condition("per-question", "per-question", 0, None, inject_systems, inject_items))
    for variant in config.inject_variants if config.inject_levels else []:
        for level in sorted(set(config.inject_levels) - {0}):
            out.append(Condition(f"inject:{variant}:{level}", "per-question", level, variant, inject_systems,
                                 inject_items))
    return out


def run_order(conds: list[Condition], *, main: int) -> list[tuple[Condition, EvalItem]]:
    """(condition, question) pairs: the first `main` conditions, then the injection levels interleaved per
    question (a run stopped early leaves every level with the same questions).

    >>> a, b = EvalItem("a", "?", ["x"], []), EvalItem("b", "?", ["y"], [])
    >>> conds = [Condition(f"inject:distractor:{n}", "per-question", n, "distractor", (), (a, b)) for n in (2, 4)]
    >>> [(c.inject, item.id) for c, item in run_order(conds, main=0)]
    [(2, 'a'), (4, 'a'), (2, 'b'), (4, 'b')]
    """
    head, levels = conds[:main], conds[main:]
    order = [(c, item) for c in head for item in c.items]
    for i in range(max((len(c.items) for c in levels), default=0)):
        order.extend((c, c.items[i]) for c in levels if i < len(c.items))
    return order


def score(item: EvalItem, answer: str, evidence_titles: list[str]) -> dict[str, Any]:
    """Strict EM/F1, lenient containment, gold-passage recall and the trap answer, for one answer."""
    recall = None
    if item.gold_titles:
        recall = len(set(item.gold_titles) & set(evidence_titles)) / len(set(item.gold_titles))
    return {
        "em": exact_match(answer, item.answers),
        "f1": f1(answer, item.answers),
        "lenient": lenient_containment(answer, item.answers),
        "support_recall": recall,
        "trapped": trap_hit(answer, item.answers, item.trap_answer),
    }


def _record_key(condition: str, system: System, qid: str) -> str:
    return f"{condition}|{system.key()}|{qid}"


def run_eval(
    config: EvalConfig,
    *,
    chat_generator: Any | None = None,
    text_embedder: Any | None = None,
    document_embedder: Any | None = None,
) -> list[dict[str, Any]]:
    """Run every condition, system and question not yet in the output folder; return all records
    (`chat_generator`/`text_embedder`/`document_embedder`: instances instead of the config's specs)."""
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    items = load_items(config.data, config.format, limit=config.limit, offset=config.offset)
    conds = conditions(config, items)
    if not conds:
        raise ValueError("Nothing to run: no main comparison (skip_main) and no injection levels.")
    injected = [chat_generator, text_embedder] if chat_generator is not None and text_embedder is not None else None
    meta = provenance.metadata(config, injected)
    previous = read_records(out)
    provenance.record_run(out, meta, {r["condition"] for r in previous})

    if (text_embedder is None) != (document_embedder is None):
        raise ValueError("Pass both text_embedder and document_embedder (the same model), or neither.")
    query_embedder = text_embedder or factories.text_embedder(config.embedder, device=config.device)
    doc_embedder = document_embedder or factories.document_embedder(config.embedder, device=config.device)

    def new_runtime(generator: Any) -> Runtime:
        # the reader comes through the reply cache; auxiliary calls go to the small model beside a local reader,
        # as `cfrag ask` makes them (`Runtime(aux_llm=…)`), uncached: cheap, and their own model's
        own = chat_generator is not None or config.llm.startswith(("openai:", "hf:"))
        aux = None if own else models.EMBEDDED_SMALL_LLM
        runtime = Runtime(store=_empty_store(), chat_generator=generator, text_embedder=query_embedder,
                          document_embedder=doc_embedder, scorer=config.scorer, device=config.device,
                          allowed_modules=config.allowed_modules,
                          graph_extractor=config.graph_extractor, aux_llm=aux)
        runtime.warm_up()
        return runtime

    def new_generator() -> Any:
        return chat_generator or factories.chat_generator(config.llm, max_tokens=config.max_tokens,
                                                          device=config.device)

    model_id = None if chat_generator is not None else meta["models"].get("llm_sha256")
    cached = (CachingChatGenerator(generator=new_generator(), path=str(out / "llm_cache.jsonl"), model_id=model_id)
              if config.cache else None)
    runtimes: dict[str, Runtime] = {}

    def runtime_for(system: System) -> Runtime:
        """One runtime for every system, or in a latency run one per system (its own model and KV state)."""
        key = "" if cached is not None else system.key()
        if key not in runtimes:
            runtimes[key] = new_runtime(cached if cached is not None else new_generator())
        return runtimes[key]
    if hasattr(doc_embedder, "warm_up"):
        doc_embedder.warm_up()
    corpus = Corpus(items, lambda docs: doc_embedder.run(documents=docs)["documents"],
                    lambda text: query_embedder.run(text=text)["embedding"])

    done = {r["key"] for r in previous}
    todo = []
    for c, item in run_order(conds, main=0 if config.skip_main else 1):
        for s in c.systems:
            key = _record_key(c.name, s, item.id)
            if key not in done:
                done.add(key)
                todo.append((c, item, s))
    logger.info("{n} results to compute, {d} already in {out}", n=len(todo), d=len(done) - len(todo), out=str(out))
    pooled = corpus.pooled_store() if any(c.corpus == "pooled" for c in conds) else None
    current: tuple[str, str] | None = None
    injected: list[Any] = []
    written: dict[int, int] = {}  # graph builds already in graph_stats.jsonl, per runtime
    with open_append(out / "records.jsonl") as fh:  # a link at its name is an error, never written through
        store = None
        for cond, item, system in _progress(todo, config.progress):
            if cond.corpus == "pooled":
                store = pooled
            elif current != (cond.name, item.id):  # one store per question and condition, built once
                current = (cond.name, item.id)
                injected = corpus.inject(item, cond.inject, cond.variant) if cond.variant else []
                store = corpus.item_store(item, injected)
            runtime = runtime_for(system)
            runtime.use_store(store)
            record = _run_one(runtime, cached, cond, item, system, len(injected))
            fh.write(json.dumps(record, default=str) + "\n")
            fh.flush()
            _append_graph_stats(out, list(runtimes.values()), written)
    return read_records(out)


def _append_graph_stats(out: Path, runtimes: list[Runtime], written: dict[int, int]) -> None:
    """Append the graph builds that ended since the last call to `graph_stats.jsonl` (at once: a resumed
    run's build costs no call, so a stopped build's line is its only record)."""
    new = []
    for rt in runtimes:
        new += rt.graph_stats[written.get(id(rt), 0):]
        written[id(rt)] = len(rt.graph_stats)
    if new:
        with open_append(out / "graph_stats.jsonl") as fh:
            fh.writelines(json.dumps(stats, default=str) + "\n" for stats in new)


def _run_one(runtime: Runtime, cached: CachingChatGenerator | None, cond: Condition, item: EvalItem,
             system: System, n_injected: int) -> dict[str, Any]:
    if cached is not None:
        cached.reset_counters()
    record: dict[str, Any] = {
        "key": _record_key(cond.name, system, item.id), "condition": cond.name, "inject": cond.inject,
        "variant": cond.variant, "system": system.name, "pipeline": system.pipeline, "params": system.params,
        "qid": item.id, "question": item.question, "answers": item.answers, "qtype": item.qtype,
        "failure_mode": item.failure_mode, "trap_answer": item.trap_answer,
    }
    if cond.variant:
        record["injected"] = n_injected
    start = time.perf_counter()
    try:
        pipeline = resolve(system.pipeline)  # once: its file, YAML and family
        runtime.prepare(pipeline, system.params)  # index time (a graph for this store) is not the question's
        if cached is not None:
            cached.reset_counters()
        start = time.perf_counter()
        result = runtime.ask(pipeline, item.question, system.params)
    except Exception as exc:  # noqa: BLE001 — a failed question is a result, not the end of the run
        logger.warning("{system} failed on {qid}: {error}", system=system.name, qid=item.id, error=repr(exc))
        elapsed = time.perf_counter() - start
        record.update(answer="", error=repr(exc), seconds=elapsed, stages={}, llm={},
                      evidence=[], cache_hits=cached.hits if cached else 0,
                      seconds_equivalent=elapsed + (cached.hit_seconds if cached else 0.0),
                      timed_on=by_machine(elapsed, cached.hit_seconds_by_machine if cached else None),
                      **score(item, "", []))
        return record
    titles = [d.get("title") or "" for d in result.documents]
    kept = dict(pipeline.family.record(result.trace)) if result.trace else {}  # the family says what it keeps
    candidates = [{**c, "em": score(item, c["answer"], [])["em"]} for c in kept.pop("candidates", None) or []]
    record.update(answer=result.answer, error=None, seconds=result.seconds, stages=result.stages,
                  llm=result.llm, evidence=titles, cache_hits=cached.hits if cached else 0,
                  seconds_equivalent=result.seconds + (cached.hit_seconds if cached else 0.0),
                  timed_on=by_machine(result.seconds, cached.hit_seconds_by_machine if cached else None),
                  **kept, candidates=candidates, answer_normalized=normalize_answer(result.answer),
                  **{"gate": result.gate} if result.gate is not None else {},
                  **score(item, result.answer, titles))
    return record


def _progress(todo: list[Any], enabled: bool) -> Iterator[Any]:
    if not enabled:
        yield from todo
        return
    from tqdm import tqdm  # noqa: PLC0415 — haystack-ai depends on tqdm

    with tqdm(todo, unit="run", dynamic_ncols=True) as bar:
        for cond, item, system in bar:
            bar.set_description(f"{cond.name} {system.name}"[:40])
            yield cond, item, system


def _empty_store() -> Any:
    from haystack.document_stores.in_memory import InMemoryDocumentStore  # noqa: PLC0415

    return InMemoryDocumentStore(embedding_similarity_function="cosine")
