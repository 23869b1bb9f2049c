"""CausalGraphBuilder: CausalRAG's index step (paper 004, §4.1): passages → a graph of nodes and directed edges.

The component: its parameters, serialisation, sockets and the extraction calls; one run's planning, cache,
records and graph assembly are a `GraphBuild` (`_graph_build`)."""

from __future__ import annotations

import json
import time
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from tqdm import tqdm  # haystack-ai depends on tqdm (its document embedders' progress bars)

from haystack_cfrag.causal_rag.components._graph_build import COMPONENT, GraphBuild, Job, Planned
from haystack_cfrag.causal_rag.extractors import GraphExtractor
from haystack_cfrag.causal_rag.math.extraction import (
    DEFAULT_CHUNK_CHARS,
    DEFAULT_CHUNK_OVERLAP,
    DEFAULT_MAX_TRIPLES,
    check_chunking,
    check_max_triples,
)
from haystack_cfrag.causal_rag.math.graph import MAX_EDGES, MAX_NODES, Graph
from haystack_cfrag.causal_rag.prompts import EXTRACTION_FIELDS, EXTRACTION_PROMPT, check_template
from haystack_cfrag.common.asking import AsksChatGenerator
from haystack_cfrag.common.plumbing import InjectedParts, run_async_or_thread
from haystack_cfrag.common.protocols import ChatGenerator, DocumentEmbedder
from haystack_cfrag.common.serialization import deserialize_init_components, serialize_component
from haystack_cfrag.common.tracing import LLMCall, model_name
from haystack_cfrag.common.validation import check_bool, check_int, check_optional_seconds

DEFAULT_MAX_CHUNKS = 50
"""Chunks of one passage sent to the extractor at most (50 × 1,000 characters); the rest is not read."""
MAX_CHUNKS = 1000

_EXTRACT_CALL = LLMCall(stage="graph_extraction", component=COMPONENT)


@component
class CausalGraphBuilder(AsksChatGenerator, InjectedParts):
    """
    Builds CausalRAG's graph of a corpus: an LLM (or an `extractor`) extracts nodes and relations from each
    passage's chunks, merged into one graph (a node per name, a directed edge per (cause, relation, effect)
    citing its passages); each node becomes a Document with an embedding of its name and stable id.

    Edges live in the nodes' meta (`edges_out`, `edges_in`), so any document store holds the graph; build the
    whole corpus in one run (a node rebuilt from one batch would lose the others' edges). With `cache_dir`,
    each passage's extraction is cached atomically by its text and settings: an interrupted run resumes and an
    unchanged passage is never sent again. A chunk that fails or does not parse is counted.

    Outputs `nodes`, `documents` (the passages, marked `cfrag_graph_passage`), `stats` (counts, tokens,
    seconds, replayed calls, by machine), `costs` (each distinct passage's extraction cost, kept in the cache)
    and `degradations`.

    ### Usage example
    ```python
    from haystack import Document
    from haystack.components.generators.chat import MockChatGenerator
    from haystack_cfrag.causal_rag import CausalGraphBuilder
    from haystack_cfrag.testing.fakes import HashingDocumentEmbedder

    reply = '[{"head": "Heavy rain", "relation": "CAUSES", "tail": "Flood"}]'
    builder = CausalGraphBuilder(chat_generator=MockChatGenerator(responses=reply),
                                 document_embedder=HashingDocumentEmbedder(dimension=64))
    out = builder.run(documents=[Document(content="Heavy rain caused the flood.")])
    print([(n.content, n.meta["edges_out"]) for n in out["nodes"]])
    ```
    """

    COMPONENT = COMPONENT
    FAILURE = "{component}: the extraction call failed ({what}): {error}"
    _INJECTED = ("chat_generator", "document_embedder", "extractor")

    def __init__(
        self,
        *,
        chat_generator: ChatGenerator | None = None,
        document_embedder: DocumentEmbedder | None = None,
        extractor: GraphExtractor | None = None,
        batch_size: int = 64,
        chunk_chars: int = DEFAULT_CHUNK_CHARS,
        chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
        max_triples: int = DEFAULT_MAX_TRIPLES,
        max_chunks_per_passage: int = DEFAULT_MAX_CHUNKS,
        cache_dir: str | None = None,
        prompt_template: str | None = None,
        generation_kwargs: dict[str, Any] | None = None,
        timeout_s: float | None = None,
        raise_on_failure: bool = False,
        max_nodes: int = MAX_NODES,
        max_edges: int = MAX_EDGES,
        flat_meta: bool = False,
        grounded_only: bool = True,
        progress_bar: bool = True,
    ) -> None:
        """
        :param chat_generator: any Haystack ChatGenerator: the extractor (CausalRAG's prompt), unless
            `extractor` is given.
        :param extractor: a graph extractor (`extractors.GraphExtractor`, e.g. `SpacyGraphExtractor`) instead of
            the chat generator's recipe; its `fingerprint()` is part of the cache key.
        :param batch_size: chunks sent to `extractor` in one call, in [1, 4096].
        :param document_embedder: any Haystack document embedder; embeds the node Documents (their
            content is the node's name). None: the nodes go out without embeddings (embed them downstream).
        :param chunk_chars: characters per chunk, in [100, 20000] (official: 1000).
        :param chunk_overlap: characters consecutive chunks share, in [0, chunk_chars // 2] (official: 100).
        :param max_triples: triples kept from one chunk's reply, in [1, 500].
        :param max_chunks_per_passage: chunks of one passage extracted at most, in [1, 1000] (a degradation).
        :param cache_dir: folder of the extraction cache (created if missing); None = no cache.
        :param prompt_template: replaces the extraction prompt (`str.format`, placeholder {text}).
        :param generation_kwargs: passed to generators that accept them (e.g. {"max_tokens": 512}).
        :param timeout_s: seconds an extraction call may take before it is abandoned (None = no limit).
        :param raise_on_failure: raise when an extraction call fails instead of skipping the chunk.
        :param max_nodes: nodes the graph may hold, in [1, 200000]; more raises a ValueError.
        :param max_edges: edges the graph may hold, in [1, 1000000]; more raises a ValueError.
        :param grounded_only: keep only triples and nodes whose names occur in their passage (applied when the
            graph is put together; the cache keeps the replies).
        :param flat_meta: store `edges_out`, `edges_in` and `passage_ids` as JSON strings (scalar-meta stores).
        :param progress_bar: show a progress bar over the passages.
        """
        if chat_generator is None and extractor is None:
            raise ValueError(f"{COMPONENT}: give a 'chat_generator' or an 'extractor' (what reads the "
                             "passages).")
        if extractor is not None and not (callable(getattr(extractor, "run", None))
                                          and callable(getattr(extractor, "fingerprint", None))):
            raise ValueError(f"{COMPONENT}: 'extractor' must have run(texts=…) and fingerprint() "
                             f"(causal_rag.extractors.GraphExtractor), got a {type(extractor).__name__}.")
        check_int("batch_size", batch_size, 1, 4096)
        check_chunking(chunk_chars, chunk_overlap)
        check_max_triples(max_triples)
        check_int("max_chunks_per_passage", max_chunks_per_passage, 1, MAX_CHUNKS)
        if cache_dir is not None and (not isinstance(cache_dir, str) or not cache_dir.strip()):
            raise ValueError(f"{COMPONENT}: 'cache_dir' must be a folder path or None, got {cache_dir!r:.60}.")
        check_template(prompt_template, EXTRACTION_FIELDS, component=COMPONENT)
        check_optional_seconds("timeout_s", timeout_s)
        check_bool("raise_on_failure", raise_on_failure)
        check_int("max_nodes", max_nodes, 1, MAX_NODES)
        check_int("max_edges", max_edges, 1, MAX_EDGES)
        check_bool("flat_meta", flat_meta)
        check_bool("grounded_only", grounded_only)
        check_bool("progress_bar", progress_bar)
        self.chat_generator = chat_generator
        self.document_embedder = document_embedder
        self.extractor = extractor
        self.batch_size = batch_size
        self.chunk_chars = chunk_chars
        self.chunk_overlap = chunk_overlap
        self.max_triples = max_triples
        self.max_chunks_per_passage = max_chunks_per_passage
        self.cache_dir = cache_dir
        self.prompt_template = prompt_template
        self.generation_kwargs = dict(generation_kwargs) if generation_kwargs is not None else None
        self.timeout_s = timeout_s
        self.raise_on_failure = raise_on_failure
        self.max_nodes = max_nodes
        self.max_edges = max_edges
        self.flat_meta = flat_meta
        self.grounded_only = grounded_only
        self.progress_bar = progress_bar

    def to_dict(self) -> dict[str, Any]:
        """Serialise, including the injected generator and embedder."""
        return default_to_dict(self, chat_generator=serialize_component(self.chat_generator),
                               document_embedder=serialize_component(self.document_embedder),
                               extractor=serialize_component(self.extractor), batch_size=self.batch_size,
                               chunk_chars=self.chunk_chars, chunk_overlap=self.chunk_overlap,
                               max_triples=self.max_triples,
                               max_chunks_per_passage=self.max_chunks_per_passage, cache_dir=self.cache_dir,
                               prompt_template=self.prompt_template, generation_kwargs=self.generation_kwargs,
                               timeout_s=self.timeout_s, raise_on_failure=self.raise_on_failure,
                               max_nodes=self.max_nodes, max_edges=self.max_edges, flat_meta=self.flat_meta,
                               grounded_only=self.grounded_only, progress_bar=self.progress_bar)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CausalGraphBuilder:
        """Deserialise, including the injected generator and embedder."""
        return default_from_dict(cls, deserialize_init_components(data, cls._INJECTED))

    @component.output_types(nodes=list[Document], documents=list[Document], stats=dict[str, Any],
                            costs=list[dict[str, Any]], degradations=list[dict[str, Any]])
    def run(self, documents: list[Document]) -> dict[str, Any]:
        """
        :param documents: the passages (Documents with text content); not changed.
        :returns: `nodes`, `documents`, `stats`, `costs` and `degradations` (see the class doc).
        :raises ValueError: when the graph outgrows `max_nodes` / `max_edges`.
        :raises RuntimeError: when the document embedder fails (the nodes would be unfindable).
        """
        build = GraphBuild(self, documents)
        with self._progress(len(documents)) as bar:
            if self.extractor is not None:
                for batch in build.batches():
                    build.extracted(batch, *self._extract(batch))
                    bar.update(batch[-1][0] + 1 - bar.n)
            else:
                for job in build.jobs():
                    bar.update(job.passage - bar.n)  # the passages before this one are done
                    build.reply(job, *self.ask_result(*self._request(job)))
            bar.update(len(documents) - bar.n)
        nodes = build.node_documents()
        if self.document_embedder is not None and nodes:
            try:
                nodes = self.document_embedder.run(documents=nodes)["documents"]
            except Exception as exc:
                raise RuntimeError(f"{COMPONENT}: the document embedder failed on the node Documents: {exc}") from exc
        return build.outputs(nodes)

    @component.output_types(nodes=list[Document], documents=list[Document], stats=dict[str, Any],
                            costs=list[dict[str, Any]], degradations=list[dict[str, Any]])
    async def run_async(self, documents: list[Document]) -> dict[str, Any]:
        """Async twin of `run`, with the same sockets (calls stay sequential: one local model)."""
        build = GraphBuild(self, documents)
        with self._progress(len(documents)) as bar:
            if self.extractor is not None:
                for batch in build.batches():
                    build.extracted(batch, *(await self._extract_async(batch)))
                    bar.update(batch[-1][0] + 1 - bar.n)
            else:
                for job in build.jobs():
                    bar.update(job.passage - bar.n)
                    build.reply(job, *(await self.ask_result_async(*self._request(job))))
            bar.update(len(documents) - bar.n)
        nodes = build.node_documents()
        if self.document_embedder is not None and nodes:
            try:
                nodes = (await run_async_or_thread(self.document_embedder, documents=nodes))["documents"]
            except Exception as exc:
                raise RuntimeError(f"{COMPONENT}: the document embedder failed on the node Documents: {exc}") from exc
        return build.outputs(nodes)

    def assemble(self, documents: list[Document]) -> dict[str, Any]:
        """The graph of `documents` from the extraction cache alone (no extraction, no embedding): `run`'s
        outputs, the passages not in the cache counted in stats["not_cached"]."""
        build = GraphBuild(self, documents, cache_only=True)
        for _ in build.plan():
            pass
        return build.outputs(build.node_documents())

    def assemble_graph(self, documents: list[Document]) -> Graph:
        """The graph of `documents` from the extraction cache alone, as a `Graph` (no node Documents, no embedding):
        what `stored_graph` merges into the user's store batch by batch."""
        build = GraphBuild(self, documents, cache_only=True)
        for _ in build.plan():
            pass
        return build.graph

    def _progress(self, passages: int) -> tqdm:
        return tqdm(total=passages, desc=f"{COMPONENT}: passages", unit="passage", disable=not self.progress_bar)

    # ------------------------------------------------------------------ calls
    @property
    def template(self) -> str:
        return self.prompt_template or EXTRACTION_PROMPT

    def fingerprint(self) -> str:
        """What decides an extraction besides the text: part of every cache key."""
        if self.extractor is not None:  # the extractor's own settings and model, and the chunking
            return json.dumps(["extractor", type(self.extractor).__name__, self.extractor.fingerprint(),
                               self.chunk_chars, self.chunk_overlap, self.max_triples],
                              sort_keys=True, default=str)
        return json.dumps([self.template, self.chunk_chars, self.chunk_overlap, self.max_triples,
                           model_name(self.chat_generator) or type(self.chat_generator).__name__,
                           self.generation_kwargs or {}], sort_keys=True, default=str)

    def _request(self, job: Job) -> tuple[str, LLMCall, str]:
        """What the extraction call of one chunk asks (`ask_result`'s arguments); a failed chunk is skipped."""
        return self.template.format(text=job.text), _EXTRACT_CALL, f"passage {job.passage_id}, chunk {job.chunk}"

    def _extract(self, batch: list[Planned]) -> tuple[dict[str, Any] | None, Exception | None, float]:
        start = time.perf_counter()
        try:
            out = self.extractor.run(texts=[text for p in batch for text in p[3]])  # type: ignore[union-attr]
            return out, None, time.perf_counter() - start
        except Exception as exc:  # noqa: BLE001  (the batch's passages go out as text, see class doc)
            return self._batch_failed(exc), exc, time.perf_counter() - start

    async def _extract_async(self, batch: list[Planned]
                             ) -> tuple[dict[str, Any] | None, Exception | None, float]:
        start = time.perf_counter()
        try:
            out = await run_async_or_thread(self.extractor, texts=[text for p in batch for text in p[3]])
            return out, None, time.perf_counter() - start
        except Exception as exc:  # noqa: BLE001
            return self._batch_failed(exc), exc, time.perf_counter() - start

    def _batch_failed(self, exc: Exception) -> None:
        if self.raise_on_failure:
            raise RuntimeError(f"{COMPONENT}: the graph extractor failed: {exc}") from exc
