"""One run of `CausalGraphBuilder` (no model I/O): its passages planned, each reply's extraction recorded, priced
and cached, the `Graph` assembled into node Documents."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from haystack import Document, logging

from haystack_cfrag.causal_rag.components._extraction_cache import CacheCorruptError, ExtractionCache
from haystack_cfrag.causal_rag.math.extraction import (
    Extraction,
    cache_key,
    chunk_text,
    grounded,
    grounded_triples,
    parse_extraction,
    passage_hash,
)
from haystack_cfrag.causal_rag.math.graph import Graph
from haystack_cfrag.causal_rag.math.names import node_document_id
from haystack_cfrag.causal_rag.math.node_meta import node_meta
from haystack_cfrag.common.plumbing import degradation, with_meta
from haystack_cfrag.common.timing import by_machine, replayed_call, timed_on
from haystack_cfrag.common.tracing import token_counts

COMPONENT = "CausalGraphBuilder"
PASSAGE_FLAG = "cfrag_graph_passage"
"""The passages the builder passes on carry meta[PASSAGE_FLAG] = True."""
MAX_DEGRADATIONS = 20
"""Degradation entries listed at most; one more entry counts the rest."""


logger = logging.getLogger("haystack_cfrag.causal_rag.components.causal_graph_builder")
"""The component's logger (its warnings keep the name they had when this lived in its module)."""


class BuildSettings(Protocol):
    """What a build reads of its `CausalGraphBuilder`."""

    batch_size: int
    cache_dir: str | None
    chunk_chars: int
    chunk_overlap: int
    flat_meta: bool
    grounded_only: bool
    max_chunks_per_passage: int
    max_edges: int
    max_nodes: int
    max_triples: int

    def fingerprint(self) -> str: ...


Planned = tuple[int, Document, str, list[str]]
"""A passage to extract: its index, the Document, its cache key, its chunks."""


@dataclass
class Job:
    passage: int
    passage_id: str
    chunk: int
    text: str


@dataclass
class Passage:
    key: str | None = None
    chunks: list[Extraction | None] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failed: int = 0
    timed: dict[str, float] | None = field(default_factory=dict)
    """Seconds its calls took, by machine (a replayed call: the original's); None: unknown."""
    calls: int = 0
    replayed: int = 0
    wall: float = 0.0  # its calls' wall time in this build (a replayed call's is its replay's)


class GraphBuild:
    """One build: the cache, the extractions and the graph, shared by `run` and `run_async` (no model I/O here)."""

    def __init__(self, builder: BuildSettings, documents: Any, cache_only: bool = False) -> None:
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
        self.memo: dict[str, Passage] = {}
        self.cache_only = cache_only
        self.pending_duplicates: list[Planned] = []
        self.current: Passage | None = None
        self.costs: dict[str, dict[str, Any]] = {}
        self.call_seconds = 0.0  # wall time of the calls of the passages this build priced
        self.replay: tuple[str, float] | None = None  # the machine and seconds of the last reply, if replayed
        self.replayed_by: dict[str, float] = {}  # replayed calls' original seconds, by the machine that timed them

    # ---------------------------------------------------------- planning
    def plan(self) -> Iterator[Planned]:
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

    def jobs(self) -> Iterator[Job]:
        """The chunks to send to the chat generator (its recipe: one call per chunk)."""
        for i, doc, key, chunks in self.plan():
            self.current = Passage(key=key)
            for c, text in enumerate(chunks):
                start = time.perf_counter()
                yield Job(passage=i, passage_id=doc.id, chunk=c, text=text)
                self._timed(self.current, time.perf_counter() - start)
            passage, self.current = self.current, None
            self._finish(doc, passage)

    def batches(self) -> Iterator[list[Planned]]:
        """The passages to extract in groups of about `batch_size` chunks (an extractor's calls); the same
        passage twice in a run is extracted once."""
        batch: list[Planned] = []
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

    def extracted(self, batch: list[Planned], out: dict[str, Any] | None, error: Exception | None,
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
            passage = Passage(key=key)
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

    def _cached(self, key: str, doc: Document) -> Passage | None:
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
        return Passage(key=key, chunks=record["chunks"], prompt_tokens=record["prompt_tokens"],
                        completion_tokens=record["completion_tokens"], timed=record["timed_on"])

    def _timed(self, passage: Passage, wall: float) -> None:
        """One call ended after `wall` seconds: charged to the machine that timed it (a replay: the original's)."""
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

    def cost(self, passage: Passage, how: str) -> None:
        """Note once per distinct passage its extraction's cost: `how` ("extracted", "replayed", "cached"), the
        seconds by machine (None: unknown), tokens, unparsed chunks."""
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
    def reply(self, job: Job, result: dict[str, Any] | None, error: Exception | None) -> None:
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

    def _finish(self, doc: Document, passage: Passage) -> None:
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

    def _merge(self, doc: Document, passage: Passage, fresh: bool) -> None:
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
        """One Document per node: content = its name, meta = its edges and passages (`math.node_meta`)."""
        return [Document(id=node_document_id(node_id), content=node_id,
                         meta=node_meta(self.graph, node_id, flat=self.builder.flat_meta))
                for node_id in self.graph.node_ids()]

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
