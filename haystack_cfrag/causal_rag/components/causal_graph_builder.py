"""CausalGraphBuilder: CausalRAG's index step (paper 004, §4.1): passages → a graph of nodes and directed edges."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging
from tqdm import tqdm  # haystack-ai depends on tqdm (its document embedders' progress bars)

from haystack_cfrag.causal_rag.components._extraction_cache import CacheCorruptError, ExtractionCache
from haystack_cfrag.causal_rag.extractors import GraphExtractor
from haystack_cfrag.causal_rag.math.extraction import (
    DEFAULT_CHUNK_CHARS,
    DEFAULT_CHUNK_OVERLAP,
    DEFAULT_MAX_TRIPLES,
    Extraction,
    cache_key,
    grounded,
    grounded_triples,
    check_chunking,
    check_max_triples,
    chunk_text,
    parse_extraction,
    passage_hash,
)
from haystack_cfrag.causal_rag.math.graph import MAX_EDGES, MAX_NODES, Graph
from haystack_cfrag.causal_rag.math.names import NODE_FLAG, node_document_id
from haystack_cfrag.causal_rag.prompts import EXTRACTION_FIELDS, EXTRACTION_PROMPT, check_template
from haystack_cfrag.common.asking import AsksChatGenerator
from haystack_cfrag.common.plumbing import (
    InjectedParts,
    degradation,
    run_async_or_thread,
    with_meta,
)
from haystack_cfrag.common.protocols import ChatGenerator, DocumentEmbedder
from haystack_cfrag.common.serialization import deserialize_init_components, serialize_component
from haystack_cfrag.common.tracing import LLMCall, model_name, token_counts
from haystack_cfrag.common.validation import check_bool, check_int, check_optional_seconds
from haystack_cfrag.timing import by_machine, replayed_call, timed_on

COMPONENT = "CausalGraphBuilder"
PASSAGE_FLAG = "cfrag_graph_passage"
"""The passages the builder passes on carry meta[PASSAGE_FLAG] = True."""
FLAT_KEYS = ("edges_out", "edges_in", "passage_ids")
"""The node meta keys `flat_meta=True` stores as JSON strings."""
DEFAULT_MAX_CHUNKS = 50
"""Chunks of one passage sent to the extractor at most (50 × 1,000 characters); the rest is not read."""
MAX_CHUNKS = 1000
MAX_DEGRADATIONS = 20
"""Degradation entries listed at most; one more entry counts the rest."""

_EXTRACT_CALL = LLMCall(stage="graph_extraction", component=COMPONENT)

logger = logging.getLogger(__name__)


@component
class CausalGraphBuilder(AsksChatGenerator, InjectedParts):
    """
    Builds CausalRAG's graph of a corpus: an LLM extracts nodes and relations from each passage
    (1,000-character chunks, 100 overlap, LangChain's graph-transformer prompt), the extractions
    are merged into one graph (a node per name, a directed edge per (cause, relation, effect),
    each citing its passages), and every node becomes a Document with an embedding of its name.

    Edges live in the nodes' meta (`edges_out`, `edges_in`: {"source", "target", "relation",
    "passage_ids"}), not in a sidecar file: every Haystack document store returns a document's
    meta with it, so the graph is stored and read back by the same store that serves node
    retrieval (InMemory, FAISS, pgvector, Qdrant, …) and written by a plain DocumentWriter.
    Node Documents have stable ids (`node_document_id`), so writing with
    `DuplicatePolicy.OVERWRITE` replaces an earlier graph's nodes. Build the graph of the whole
    corpus in one run: a node rebuilt from a later batch alone would lose the edges of the
    earlier ones (the cache makes a full re-run cheap).

    Extraction is the expensive step: with `cache_dir`, each passage's extraction is kept in
    one JSON file named by the hash of its text and of the extraction settings (prompt,
    chunking, triple limit, model), written atomically, so an interrupted run resumes where it
    stopped and an unchanged passage is never sent again. A corrupt cache file is re-extracted
    with a warning; links are never followed. A chunk whose reply does not parse (or whose call
    fails) is logged and counted; its passage still goes out as text.

    Outputs `nodes` (the node Documents, meta {"cfrag_graph_node": True, "node_id", "node_type",
    "edges_out", "edges_in", "passage_ids"}), `documents` (the passages, copies with meta
    {"cfrag_graph_passage": True}, ids unchanged), `stats` (passages, chunks, parse_failures,
    cached, llm_calls, prompt_tokens, completion_tokens, seconds, call_seconds, nodes, edges; replayed
    and replayed_seconds: the calls a replaying generator answered (the evaluation's reply cache) and
    the seconds they took when made; timed_on: those seconds and this build's by machine, …),
    `costs` (one entry per distinct passage: what its extraction cost when it was made, see
    `_Build.cost`; the cache keeps it, so a passage found there still has its price) and
    `degradations`.

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
        :param extractor: a graph extractor component (`causal_rag.extractors.GraphExtractor`: texts ->
            extractions), e.g. `SpacyGraphExtractor` or `LLMGraphExtractor`; replaces the chat generator's
            recipe. Its `fingerprint()` is part of the cache key: one extractor's graph never replays
            another's.
        :param batch_size: chunks sent to `extractor` in one call, in [1, 4096].
        :param document_embedder: any Haystack document embedder; embeds the node Documents (their
            content is the node's name). None: the nodes go out without embeddings (embed them downstream).
        :param chunk_chars: characters per chunk, in [100, 20000] (official: 1000).
        :param chunk_overlap: characters consecutive chunks share, in [0, chunk_chars // 2] (official: 100).
        :param max_triples: triples kept from one chunk's reply, in [1, 500].
        :param max_chunks_per_passage: chunks of one passage extracted at most, in [1, 1000]; the rest is
            not read (a degradation says so).
        :param cache_dir: folder of the extraction cache (created if missing); None = no cache.
        :param prompt_template: replaces the extraction prompt; a `str.format` string with the
            placeholder {text} (literal braces doubled).
        :param generation_kwargs: passed to generators that accept them (e.g. {"max_tokens": 512}).
        :param timeout_s: seconds an extraction call may take before it is abandoned (None = no limit).
        :param raise_on_failure: raise when an extraction call fails instead of skipping the chunk.
        :param max_nodes: nodes the graph may hold, in [1, 200000]; more raises a ValueError.
        :param max_edges: edges the graph may hold, in [1, 1000000]; more raises a ValueError.
        :param grounded_only: keep only triples and nodes whose names occur in their passage (small
            extractors copy the prompt's example: "PRODUCED_BY Microsoft" for a film); the cache keeps
            the replies as they were, the filter applies when the graph is put together.
        :param flat_meta: store `edges_out`, `edges_in` and `passage_ids` as JSON strings, for stores whose
            meta holds only scalars (Chroma, Pinecone); `CausalGraphRetriever` reads both forms.
        :param progress_bar: show a progress bar over the passages (as Haystack's document embedders do):
            an uncached build makes one LLM call per chunk and can take hours.
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
        return default_to_dict(
            self,
            chat_generator=serialize_component(self.chat_generator),
            document_embedder=serialize_component(self.document_embedder),
            extractor=serialize_component(self.extractor),
            batch_size=self.batch_size,
            chunk_chars=self.chunk_chars,
            chunk_overlap=self.chunk_overlap,
            max_triples=self.max_triples,
            max_chunks_per_passage=self.max_chunks_per_passage,
            cache_dir=self.cache_dir,
            prompt_template=self.prompt_template,
            generation_kwargs=self.generation_kwargs,
            timeout_s=self.timeout_s,
            raise_on_failure=self.raise_on_failure,
            max_nodes=self.max_nodes,
            max_edges=self.max_edges,
            flat_meta=self.flat_meta,
            grounded_only=self.grounded_only,
            progress_bar=self.progress_bar,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CausalGraphBuilder:
        """Deserialise, including the injected generator and embedder."""
        return default_from_dict(cls, deserialize_init_components(data, cls._INJECTED))

    # ------------------------------------------------------------------ run
    @component.output_types(nodes=list[Document], documents=list[Document], stats=dict[str, Any],
                            costs=list[dict[str, Any]], degradations=list[dict[str, Any]])
    def run(self, documents: list[Document]) -> dict[str, Any]:
        """
        :param documents: the passages (Documents with text content); not changed.
        :returns: `nodes`, `documents`, `stats`, `costs` and `degradations` (see the class doc).
        :raises ValueError: when the graph outgrows `max_nodes` / `max_edges`.
        :raises RuntimeError: when the document embedder fails (the nodes would be unfindable).
        """
        build = _Build(self, documents)
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
        build = _Build(self, documents)
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
        outputs, with the passages not in the cache counted in stats["not_cached"]. What `cfrag index --graph`
        reports after extracting, and what a store's graph is once every passage is in the cache."""
        build = _Build(self, documents, cache_only=True)
        for _ in build.plan():
            pass
        return build.outputs(build.node_documents())

    def assemble_graph(self, documents: list[Document]) -> Graph:
        """The graph of `documents` from the extraction cache alone, as a `Graph` (no node Documents, no embedding):
        what `stored_graph` merges into the user's store batch by batch."""
        build = _Build(self, documents, cache_only=True)
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

    def _request(self, job: _Job) -> tuple[str, LLMCall, str]:
        """What the extraction call of one chunk asks (`ask_result`'s arguments); a failed chunk is skipped."""
        return self.template.format(text=job.text), _EXTRACT_CALL, f"passage {job.passage_id}, chunk {job.chunk}"

    def _extract(self, batch: list[_Planned]) -> tuple[dict[str, Any] | None, Exception | None, float]:
        start = time.perf_counter()
        try:
            out = self.extractor.run(texts=[text for p in batch for text in p[3]])  # type: ignore[union-attr]
            return out, None, time.perf_counter() - start
        except Exception as exc:  # noqa: BLE001  (the batch's passages go out as text, see class doc)
            return self._batch_failed(exc), exc, time.perf_counter() - start

    async def _extract_async(self, batch: list[_Planned]
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


_Planned = tuple[int, Document, str, list[str]]
"""A passage to extract: its index, the Document, its cache key, its chunks."""


@dataclass
class _Job:
    passage: int
    passage_id: str
    chunk: int
    text: str


@dataclass
class _Passage:
    key: str | None = None
    chunks: list[Extraction | None] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failed: int = 0
    timed: dict[str, float] | None = field(default_factory=dict)
    """Seconds its calls took, by the machine that timed them (a replayed call: the original's); None: unknown
    (cached before the cache kept seconds)."""
    calls: int = 0
    replayed: int = 0
    wall: float = 0.0  # its calls' wall time in this build (a replayed call's is its replay's)


class _Build:
    """One build: the cache, the extractions and the graph, shared by `run` and `run_async` (no model I/O here)."""

    def __init__(self, builder: CausalGraphBuilder, documents: Any, cache_only: bool = False) -> None:
        if not isinstance(documents, list) or not all(isinstance(d, Document) for d in documents):
            raise ValueError(f"{COMPONENT}: 'documents' must be a list of Documents.")
        self.builder = builder
        self.documents = documents
        self.started = time.perf_counter()
        self.cache = ExtractionCache(builder.cache_dir) if builder.cache_dir else None
        self.fingerprint = builder.fingerprint()
        self.graph = Graph(max_nodes=builder.max_nodes, max_edges=builder.max_edges)
        self.degradations: list[dict[str, Any]] = []
        self.omitted = 0
        self.stats = {"passages": len(documents), "extracted": 0, "skipped": 0, "chunks": 0, "parse_failures": 0,
                      "failed_calls": 0, "invalid_items": 0, "ungrounded": 0, "cached": 0, "cache_corrupt": 0,
                      "llm_calls": 0, "replayed": 0, "extractor_calls": 0, "rejected": 0,
                      "prompt_tokens": 0, "completion_tokens": 0}
        self.memo: dict[str, _Passage] = {}
        self.cache_only = cache_only
        self.pending_duplicates: list[_Planned] = []
        self.current: _Passage | None = None
        self.costs: dict[str, dict[str, Any]] = {}
        self.call_seconds = 0.0  # wall time of the calls of the passages this build priced
        self.replay: tuple[str, float] | None = None  # the machine and seconds of the last reply, if replayed
        self.replayed_by: dict[str, float] = {}  # replayed calls' original seconds, by the machine that timed them

    # ---------------------------------------------------------- planning
    def plan(self) -> Iterator[_Planned]:
        """The passages to extract, with their chunks; passages served by the cache are merged on the way."""
        for i, doc in enumerate(self.documents):
            if not isinstance(doc.content, str) or not doc.content.strip():
                self.stats["skipped"] += 1
                continue
            key = cache_key(passage_hash(doc.content), self.fingerprint)
            known = self.memo.get(key) or self._cached(key, doc)
            if known is not None:
                self.stats["cached"] += 1
                self.cost(known, "cached")
                self._merge(doc, known, fresh=False)
                continue
            if self.cache_only:
                self.stats["not_cached"] = self.stats.get("not_cached", 0) + 1
                continue
            chunks = chunk_text(doc.content, self.builder.chunk_chars, self.builder.chunk_overlap)
            if len(chunks) > self.builder.max_chunks_per_passage:
                self._degrade(degradation("extraction", "passage longer than max_chunks_per_passage; its end "
                                          "was not read", passage_id=doc.id, chunks=len(chunks),
                                          read=self.builder.max_chunks_per_passage))
                chunks = chunks[: self.builder.max_chunks_per_passage]
            yield i, doc, key, chunks

    def jobs(self) -> Iterator[_Job]:
        """The chunks to send to the chat generator (its recipe: one call per chunk)."""
        for i, doc, key, chunks in self.plan():
            self.current = _Passage(key=key)
            for c, text in enumerate(chunks):
                start = time.perf_counter()
                yield _Job(passage=i, passage_id=doc.id, chunk=c, text=text)
                self._timed(self.current, time.perf_counter() - start)
            passage, self.current = self.current, None
            self._finish(doc, passage)

    def batches(self) -> Iterator[list[_Planned]]:
        """The passages to extract in groups of about `batch_size` chunks (an extractor's calls); the same
        passage twice in a run is extracted once."""
        batch: list[_Planned] = []
        keys: set[str] = set()
        for planned in self.plan():
            if planned[2] in keys:  # a duplicate of a passage in this batch: merged once that one is done
                self.pending_duplicates.append(planned)
                continue
            batch.append(planned)
            keys.add(planned[2])
            if sum(len(p[3]) for p in batch) >= self.builder.batch_size:
                yield batch
                batch, keys = [], set()
        if batch:
            yield batch

    def extracted(self, batch: list[_Planned], out: dict[str, Any] | None, error: Exception | None,
                  seconds: float) -> None:
        """Record an extractor's output for a batch (or its failure: the passages go out as text)."""
        self.stats["extractor_calls"] += 1
        n = sum(len(p[3]) for p in batch)
        extractions = (out or {}).get("extractions")
        meta = (out or {}).get("meta") or [{} for _ in range(n)]
        if error is None and (not isinstance(extractions, list) or len(extractions) != n or len(meta) != n
                              or not all(isinstance(e, Extraction) for e in extractions)):
            got = len(extractions) if isinstance(extractions, list) else 0
            error = ValueError(f"the extractor returned {got} extractions for {n} texts")
        machine = timed_on()
        at = 0
        for _, doc, key, chunks in batch:
            passage = _Passage(key=key)
            if error is not None:
                passage.failed = len(chunks)
                passage.chunks = [None] * len(chunks)
                logger.warning("{component}: the graph extractor failed for passage {passage_id}: {error}",
                               component=COMPONENT, passage_id=doc.id, error=repr(error)[:300])
                self._degrade(degradation("extraction", "extractor failed", passage_id=doc.id,
                                          error=repr(error)[:300]))
            else:
                passage.chunks = list(extractions[at:at + len(chunks)])  # type: ignore[index]
                for m in meta[at:at + len(chunks)]:
                    m = m if isinstance(m, dict) else {}
                    passage.prompt_tokens += _count(m.get("prompt_tokens"))
                    passage.completion_tokens += _count(m.get("completion_tokens"))
                    self.stats["rejected"] += _count(m.get("rejected"))
                share = seconds * len(chunks) / max(n, 1)
                passage.timed = {machine: share}
                passage.wall = share
                passage.calls = 1
            at += len(chunks)
            self._finish(doc, passage)
        for planned in self.pending_duplicates:  # now in `memo` (or failed: extracted again next run)
            doc, key = planned[1], planned[2]
            known = self.memo.get(key)
            if known is not None:
                self.stats["cached"] += 1
                self._merge(doc, known, fresh=False)
        self.pending_duplicates = []

    def _cached(self, key: str, doc: Document) -> _Passage | None:
        if self.cache is None:
            return None
        try:
            record = self.cache.load(key)
        except CacheCorruptError as exc:
            self.stats["cache_corrupt"] += 1
            logger.warning("{component}: cache file of passage {passage_id} is unusable ({reason}); re-extracting",
                           component=COMPONENT, passage_id=doc.id, reason=str(exc))
            self._degrade(degradation("cache", "corrupt cache file; re-extracted", passage_id=doc.id, error=str(exc)))
            return None
        if record is None:
            return None
        return _Passage(key=key, chunks=record["chunks"], prompt_tokens=record["prompt_tokens"],
                        completion_tokens=record["completion_tokens"], timed=record["timed_on"])

    def _timed(self, passage: _Passage, wall: float) -> None:
        """One call ended after `wall` seconds: charged to the machine that timed it (the original call's if replayed)."""
        passage.wall += wall
        machine, seconds = self.replay or (timed_on(), wall)
        passage.calls += 1
        if self.replay is not None:
            passage.replayed += 1
            self.stats["replayed"] += 1
            self.replayed_by[machine] = self.replayed_by.get(machine, 0.0) + seconds
        self.replay = None
        assert passage.timed is not None  # noqa: S101  (a passage being extracted)
        passage.timed[machine] = passage.timed.get(machine, 0.0) + seconds

    def cost(self, passage: _Passage, how: str) -> None:
        """Note once per distinct passage what its extraction cost: `how` it came ("extracted", "replayed": every
        call answered by a replaying generator, "cached"), the seconds by machine (None: not known), tokens, and
        how many of its chunks' replies did not parse."""
        if not passage.key or passage.key in self.costs:
            return
        if how != "cached":  # a failed call's time is not a passage's price: it stays in the build's other time
            self.call_seconds += passage.wall
        timed = None if passage.timed is None else {m: round(v, 3) for m, v in passage.timed.items()}
        self.costs[passage.key] = {"key": passage.key[:16], "how": how,
                                   "seconds": None if timed is None else round(sum(timed.values()), 3),
                                   "timed_on": timed, "prompt_tokens": passage.prompt_tokens,
                                   "completion_tokens": passage.completion_tokens,
                                   "unparsed": sum(1 for c in passage.chunks if c is not None and not c.parsed)}

    # ---------------------------------------------------------- replies
    def reply(self, job: _Job, result: dict[str, Any] | None, error: Exception | None) -> None:
        """Record one chunk's reply (or its failure)."""
        passage = self.current
        assert passage is not None  # noqa: S101
        self.stats["llm_calls"] += 1
        if error is not None:
            passage.failed += 1
            passage.chunks.append(None)
            logger.warning("{component}: extraction failed for passage {passage_id} chunk {chunk}: {error}",
                           component=COMPONENT, passage_id=job.passage_id, chunk=job.chunk, error=repr(error))
            self._degrade(degradation("extraction", "generator failed", passage_id=job.passage_id,
                                      chunk=job.chunk, error=repr(error)[:300]))
            return
        replies = (result or {}).get("replies") or []
        first = replies[0] if replies else None
        self.replay = replayed_call(getattr(first, "meta", None))
        text = getattr(first, "text", None) if first is not None else None
        tokens_in, tokens_out = token_counts([getattr(first, "meta", None) or {}] if first is not None else [])
        passage.prompt_tokens += tokens_in or 0
        passage.completion_tokens += tokens_out or 0
        extraction = parse_extraction(text if isinstance(text, str) else None, max_triples=self.builder.max_triples)
        if not extraction.parsed:
            logger.warning("{component}: the extraction reply for passage {passage_id} chunk {chunk} did not parse "
                           "({reason}); the passage still goes out as text",
                           component=COMPONENT, passage_id=job.passage_id, chunk=job.chunk, reason=extraction.reason)
            self._degrade(degradation("extraction", "reply did not parse", passage_id=job.passage_id,
                                      chunk=job.chunk, detail=extraction.reason, reply=(text or "")[:200]))
        passage.chunks.append(extraction)

    def _finish(self, doc: Document, passage: _Passage) -> None:
        self.stats["extracted"] += 1
        if self.cache is not None and passage.failed == 0 and passage.key:
            record = {"chunks": [c.to_dict() for c in passage.chunks if c is not None],
                      "prompt_tokens": passage.prompt_tokens, "completion_tokens": passage.completion_tokens,
                      "timed_on": {m: round(v, 3) for m, v in (passage.timed or {}).items()}}
            try:
                self.cache.store(passage.key, record)
            except OSError as exc:
                logger.warning("{component}: could not write the cache file of passage {passage_id}: {error}",
                               component=COMPONENT, passage_id=doc.id, error=repr(exc))
                self._degrade(degradation("cache", "cache file not written", passage_id=doc.id, error=repr(exc)))
        if passage.failed == 0 and passage.key:
            self.memo[passage.key] = passage
        self.stats["prompt_tokens"] += passage.prompt_tokens
        self.stats["completion_tokens"] += passage.completion_tokens
        if passage.failed == 0:  # a passage with a failed call is sent again next time: its cost is not final
            self.cost(passage, "replayed" if passage.calls and passage.replayed == passage.calls else "extracted")
        self._merge(doc, passage, fresh=True)

    def _merge(self, doc: Document, passage: _Passage, fresh: bool) -> None:
        for ex in passage.chunks:
            if ex is None:
                self.stats["failed_calls"] += fresh
                continue
            self.stats["chunks"] += 1
            self.stats["parse_failures"] += not ex.parsed
            self.stats["invalid_items"] += ex.invalid
            nodes, triples = ex.nodes, ex.triples
            if self.builder.grounded_only:
                triples, dropped = grounded_triples(list(triples), doc.content or "")
                self.stats["ungrounded"] += dropped
                nodes = [(name, kind) for name, kind in nodes if grounded(name, doc.content or "")]
            for name, node_type in nodes:
                self.graph.add_node(name, node_type, [doc.id])
            self.graph.add_triples(triples, passage_id=doc.id)

    def _degrade(self, entry: dict[str, Any]) -> None:
        if len(self.degradations) < MAX_DEGRADATIONS:
            self.degradations.append(entry)
        else:
            self.omitted += 1

    # ---------------------------------------------------------- outputs
    def node_documents(self) -> list[Document]:
        """One Document per node: content = its name, meta = its edges and passages."""
        nodes = []
        for node_id in self.graph.node_ids():
            meta = {
                NODE_FLAG: True,
                "node_id": node_id,
                "node_type": self.graph.node_type(node_id),
                "edges_out": [e.to_dict() for e in self.graph.edges_out(node_id)],
                "edges_in": [e.to_dict() for e in self.graph.edges_in(node_id)],
                "passage_ids": self.graph.node_passages(node_id),
            }
            if self.builder.flat_meta:
                meta.update({k: json.dumps(meta[k], ensure_ascii=False) for k in FLAT_KEYS})
            nodes.append(Document(id=node_document_id(node_id), content=node_id, meta=meta))
        return nodes

    def outputs(self, nodes: list[Document]) -> dict[str, Any]:
        if len(nodes) != len(self.graph):
            raise RuntimeError(f"{COMPONENT}: the document embedder returned {len(nodes)} Documents for "
                               f"{len(self.graph)} nodes.")
        degradations = list(self.degradations)
        if self.omitted:
            degradations.append(degradation("extraction", "more degradations omitted", count=self.omitted))
        seconds = time.perf_counter() - self.started
        stats = {**self.stats, "nodes": len(self.graph), "edges": self.graph.n_edges,
                 "causal_edges": self.graph.n_causal_edges, "seconds": round(seconds, 3),
                 "call_seconds": round(self.call_seconds, 3),
                 "replayed_seconds": round(sum(self.replayed_by.values()), 3),
                 "timed_on": by_machine(seconds, self.replayed_by)}
        passages = [with_meta(doc, **{PASSAGE_FLAG: True}) for doc in self.documents]
        return {"nodes": nodes, "documents": passages, "stats": stats, "costs": list(self.costs.values()),
                "degradations": degradations}


def _count(value: Any) -> int:
    """A token or rejection count from an extractor's meta (anything else counts 0)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
