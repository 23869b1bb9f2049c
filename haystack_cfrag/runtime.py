"""Running a YAML pipeline on a store with chosen models: what `cfrag ask/compare` (and the evaluation) use.

A `Runtime` holds the model specs and the store. `pipeline(path, params)` builds any pipeline
file with its chat generators and text embedders replaced by the runtime's models (each model
is loaded once and shared by every pipeline of the runtime) and its retrievers pointed at the
runtime's store; `ask(path, question)` runs it and returns the answer, the trace, per-stage
times and LLM usage.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from haystack import Pipeline, logging
from haystack.document_stores.in_memory import InMemoryDocumentStore

from haystack_cfrag import models
from haystack_cfrag.adapters import factories
from haystack_cfrag.cascade.math import GATE_KEY
from haystack_cfrag.registry import FAMILIES, Resolved, preparation_of, resolve
from haystack_cfrag.common import interrupts
from haystack_cfrag.common.validation import check_bool
from haystack_cfrag.stores.keyword import keyword_retriever
from haystack_cfrag.pipelines.loading import (TRUSTED_PREFIXES, component_key, pipeline_from_dict, share_injected_components,
                                    share_node_models, with_overrides)
from haystack_cfrag.runtime_keep import keep, keeps
from haystack_cfrag.runtime_parts import RuntimeParts
from haystack_cfrag.common.timing import count_llm_usage, timed_on, timed_stages



@dataclass
class Answer:
    """The result of one question through one pipeline."""

    pipeline: str
    answer: str
    trace: dict[str, Any] | None
    documents: list[dict[str, Any]]
    seconds: float
    stages: dict[str, float]
    llm: dict[str, Any]
    outputs: dict[str, Any] = field(default_factory=dict, repr=False)  # the pipeline's raw outputs
    gate: dict[str, Any] | None = None
    """A cascade's escalation gate: escalated or not, because …, its signals (None: not a cascade)."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-serialisable."""
        return {
            "pipeline": self.pipeline,
            "answer": self.answer,
            **({"gate": self.gate} if self.gate is not None else {}),
            "seconds": round(self.seconds, 3),
            "stages": {k: round(v, 3) for k, v in self.stages.items()},
            "llm": self.llm,
            "documents": self.documents,
            "trace": self.trace,
        }


logger = logging.getLogger(__name__)

MAX_BUILT = 16
"""Built pipelines a runtime keeps (per file and build-time parameters); the least recently used goes first."""
AUTO = "auto"
"""`Runtime(aux_llm=AUTO)`: the small embedded model beside a local reader, else the reader (see `Runtime`)."""
AUX_N_CTX = 1024
"""The auxiliary model's context: its prompts are a question and a few lines (a small KV cache)."""

GRAPH_CACHE = "auto"
"""CausalRAG's extraction cache (per passage hash, prompt, chunking and model): "auto" = `models.graph_cache_dir()`."""


class Runtime:
    """Models and a store, shared by every pipeline built from it.

    `ask` is the one way a question is run — by the CLI, the evaluation and the service. It runs
    one question at a time (a lock) when the models are in-process (llama.cpp, local
    transformers are not thread-safe) or when it times the stages (the tracer is process-wide);
    the service's questions against a server or the mock run concurrently. LLM usage is counted
    per question (`timing.count_llm_usage`).
    """

    def __init__(
        self,
        *,
        store: Any,
        retriever: Any | None = None,
        llm: str = models.EMBEDDED_LLM,
        embedder: str = models.EMBEDDED_EMBEDDER,
        scorer: str | None = None,
        device: str | None = None,
        max_tokens: int = 256,
        logprobs: bool = False,
        chat_generator: Any | None = None,
        text_embedder: Any | None = None,
        allowed_modules: list[str] | None = None,
        graph_cache: str | Path | None = GRAPH_CACHE,
        graph_extractor: str | None = None,
        store_spec: str | None = None,
        keep_graph: bool = False,
        aux_llm: str | None = AUTO,
    ) -> None:
        """
        :param store: the store every pipeline reads: in memory, FAISS, pgvector, Qdrant (see
            `haystack_cfrag.stores`), or any store with an embedding retriever.
        :param retriever: the embedding retriever for `store`; default: the matching one from
            `haystack_cfrag.stores.embedding_retriever`. It replaces every embedding retriever
            of the pipeline files (keeping their `top_k`).
        :param llm, embedder, scorer: model specs (see `haystack_cfrag.models`).
        :param logprobs: ask the LLM for token log-probabilities (φ_conf); slower with llama.cpp.
        :param chat_generator, text_embedder: ready instances instead of specs (tests, custom models).
        :param allowed_modules: extra trusted modules for loading pipeline files (your own components).
        :param graph_cache: where CausalRAG's extractions are cached per passage hash (None: not cached);
            a pipeline with a graph retriever gets the graph of the runtime's store, built once per store.
        :param graph_extractor: what extracts that graph (`causal_rag.extractors`): "llm" (the reader, CausalRAG's
            prompt), "llm-json" (the same, schema-constrained JSON) or "spacy" (no generation); None: the
            family's default (its `StorePreparation.default_extractor`).
        :param store_spec: the spec `store` was opened from (`haystack_cfrag.stores`): a graph `cfrag index
            --graph` stored beside it is opened, not built (`causal_rag.stored_graph`); None: built in memory.
        :param keep_graph: when no graph is stored beside `store_spec`, write the one built there (what `cfrag index
            --graph` writes, in a child process: `runtime_keep`) and open it, instead of holding it in memory: for a
            store this package owns (the demo's, in the cache), so that later runs open it. A parse-only extractor
            only; a write that fails is a logged warning and an in-memory build.
        :param aux_llm: the model of a file's auxiliary calls (a generator naming `models.EMBEDDED_SMALL_LLM`: CF-RAG's
            counterfactual questions), loaded when a pipeline first needs it; None: the reader makes them too.
            Default: the small embedded model beside a local llama.cpp reader, the reader itself beside a server's
            (`openai:`), a transformers model or a `chat_generator` handed in.
        """
        self.allowed_modules = allowed_modules
        self.store = store
        self.retriever = retriever if retriever is not None else _default_retriever(store)
        self.generator = chat_generator or factories.chat_generator(
            llm, max_tokens=max_tokens, logprobs=logprobs, device=device)
        self.text_embedder = text_embedder or factories.text_embedder(embedder, device=device)
        self.scorer = factories.scorer(scorer, device=device) if scorer else None
        # llama.cpp and local transformers models are not thread-safe: drafts run in turn
        self.sequential = chat_generator is None and not llm.startswith("openai:")
        local = chat_generator is None and not llm.startswith(("openai:", "hf:"))
        self.aux_llm = (models.EMBEDDED_SMALL_LLM if local else None) if aux_llm == AUTO else aux_llm
        self._aux: Any | None = None  # built on first need (`auxiliary`)
        self._aux_lock = threading.Lock()
        self.pool: dict[str, Any] = {
            component_key(c): c for c in (self.generator, self.text_embedder, self.scorer) if c is not None
        }
        self._warm = False
        self._models: dict[str, Any] = {}  # configuration -> the holder whose loaded model every pipeline borrows
        self._lock = threading.Lock()
        self._build_lock = threading.Lock()
        self._built: OrderedDict[tuple[str, str], Pipeline] = OrderedDict()
        self.graph_cache = models.graph_cache_dir() if graph_cache == GRAPH_CACHE else graph_cache
        self.graph_extractor = graph_extractor  # checked by the family's preparation (an unknown name: ValueError)
        self.store_spec = store_spec
        self._spec_store = store  # the store `store_spec` names (the evaluation's per-question stores are others)
        check_bool("keep_graph", keep_graph)
        self.keep_graph = keep_graph
        self._prepared: dict[int, tuple[Any, Any, Any]] = {}  # id(preparation) -> (it, the store, its handle)
        self._keyword: tuple[Any, Any] | None = None  # (the store, what BM25 reads for it)
        self.graph_stats: list[dict[str, Any]] = []  # one entry per index-time build (CausalRAG's graph: its cost)

    def auxiliary(self) -> Any:
        """The generator of a file's auxiliary calls (`aux_llm`), one instance for every pipeline (loaded on first run)."""
        with self._aux_lock:
            if self._aux is None:
                aux = factories.chat_generator(self.aux_llm, n_ctx=AUX_N_CTX)
                # loaded by its first call, not at warm-up: a cascade's escalation may never come
                self._aux = aux.defer_load() if callable(getattr(aux, "defer_load", None)) else aux
            return self._aux

    def forget_prompts(self) -> None:
        """Empty the loaded llama.cpp models' prompt caches: the next call evaluates its whole prompt (a timing of
        one pipeline that starts where another left the reader would credit it with the other's prompt)."""
        holders = [self.generator, self._aux, *self._models.values()]
        for llm in {id(m): m for h in holders if (m := getattr(h, "_model", None)) is not None}.values():
            if callable(getattr(llm, "reset", None)):
                llm.reset()

    def warm_up(self) -> None:
        """Load the models once."""
        if not self._warm:
            interrupts.warm_up(*self.pool.values())  # a Ctrl-C during the load takes effect after it
            for comp in self.pool.values():  # the pipelines' reader nodes borrow the model loaded here
                share_node_models(comp, self._models)
            self._warm = True

    def pipeline(self, path: str | Path | Resolved, params: dict[str, Any] | None = None) -> Pipeline:
        """Build a pipeline file around this runtime's models and store (handed in by `runtime_parts.RuntimeParts`)."""
        resolved = resolve(path)
        parts = RuntimeParts(generator=self.generator, text_embedder=self.text_embedder, scorer=self.scorer,
                             retriever=self.retriever, keyword=keyword_retriever(self.store), store=self.store,
                             keyword_store=self.keyword_store,
                             allowed=TRUSTED_PREFIXES + tuple(self.allowed_modules or ()),
                             auxiliary=self.auxiliary if self.aux_llm else None)
        overrides: dict[str, Any] = {}
        table = resolved.parameters
        for key, value in (params or {}).items():  # a parameter applies where the file has its component
            target = table.get(key)
            if target is not None and value is not None and target.component in resolved.data["components"]:
                overrides[f"{target.component}.{target.target}"] = value
        # a parameter that names a part's model (`refiner_model`: "refiner.chat_generator.model") before the
        # plan, which gives that part its role (the reader or the auxiliary model); the others after it
        inside = {k: v for k, v in overrides.items() if k.count(".") > 1}
        data = parts.plan(with_overrides(resolved.data, inside))  # a copy: the resolved YAML is never changed
        overrides = {k: v for k, v in overrides.items() if k not in inside}
        if self.sequential:  # one call at a time wherever a component would write drafts side by side
            for name, comp in data["components"].items():
                if "max_workers" in comp.get("init_parameters", {}):
                    overrides[f"{name}.max_workers"] = 1
        pipe = pipeline_from_dict(data, overrides=overrides, share_models=False, allowed_modules=self.allowed_modules,
                                  callbacks=parts.callbacks())
        # a pipeline *node* (standard_rag's generator and embedder) is its own instance of the runtime's
        # configuration (Haystack wires sockets per instance; `built` lends it the loaded model). An
        # injected part configured as one of the pipeline's nodes is that node (loading.py).
        share_injected_components(pipe, self.pool)
        preparation = resolved.preparation()
        if preparation is not None:  # the family's index-time parts, built when a component of the file needs them
            preparation.attach(pipe, lambda: self.prepared(preparation))
        return pipe

    def use_store(self, store: Any) -> None:
        """Read `store` from now on (the evaluation's per-question stores): the pipelines built so far are
        dropped and rebuild around it on their next use (deserialisation only: the models stay loaded);
        what they need over it (CausalRAG's graph) is prepared now, as `prepare_stores` does."""
        if store is self.store:
            return
        self.store = store
        with self._build_lock:
            files = list(dict.fromkeys(file for file, _ in self._built))
            self._built.clear()
        self.prepare_stores([Path(file) for file in files])

    def prepared(self, preparation: Any) -> Any:
        """What a family's `StorePreparation` built over the current store (CausalRAG's graph), built once per store."""
        held = self._prepared.get(id(preparation))
        if held is None or held[1] is not self.store:  # the store itself, not its id: ids are reused
            handle = self._stored(preparation)
            if handle is None:
                passages = [d for d in self.store.filter_documents() if d.content]
                extractor = self.graph_extractor or preparation.default_extractor
                logger.warning("Building {what} over {n} passages with the '{extractor}' extractor: passages not yet "
                               "in the cache are extracted ({cache})", what=preparation.what, n=len(passages),
                               extractor=extractor, cache=self.graph_cache or "no cache")
                if extractor not in preparation.parse_only:  # an LLM extracts: the reader loads first
                    self.warm_up()
                handle = keep(self, preparation, passages, extractor)
            if handle is None:
                handle, stats = preparation.build(passages, chat_generator=self.generator,
                                                  text_embedder=self.text_embedder, cache_dir=self.graph_cache,
                                                  graph_extractor=extractor)
                self.graph_stats.append({**stats, "built_on": timed_on()})
            if held is not None:  # one build per preparation at a time: the evaluation moves from store to store
                preparation.release(held[2])
            self._prepared[id(preparation)] = (preparation, self.store, handle)
        return self._prepared[id(preparation)][2]

    def prepare_stores(self, paths: list[str | Path | Resolved]) -> None:
        """Build (or open) what these pipelines need over the store (CausalRAG's graph) now, before `warm_up`
        loads the reader: a parse-only extractor's graph is then built with the embedder alone, and its peak
        (spaCy, the node vectors: about 0.4 GB on the demo corpus) never adds to the reader's 1.4 GB."""
        built = False
        for path in paths:
            resolved = resolve(path)
            preparation = resolved.preparation()
            if preparation is not None and preparation.needed_by(resolved.data):  # grounded_rag_lite: no graph
                self.prepared(preparation)
                built = True
        if built:
            _release_freed_memory()

    def _stored(self, preparation: Any) -> Any | None:
        """What `cfrag index --graph` stored beside the runtime's store for `preparation`, opened; None: none stored."""
        if preparation.load is None or self.store_spec is None or self.store is not self._spec_store:
            return None
        if self.keep_graph and not keeps(self, preparation):  # the demo keeps its default extractor's graph only
            return None
        start = time.perf_counter()
        handle = preparation.load(self.store_spec)
        if handle is not None:
            logger.info("Opened the stored {what} in {s:.2f} s", what=preparation.what, s=time.perf_counter() - start)
            self.graph_stats.append({"stored": True, "seconds": round(time.perf_counter() - start, 3),
                                     "built_on": timed_on()})
        return handle

    def graph_store(self) -> Any:
        """The index-time parts of the current store of the first family that declares some (CausalRAG's graph)."""
        preparation = next(p for f in FAMILIES.values() if (p := preparation_of(f)) is not None)
        return self.prepared(preparation)

    def keyword_store(self) -> Any:
        """The store BM25 in memory reads for the current store (itself, or a copy once per store: `stores.keyword`)."""
        if self._keyword is None or self._keyword[0] is not self.store:
            from haystack_cfrag.stores.keyword import keyword_store  # noqa: PLC0415

            self._keyword = (self.store, keyword_store(self.store))
        return self._keyword[1]

    def ask(
        self,
        path: str | Path | Resolved,
        question: str,
        params: dict[str, Any] | None = None,
        *,
        progress: Callable[[str], None] | None = None,
        timed: bool = True,
    ) -> Answer:
        """Run one question through a pipeline (a name, a file, or one `registry.resolve` gave); time each
        stage and count LLM usage.

        :param params: parameters of the pipeline's table (`registry.resolve(path).parameters`, checked by
            the caller). Those marked `per_request` are passed as run-time inputs; the others build (once)
            a pipeline with them as init parameters.
        :param progress: told each stage and LLM call as it starts (e.g. `haystack_cfrag.cli.progress.StatusLine`).
        :param timed: time the stages with a process-wide tracer (`stages`); the service turns it
            off, so that concurrent requests run concurrently and a user's own tracer stays in place.
        """
        resolved = resolve(path)
        table = resolved.parameters
        pipe = self.prepare(resolved, params)
        data = resolved.run_data(query=question)
        components = {name for name, _ in pipe.walk()}
        for key, value in (params or {}).items():
            target = table.get(key)
            if target is not None and target.per_request and value is not None and target.component in components:
                data.setdefault(target.component, {})[target.target] = value
        generators = [c for _, n in pipe.walk() for c in _generators(n)]
        exclusive = self._lock if self.sequential or timed else contextlib.nullcontext()
        with exclusive:
            start = time.perf_counter()
            with (timed_stages(progress) if timed else contextlib.nullcontext()) as timer, \
                    count_llm_usage(*generators) as usage:
                out = pipe.run(data)
            seconds = time.perf_counter() - start
        kept = declared(out, resolved.outputs)
        gate = gate_reading(kept, resolved.outputs)
        answer, trace, docs = read_outputs(kept, by_stage=resolved.family.by_stage)
        return Answer(
            pipeline=resolved.name,
            answer=answer,
            trace=trace,
            documents=docs,
            seconds=seconds,
            stages=dict(timer.seconds) if timer is not None else {},
            llm=usage.as_dict(),
            outputs=out,
            gate=gate,
        )

    def prepare(self, path: str | Path | Resolved, params: dict[str, Any] | None = None) -> Pipeline:
        """The pipeline `ask(path, …, params)` runs, built now with its store's index-time parts (CausalRAG's graph).

        The evaluation calls it before it starts counting a question's cost, so that a graph built
        (or replayed from the reply cache) for the store is not charged to its first question.
        """
        resolved = resolve(path)
        table = resolved.parameters
        return self.built(resolved, {k: v for k, v in (params or {}).items()
                                     if k in table and not table[k].per_request})

    def built(self, path: str | Path | Resolved, params: dict[str, Any] | None = None) -> Pipeline:
        """The warmed pipeline `ask` runs for a file and build-time parameters, built the first time.

        The runtime keeps the last `MAX_BUILT` of them (a served request may set a build-time
        parameter: each value builds once, and the least recently used build goes).
        """
        resolved = resolve(path)
        key = (str(resolved.path.resolve()), repr(sorted((params or {}).items())))
        with self._build_lock:
            if key not in self._built:
                self.warm_up()
                pipe = self.pipeline(resolved, params)
                share_node_models(pipe, self._models)  # every reader node reads with the one model (one KV cache)
                pipe.warm_up()
                self._built[key] = pipe
                while len(self._built) > MAX_BUILT:
                    self._built.popitem(last=False)
            self._built.move_to_end(key)
            return self._built[key]


def _release_freed_memory() -> None:
    """Collect, then hand the C heap's free pages back to the system (glibc `malloc_trim`), so that what a
    graph build freed is not still resident when the reader's 1.4 GB load on top of it (a no-op elsewhere)."""
    import ctypes  # noqa: PLC0415
    import gc  # noqa: PLC0415

    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def _default_retriever(store: Any) -> Any | None:
    """None for an in-memory store (the pipeline files' own retriever reads it), else the matching one."""
    if isinstance(store, InMemoryDocumentStore):
        return None
    from haystack_cfrag.stores import embedding_retriever  # noqa: PLC0415

    return embedding_retriever(store)


def _is_generator(comp: Any) -> bool:
    outputs = getattr(comp, "__haystack_output__", None)
    return outputs is not None and "replies" in outputs._sockets_dict


def _generators(comp: Any) -> list[Any]:
    """The component if it is a generator, and the generators injected into it (its `_INJECTED` parts)."""
    found = [comp] if _is_generator(comp) else []
    injected = (getattr(comp, attr, None) for attr in getattr(comp, "_INJECTED", ()))
    return found + [inner for inner in injected if inner is not None and _is_generator(inner)]


def declared(out: dict[str, Any], outputs: dict[str, str]) -> dict[str, Any]:
    """The part of a run's raw outputs that the file declares (all of it when it declares none).

    A leaf socket the file does not declare (CER's selector's draft `answer`) is never read as the answer.

    >>> declared({"a": {"answer": "x", "trace": {}}, "b": {"answer": "y"}}, {"answer": "b.answer"})
    {'b': {'answer': 'y'}}
    """
    if not outputs:
        return out
    kept: dict[str, Any] = {}
    for target in outputs.values():
        comp, socket = target.split(".", 1)
        if isinstance(out.get(comp), dict) and socket in out[comp]:
            kept.setdefault(comp, {})[socket] = out[comp][socket]
    return kept or out


def gate_reading(kept: dict[str, Any], outputs: dict[str, str]) -> dict[str, Any] | None:
    """A cascade's gate trace (the file's `gate` output), taken out of `kept` so that the method's trace reads alone.

    >>> kept = {"gate": {"trace": {"escalated": False}}, "builder": {"answers": []}}
    >>> gate_reading(kept, {"gate": "gate.trace"}), kept
    ({'escalated': False}, {'builder': {'answers': []}})
    """
    target = outputs.get(GATE_KEY)
    if not target:
        return None
    comp, socket = target.split(".", 1)
    sockets = kept.get(comp)
    if not isinstance(sockets, dict) or socket not in sockets:
        return None
    reading = sockets.pop(socket)
    if not sockets:
        del kept[comp]
    return reading if isinstance(reading, dict) else None


def read_outputs(
    out: dict[str, Any], *, by_stage: bool = False
) -> tuple[str, dict[str, Any] | None, list[dict[str, Any]]]:
    """(answer, trace, evidence) of a pipeline run, read from its output sockets, whatever the nodes are named.

    A component that outputs `answer` (a string) gives the answer, its `trace` and the documents of
    the first of its `answers`; otherwise the first `answers` list of `GeneratedAnswer`s gives them
    (standard RAG's `AnswerBuilder`), and the trace is the one `trace` a component outputs (CER's
    selector), or {component: trace} when several do (CDF-RAG's refiner and checkers) or when
    `by_stage` (a family whose trace view reads stages by name, even where one stage ran). No
    answer socket: an empty answer.

    >>> from haystack.dataclasses import GeneratedAnswer
    >>> read_outputs({"builder": {"answers": [GeneratedAnswer(data=" Bale ", query="q", documents=[])]}})
    ('Bale', None, [])
    >>> out = {"check": {"trace": {"decision": "keep"}},
    ...        "builder": {"answers": [GeneratedAnswer(data="Bale", query="q", documents=[])]}}
    >>> read_outputs(out)[1], read_outputs(out, by_stage=True)[1]
    ({'decision': 'keep'}, {'check': {'decision': 'keep'}})
    """
    for sockets in out.values():
        if isinstance(sockets, dict) and isinstance(sockets.get("answer"), str):
            best = (sockets.get("answers") or [None])[0]
            docs = getattr(best, "documents", None) or []
            return sockets["answer"], sockets.get("trace"), [_doc_summary(d) for d in docs]
    for sockets in out.values():
        answers = sockets.get("answers") if isinstance(sockets, dict) else None
        if answers and hasattr(answers[0], "data"):
            traces = {c: s["trace"] for c, s in out.items() if isinstance(s, dict) and isinstance(s.get("trace"), dict)}
            trace = next(iter(traces.values())) if len(traces) == 1 and not by_stage else (traces or None)
            docs = [_doc_summary(d) for d in answers[0].documents or []]
            return (answers[0].data or "").strip(), trace, docs
    return "", None, []


def _doc_summary(doc: Any) -> dict[str, Any]:
    return {"id": doc.id, "title": doc.meta.get("title"), "score": doc.score}
