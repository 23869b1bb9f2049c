"""`Runtime`: runs a question through any pipeline file, built around one set of models and one store.

    >>> from haystack import Document
    >>> from haystack.document_stores.in_memory import InMemoryDocumentStore
    >>> from haystack_cfrag.testing import MockChatGenerator
    >>> from haystack_cfrag.testing.fakes import HashingDocumentEmbedder, HashingTextEmbedder
    >>> store = InMemoryDocumentStore()
    >>> passages = [Document(content="Heath Ledger played the Joker in The Dark Knight.")]
    >>> _ = store.write_documents(HashingDocumentEmbedder().run(passages)["documents"])
    >>> rt = Runtime(store=store, chat_generator=MockChatGenerator(), text_embedder=HashingTextEmbedder())
    >>> answer = rt.ask("standard_rag", "Who played the Joker?")
    >>> answer.pipeline, answer.llm["calls"], answer.documents[0]["score"] is not None
    ('standard_rag', 1, True)
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from haystack import Pipeline

from haystack_cfrag import models
from haystack_cfrag.common.timing import count_llm_usage, timed_stages
from haystack_cfrag.pipelines.loading import (
    TRUSTED_PREFIXES,
    pipeline_from_dict,
    share_injected_components,
    share_node_models,
    with_overrides,
)
from haystack_cfrag.registry import Resolved, resolve
from haystack_cfrag.runtime.model_parts import AUTO, ModelParts
from haystack_cfrag.runtime.outputs import Answer, declared, gate_reading, read_outputs
from haystack_cfrag.runtime.parts import RuntimeParts
from haystack_cfrag.runtime.store_parts import GRAPH_CACHE, StoreParts
from haystack_cfrag.stores import StoreSpec

MAX_BUILT = 16
"""Built pipelines a runtime keeps (per file and build-time parameters); the least recently used goes first."""


class Runtime:
    """Models and a store, shared by every pipeline built from it (`models`: `ModelParts`, `stores`: `StoreParts`).

    `ask` is the one way a question is run; one at a time with in-process models or timed stages, else
    concurrently. LLM usage is counted per question."""

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
        document_embedder: Any | None = None,
        allowed_modules: list[str] | None = None,
        graph_cache: str | Path | None = GRAPH_CACHE,
        graph_extractor: str | None = None,
        store_spec: str | StoreSpec | None = None,
        keep_graph: bool = False,
        aux_llm: str | None = AUTO,
        prefix_states: int | None = None,
    ) -> None:
        """
        :param store: the store every pipeline reads (`haystack_cfrag.stores`, or any with an embedding retriever).
        :param retriever: the embedding retriever for `store` (default: its kind's); it replaces every embedding
            retriever of the pipeline files, keeping their `top_k`.
        :param llm, embedder, scorer: model specs (see `haystack_cfrag.models`).
        :param logprobs: ask the LLM for token log-probabilities (φ_conf); slower with llama.cpp.
        :param chat_generator, text_embedder: ready instances instead of specs (tests, custom models).
        :param document_embedder: the text embedder's model for documents (graph nodes in batches); default: built
            from `embedder` when `text_embedder` is.
        :param allowed_modules: extra trusted modules for loading pipeline files (your own components).
        :param graph_cache: where CausalRAG's extractions are cached per passage hash (None: not cached).
        :param graph_extractor: "llm", "llm-json" or "spacy" (None: the family's default).
        :param store_spec: the spec `store` was opened from (a string is parsed once, here): a graph stored beside
            it is opened, not built.
        :param keep_graph: write a parse-only graph built for a store this package owns beside it (in a child
            process) and open it, instead of holding it in memory.
        :param aux_llm: the model of a file's `auxiliary_model` calls, loaded on first call (None: the reader).
        :param prefix_states: the KV states of earlier prompts a llama.cpp reader keeps for later ones (None: its
            default, `adapters.llama_cpp_states.DEFAULT_PREFIX_STATES`; 0 for a process that asks one question).
        """
        self.allowed_modules = allowed_modules
        self.models = ModelParts(llm=llm, embedder=embedder, scorer=scorer, device=device, max_tokens=max_tokens,
                                 logprobs=logprobs, chat_generator=chat_generator, text_embedder=text_embedder,
                                 document_embedder=document_embedder, aux_llm=aux_llm, prefix_states=prefix_states)
        self.stores = StoreParts(store, models=self.models, retriever=retriever, graph_cache=graph_cache,
                                 graph_extractor=graph_extractor, store_spec=store_spec, keep_graph=keep_graph)
        self._lock = threading.Lock()
        self._build_lock = threading.Lock()
        self._built: OrderedDict[tuple[str, str], Pipeline] = OrderedDict()

    @property
    def store(self) -> Any:
        """The store the pipelines read now."""
        return self.stores.store

    @property
    def generator(self) -> Any:
        """The reader."""
        return self.models.generator

    @property
    def text_embedder(self) -> Any:
        """The query embedder."""
        return self.models.text_embedder

    @property
    def graph_stats(self) -> list[dict[str, Any]]:
        """One entry per index-time build or opening over a store (CausalRAG's graph: its cost)."""
        return self.stores.graph_stats

    def warm_up(self) -> None:
        """Load the models once."""
        self.models.warm_up()

    def pipeline(self, path: str | Path | Resolved, params: dict[str, Any] | None = None) -> Pipeline:
        """Build a pipeline file around this runtime's models and store (handed in by `parts.RuntimeParts`)."""
        resolved = resolve(path)
        parts = RuntimeParts(generator=self.models.generator, text_embedder=self.models.text_embedder,
                             scorer=self.models.scorer, retriever=self.stores.retriever,
                             keyword=self.stores.keyword_retriever(), store=self.stores.store,
                             keyword_store=self.stores.keyword_store,
                             allowed=TRUSTED_PREFIXES + tuple(self.allowed_modules or ()),
                             auxiliary=self.models.auxiliary if self.models.aux_llm else None)
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
        if self.models.sequential:  # one call at a time wherever a component would write drafts side by side
            for name, comp in data["components"].items():
                if "max_workers" in comp.get("init_parameters", {}):
                    overrides[f"{name}.max_workers"] = 1
        pipe = pipeline_from_dict(data, overrides=overrides, share_models=False, allowed_modules=self.allowed_modules,
                                  callbacks=parts.callbacks())
        # a pipeline *node* (standard_rag's generator and embedder) is its own instance of the runtime's
        # configuration (Haystack wires sockets per instance; `built` lends it the loaded model). An
        # injected part configured as one of the pipeline's nodes is that node (pipelines/loading.py).
        share_injected_components(pipe, self.models.pool)
        preparation = resolved.preparation()
        if preparation is not None:  # the family's index-time parts, built when a component of the file needs them
            preparation.attach(pipe, lambda: self.stores.prepared(preparation))
        return pipe

    def use_store(self, store: Any) -> None:
        """Read `store` from now on: the pipelines built so far rebuild around it on next use (models stay loaded)
        and what they need over it is prepared now."""
        if store is self.stores.store:
            return
        self.stores.store = store
        with self._build_lock:
            files = list(dict.fromkeys(file for file, _ in self._built))
            self._built.clear()
        self.stores.prepare([Path(file) for file in files])

    def prepare_stores(self, paths: list[str | Path | Resolved]) -> None:
        """Build (or open) what these pipelines need over the store now, before `warm_up` loads the reader
        (`StoreParts.prepare`)."""
        self.stores.prepare(paths)

    def ask(
        self,
        path: str | Path | Resolved,
        question: str,
        params: dict[str, Any] | None = None,
        *,
        progress: Callable[[str], None] | None = None,
        timed: bool = True,
    ) -> Answer:
        """Run one question through a pipeline (a name, a file, or a `registry.resolve` result); time each stage
        and count LLM usage.

        :param params: checked parameters of the pipeline's table (`per_request` ones as run-time inputs, the
            others build a pipeline once).
        :param progress: told each stage and LLM call as it starts.
        :param timed: time the stages with a process-wide tracer (the service turns it off).
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
        generators = [c for _, n in pipe.walk() for c in generators_of(n)]
        exclusive = self._lock if self.models.sequential or timed else contextlib.nullcontext()
        with exclusive:
            start = time.perf_counter()
            with (timed_stages(progress) if timed else contextlib.nullcontext()) as timer, \
                    count_llm_usage(*generators) as usage:
                out = pipe.run(data)
            seconds = time.perf_counter() - start
        kept = declared(out, resolved.outputs)
        gate = gate_reading(kept, resolved.outputs)
        answer, trace, docs = read_outputs(kept, by_stage=resolved.family.by_stage)
        return Answer(pipeline=resolved.name, answer=answer, trace=trace, documents=docs, seconds=seconds,
                      stages=dict(timer.seconds) if timer is not None else {}, llm=usage.as_dict(), outputs=out,
                      gate=gate)

    def prepare(self, path: str | Path | Resolved, params: dict[str, Any] | None = None) -> Pipeline:
        """The pipeline `ask(path, …, params)` runs, built now with its store's index-time parts (so a graph's
        cost is not charged to the first question)."""
        resolved = resolve(path)
        table = resolved.parameters
        return self.built(resolved, {k: v for k, v in (params or {}).items()
                                     if k in table and not table[k].per_request})

    def built(self, path: str | Path | Resolved, params: dict[str, Any] | None = None) -> Pipeline:
        """The warmed pipeline `ask` runs for a file and build-time parameters, built the first time (the last
        `MAX_BUILT` kept)."""
        resolved = resolve(path)
        key = (str(resolved.path.resolve()), repr(sorted((params or {}).items())))
        with self._build_lock:
            if key not in self._built:
                self.models.warm_up()
                pipe = self.pipeline(resolved, params)
                share_node_models(pipe, self.models.owners)  # every reader node reads with the one model (one KV cache)
                pipe.warm_up()
                self._built[key] = pipe
                while len(self._built) > MAX_BUILT:
                    self._built.popitem(last=False)
            self._built.move_to_end(key)
            return self._built[key]


def _is_generator(comp: Any) -> bool:
    outputs = getattr(comp, "__haystack_output__", None)
    return outputs is not None and "replies" in outputs._sockets_dict


def generators_of(comp: Any) -> list[Any]:
    """The component if it is a generator, and the generators injected into it (its `_INJECTED` parts)."""
    found = [comp] if _is_generator(comp) else []
    injected = (getattr(comp, attr, None) for attr in getattr(comp, "_INJECTED", ()))
    return found + [inner for inner in injected if inner is not None and _is_generator(inner)]


__all__ = ["MAX_BUILT", "Runtime", "generators_of"]
