"""CausalGraphRetriever: CausalRAG's query-time retrieval (paper 004, §4.2): k seed nodes, s hops, their passages."""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Generator
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.utils import Secret

from haystack_cfrag.causal_rag.graph_spec import keep_graph_spec, resolve_graph_spec, scrub_graph_spec
from haystack_cfrag.causal_rag.math.expansion import (
    DEFAULT_HOPS,
    DEFAULT_MAX_SUBGRAPH_EDGES,
    DEFAULT_TOP_K,
    MAX_SUBGRAPH_EDGES,
    check_hops,
    check_top_k,
    expand_hops,
    rank_passages,
)
from haystack_cfrag.causal_rag.math.graph import Graph
from haystack_cfrag.causal_rag.math.names import NODE_FLAG, node_key
from haystack_cfrag.causal_rag.math.node_meta import load_node, node_filter
from haystack_cfrag.common.plumbing import InjectedParts, accepts, degradation, run_async_or_thread, with_meta
from haystack_cfrag.common.protocols import EmbeddingRetriever
from haystack_cfrag.common.serialization import deserialize_component, deserialize_init_components, serialize_component
from haystack_cfrag.common.validation import check_bool, check_int

COMPONENT = "CausalGraphRetriever"
DEFAULT_MAX_DOCUMENTS = 10
MAX_DOCUMENTS = 200
STORE_BATCH = 500
"""Ids per `filter_documents` call (an "in" filter over many ids is slow or refused by some stores)."""
HOP_META = "cfrag_hop"
"""Node Documents come out with meta[HOP_META] = the hop they were reached at (0 = a seed)."""

logger = logging.getLogger(__name__)

_Step = Generator[tuple[str, dict[str, Any]], Any, dict[str, Any]]


@component
class CausalGraphRetriever(InjectedParts):
    """
    Retrieves CausalRAG's causal subgraph for a query: the `top_k` node Documents nearest the query embedding
    (the injected embedding retriever, filtered to node Documents), expanded `hops` hops along their edges both
    ways (each edge kept in its own direction, as the official retriever does), and the passages the kept nodes
    and edges were extracted from.

    Hop h + 1 reads the edges of the nodes reached at hop h (in their meta, `CausalGraphBuilder`'s): their
    Documents are fetched from the node retriever's store, one `filter_documents` call a hop (without a store,
    only the seeds' own edges: a degradation says so), or from a stored graph's tables. The passages are
    fetched by id from `document_store` (default: the node store), nearest the seeds first. No node matching:
    empty outputs and a "no_graph_node" degradation (join dense-retrieved passages into the prompt to fall back
    to standard RAG, docs/causal_rag.md).

    Outputs `nodes` (seeds first, meta["cfrag_hop"] set), `causal_edges` ({"source", "target", "relation",
    "passage_ids"}, in the order found), `documents` (the source passages), `trace` and `degradations`.

    ### Usage example
    ```python
    from haystack import Document
    from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore
    from haystack_cfrag.causal_rag import CausalGraphRetriever

    store = InMemoryDocumentStore()
    edge = {"source": "Rain", "target": "Flood", "relation": "CAUSES", "passage_ids": ["p1"]}
    store.write_documents([
        Document(id="p1", content="Heavy rain caused the flood.", meta={"cfrag_graph_passage": True}),
        Document(id="n1", content="Rain", embedding=[1.0, 0.0], meta={"cfrag_graph_node": True,
                 "node_id": "Rain", "edges_out": [edge], "edges_in": [], "passage_ids": ["p1"]}),
        Document(id="n2", content="Flood", embedding=[0.0, 1.0], meta={"cfrag_graph_node": True,
                 "node_id": "Flood", "edges_out": [], "edges_in": [edge], "passage_ids": ["p1"]}),
    ])
    retriever = CausalGraphRetriever(node_retriever=InMemoryEmbeddingRetriever(document_store=store), top_k=1)
    out = retriever.run(query_embedding=[1.0, 0.1])
    print(out["causal_edges"], [d.id for d in out["documents"]])
    ```
    """

    _INJECTED = ("node_retriever",)

    def __init__(
        self,
        *,
        node_retriever: EmbeddingRetriever | None = None,
        document_store: Any | None = None,
        graph: str | Secret | None = None,
        top_k: int = DEFAULT_TOP_K,
        hops: int = DEFAULT_HOPS,
        max_edges: int = DEFAULT_MAX_SUBGRAPH_EDGES,
        max_documents: int = DEFAULT_MAX_DOCUMENTS,
        filters: dict[str, Any] | None = None,
        raise_on_failure: bool = False,
    ) -> None:
        """
        :param node_retriever: an embedding retriever over the node Documents (e.g. InMemoryEmbeddingRetriever),
            called with `filters` on the node flag; each hop's nodes are fetched from its `document_store`.
        :param document_store: where the source passages are fetched by id; None: the node retriever's store. A
            passage store of its own keeps node Documents out of every other retriever's results (as `cfrag` does).
        :param graph: the spec of a store whose graph `cfrag index --graph` stored beside it (``faiss:PATH#INDEX``,
            ``pgvector:URL#TABLE``, ``PATH.json``, ``qdrant:…``), opened (checked, never built) in `warm_up` or on
            the first run: its node vectors answer the seeds (`top_k` of `node_retriever` or 10), its tables the
            hops, that store the passages (unless `document_store` is given); `node_retriever` is then optional, and
            given, replaced. A Haystack `Secret` (``graph: {type: env_var, env_vars: [NAME]}`` in YAML) reads the
            spec from the environment; a spec holding a password is moved into an environment variable
            (`causal_rag.graph_spec`): `to_dict` and every error show its name, never the password.
        :param top_k: k, the number of seed nodes, in [1, 10] (paper and official code: 3).
        :param hops: s, the number of expansion hops, in [1, 10] (paper and official code: 3).
        :param max_edges: edges kept at most, in [1, 2000] (the official code keeps all).
        :param max_documents: source passages returned at most, in [0, 200].
        :param filters: more filters for node retrieval, ANDed with the node flag (Haystack filter syntax).
        :param raise_on_failure: raise when the retriever or the store fails instead of degrading.
        """
        graph = keep_graph_spec(graph, COMPONENT)
        if graph is None and node_retriever is None:
            raise ValueError(f"{COMPONENT}: 'node_retriever' is required (an embedding retriever over the node "
                             "Documents), or 'graph' (a store whose graph `cfrag index --graph` stored).")
        if document_store is not None and not hasattr(document_store, "filter_documents"):
            raise ValueError(f"{COMPONENT}: 'document_store' must be a Haystack document store "
                             "(with filter_documents).")
        check_top_k(top_k)
        check_hops(hops)
        check_int("max_edges", max_edges, 1, MAX_SUBGRAPH_EDGES)
        check_int("max_documents", max_documents, 0, MAX_DOCUMENTS)
        if filters is not None and not isinstance(filters, dict):
            raise ValueError(f"{COMPONENT}: 'filters' must be a Haystack filter dict or None.")
        check_bool("raise_on_failure", raise_on_failure)
        self.node_retriever = node_retriever
        self._declared_node_retriever = node_retriever  # what to_dict writes (`graph`'s retriever is opened)
        self.document_store = document_store
        self.graph = graph
        self._stored: Any | None = None  # the opened `stored_graph.StoredGraph` of `graph`
        self._opening = threading.Lock()  # concurrent first runs open it once
        self._passages: Any | None = None  # the store `graph` names, opened when `document_store` is None
        self.top_k = top_k
        self.hops = hops
        self.max_edges = max_edges
        self.max_documents = max_documents
        self.filters = dict(filters) if filters is not None else None
        self.raise_on_failure = raise_on_failure
        self.graph_tables: Any | None = None
        """A stored graph's tables (`graph_tables.GraphTables`): when set, the nodes' edges are read there, one
        indexed query per hop, and the node store holds only the vectors (`cfrag index --graph`; the runtime
        sets it). Not serialised: it holds a connection."""

    def to_dict(self) -> dict[str, Any]:
        """Serialise, including the injected retriever and store."""
        retriever = self.node_retriever if self.graph is None else self._declared_node_retriever
        return default_to_dict(
            self, node_retriever=serialize_component(retriever),
            document_store=serialize_component(self.document_store),
            graph=self.graph.to_dict() if isinstance(self.graph, Secret) else self.graph, top_k=self.top_k,
            hops=self.hops, max_edges=self.max_edges, max_documents=self.max_documents, filters=self.filters,
            raise_on_failure=self.raise_on_failure)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CausalGraphRetriever:
        """Deserialise, including the injected retriever and store; `graph` as a spec or a Secret.

        A spec holding a password is replaced by its Secret in `data` itself, before anything can fail:
        Haystack's DeserializationError quotes `data`.
        """
        scrub_graph_spec(data, COMPONENT)
        data = deserialize_init_components(data, cls._INJECTED)
        if isinstance(data["init_parameters"].get("graph"), dict):
            data["init_parameters"]["graph"] = Secret.from_dict(data["init_parameters"]["graph"])
        store = data["init_parameters"].get("document_store")
        data["init_parameters"]["document_store"] = deserialize_component(store) if isinstance(store, dict) else store
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        """Open `graph` (when given, once), then warm the node retriever."""
        if self.graph is not None:
            with self._opening:
                if self._stored is None:
                    self._open_graph()
        InjectedParts.warm_up(self)  # (the @component class is a copy: no zero-argument super())

    def _open_graph(self) -> None:
        from haystack_cfrag.causal_rag.stored_graph import open_for_retrieval  # noqa: PLC0415

        self._stored, self.node_retriever, self._passages = open_for_retrieval(
            resolve_graph_spec(self.graph, COMPONENT), node_top_k=getattr(self.node_retriever, "top_k", 10),
            passages=self.document_store is None)
        self.graph_tables = self._stored.tables

    def close(self) -> None:
        """Close the opened `graph` (its tables and node store) and what the injected parts hold."""
        self._close_graph()
        InjectedParts.close(self)

    async def close_async(self) -> None:
        """Async twin of `close`."""
        self._close_graph()
        await InjectedParts.close_async(self)

    def _close_graph(self) -> None:
        if self._stored is not None:
            from haystack_cfrag.stores import close_document_store  # noqa: PLC0415

            self._stored.close()
            if self._passages is not None:
                close_document_store(self._passages)
            self._stored = self._passages = self.graph_tables = None

    @property
    def node_store(self) -> Any | None:
        """The store the nodes reached by each hop are fetched from: the node retriever's."""
        for attr in ("document_store", "_document_store"):  # qdrant-haystack keeps `_document_store`
            store = getattr(self.node_retriever, attr, None)
            if hasattr(store, "filter_documents"):
                return store
        return None

    @property
    def store(self) -> Any | None:
        """The store the source passages are fetched from."""
        if self.document_store is not None:
            return self.document_store
        return self._passages if self._passages is not None else self.node_store

    @component.output_types(nodes=list[Document], causal_edges=list[dict[str, Any]], documents=list[Document],
                            trace=dict[str, Any], degradations=list[dict[str, Any]])
    def run(self, query_embedding: list[float], top_k: int | None = None, hops: int | None = None) -> dict[str, Any]:
        """
        :param query_embedding: the query's embedding (same embedder as the nodes').
        :param top_k: overrides `top_k` for this call, in [1, 10].
        :param hops: overrides `hops` for this call, in [1, 10].
        :returns: `nodes`, `causal_edges`, `documents`, `trace` and `degradations`.
        """
        if self.graph is not None and self._stored is None:
            self.warm_up()
        steps = self._steps(query_embedding, top_k, hops)
        request = next(steps)
        while True:
            try:
                result: Any = self._do(*request)
            except Exception as exc:  # noqa: BLE001  (the step decides: degrade or raise)
                result = exc
            try:
                request = steps.send(result)
            except StopIteration as stop:
                return stop.value

    @component.output_types(nodes=list[Document], causal_edges=list[dict[str, Any]], documents=list[Document],
                            trace=dict[str, Any], degradations=list[dict[str, Any]])
    async def run_async(self, query_embedding: list[float], top_k: int | None = None,
                        hops: int | None = None) -> dict[str, Any]:
        """Async twin of `run`, with the same sockets."""
        if self.graph is not None and self._stored is None:
            await asyncio.to_thread(self.warm_up)
        steps = self._steps(query_embedding, top_k, hops)
        request = next(steps)
        while True:
            try:
                result: Any = await self._do_async(*request)
            except Exception as exc:  # noqa: BLE001
                result = exc
            try:
                request = steps.send(result)
            except StopIteration as stop:
                return stop.value

    def _retrieve_kwargs(self, query_embedding: list[float], top_k: int) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"query_embedding": query_embedding}
        if accepts(self.node_retriever, "filters"):
            kwargs["filters"] = node_filter(self.filters)
        if accepts(self.node_retriever, "top_k"):
            kwargs["top_k"] = top_k
        return kwargs

    def _do(self, kind: str, args: dict[str, Any]) -> Any:
        if kind == "retrieve":
            return self.node_retriever.run(**args)["documents"]
        if kind == "nodes" and self.graph_tables is not None:
            return self.graph_tables.node_documents(args["names"])
        store = self.node_store if kind == "nodes" else self.store
        if kind == "passages" and (held := _held_documents(store)) is not None:
            return [held[i] for i in args["ids"] if i in held]
        return store.filter_documents(filters=_filters(kind, args))

    async def _do_async(self, kind: str, args: dict[str, Any]) -> Any:
        if kind == "retrieve":
            return (await run_async_or_thread(self.node_retriever, **args))["documents"]
        if kind == "nodes" and self.graph_tables is not None:
            return await asyncio.to_thread(self.graph_tables.node_documents, args["names"])
        store = self.node_store if kind == "nodes" else self.store
        if kind == "passages" and (held := _held_documents(store)) is not None:
            return [held[i] for i in args["ids"] if i in held]
        method = getattr(store, "filter_documents_async", None)
        if method is not None and asyncio.iscoroutinefunction(method):
            return await method(filters=_filters(kind, args))
        return await asyncio.to_thread(store.filter_documents, filters=_filters(kind, args))

    def _steps(self, query_embedding: Any, top_k: int | None, hops: int | None) -> _Step:
        """The retrieval as a generator of I/O requests ("retrieve", "nodes", "passages"): run's and run_async's."""
        top_k = self.top_k if top_k is None else top_k
        hops = self.hops if hops is None else hops
        check_top_k(top_k)
        check_hops(hops)
        _check_embedding(query_embedding)
        store, node_store = self.store, self.node_store
        degradations: list[dict[str, Any]] = []
        trace: dict[str, Any] = {"top_k": top_k, "hops": hops, "max_edges": self.max_edges, "store_calls": 0,
                                 "seeds": [], "seed_scores": [], "hops_reached": 0, "edges_per_hop": [],
                                 "truncated": False, "passage_ids": [], "missing_passages": []}

        found = yield ("retrieve", self._retrieve_kwargs([float(x) for x in query_embedding], top_k))
        if isinstance(found, Exception):
            self._raise_or_log("the node retriever failed", found)
            degradations.append(degradation("graph_retrieval", "retriever failed", error=repr(found)[:300]))
            found = []
        nodes_found = [d for d in (found or []) if isinstance(d, Document) and d.meta.get(NODE_FLAG) is True
                       and isinstance(d.meta.get("node_id"), str)]
        trace["dropped_non_nodes"] = len(found or []) - len(nodes_found)
        seeds = nodes_found[:top_k]
        if seeds and self.graph_tables is not None:  # a stored graph: the seeds' edges are in its tables
            trace["store_calls"] += 1
            records = yield ("nodes", {"names": [d.meta["node_id"] for d in seeds]})
            if isinstance(records, Exception):
                self._raise_or_log("reading the graph tables failed", records)
                degradations.append(degradation("graph_retrieval", "graph tables failed", error=repr(records)[:300]))
                records = []
            by_key = {node_key(d.meta["node_id"]): d for d in records or []}
            seeds = [Document(id=d.id, content=d.content, meta=by_key[k].meta, score=d.score)
                     for d in seeds if (k := node_key(d.meta["node_id"])) in by_key]
        if not seeds:
            degradations.append(degradation("graph_retrieval", "no_graph_node"))
            return _outputs([], [], [], trace, degradations)

        graph = Graph()
        docs_by_key: dict[str, Document] = {}
        for doc in seeds:
            _load_node(graph, doc, docs_by_key)
        seed_ids = [graph.node_id(d.meta["node_id"]) or d.meta["node_id"] for d in seeds]
        trace["seeds"] = seed_ids
        trace["seed_scores"] = [d.score for d in seeds]

        if node_store is None and self.graph_tables is None and hops > 1:
            degradations.append(degradation("graph_expansion", "the node retriever has no document_store: only "
                                            "the seeds' own edges (one hop) are known", hops=hops))
        for hop in range(1, hops + 1):
            if node_store is None and self.graph_tables is None:
                break
            sub = expand_hops(graph, seed_ids, hop, max_edges=self.max_edges)
            frontier = [n for n, h in zip(sub.nodes, sub.node_hops, strict=True)
                        if h == hop and node_key(n) not in docs_by_key]
            if not frontier:
                break
            for start in range(0, len(frontier), STORE_BATCH):
                batch = frontier[start:start + STORE_BATCH]
                trace["store_calls"] += 1
                fetched = yield ("nodes", {"names": batch})
                if isinstance(fetched, Exception):
                    self._raise_or_log("fetching node Documents failed", fetched)
                    degradations.append(degradation("graph_expansion", "store failed", hop=hop,
                                                    error=repr(fetched)[:300]))
                    break
                for doc in fetched or []:
                    if isinstance(doc, Document) and doc.meta.get(NODE_FLAG) is True:
                        _load_node(graph, doc, docs_by_key)
            if sub.truncated:
                break

        sub = expand_hops(graph, seed_ids, hops, max_edges=self.max_edges)
        trace["hops_reached"] = sub.hops_reached
        trace["edges_per_hop"] = [sub.edge_hops.count(h) for h in range(1, hops + 1)]
        trace["truncated"] = sub.truncated
        if sub.truncated:
            degradations.append(degradation("graph_expansion", "edges_truncated", max_edges=self.max_edges))
        nodes = [with_meta(docs_by_key[node_key(n)], **{HOP_META: h})
                 for n, h in zip(sub.nodes, sub.node_hops, strict=True) if node_key(n) in docs_by_key]
        edges = sub.edge_dicts()

        ranked = rank_passages(graph, sub, self.max_documents)
        trace["passage_ids"] = ranked
        documents: list[Document] = []
        if ranked and store is None:
            degradations.append(degradation("passages", "no document_store: source passages not fetched",
                                             passage_ids=len(ranked)))
        elif ranked:
            by_id: dict[str, Document] = {}
            for start in range(0, len(ranked), STORE_BATCH):
                trace["store_calls"] += 1
                fetched = yield ("passages", {"ids": ranked[start:start + STORE_BATCH]})
                if isinstance(fetched, Exception):
                    self._raise_or_log("fetching the source passages failed", fetched)
                    degradations.append(degradation("passages", "store failed", error=repr(fetched)[:300]))
                    break
                by_id.update({d.id: d for d in fetched or [] if isinstance(d, Document)})
            documents = [by_id[pid] for pid in ranked if pid in by_id]
            trace["missing_passages"] = [pid for pid in ranked if pid not in by_id]
        return _outputs(nodes, edges, documents, trace, degradations)

    def _raise_or_log(self, what: str, exc: Exception) -> None:
        if self.raise_on_failure:
            raise RuntimeError(f"{COMPONENT}: {what}: {exc}") from exc
        logger.warning("{component}: {what}: {error}", component=COMPONENT, what=what, error=repr(exc))


def _held_documents(store: Any) -> dict[str, Document] | None:
    """The id -> Document dict of a store that keeps one (its kind's `held`): read by key, where its
    `filter_documents` would scan every document for a query's few passages. None: an indexed query by id."""
    from haystack_cfrag.stores.kinds import held_documents  # noqa: PLC0415

    return held_documents(store)


def _filters(kind: str, args: dict[str, Any]) -> dict[str, Any]:
    """The store filter of a "nodes" request (node Documents by name) or a "passages" one (by id)."""
    if kind == "nodes":
        return node_filter({"field": "meta.node_id", "operator": "in", "value": list(args["names"])})
    return {"field": "id", "operator": "in", "value": list(args["ids"])}


def _load_node(graph: Graph, doc: Document, docs_by_key: dict[str, Document]) -> None:
    """Add a node Document's node and stored edges to the graph, and the Document under its node's key."""
    if (node_id := load_node(graph, doc.meta)) is not None:
        docs_by_key.setdefault(node_key(node_id), doc)


def _check_embedding(embedding: Any) -> None:
    ok = isinstance(embedding, (list, tuple)) and len(embedding) > 0 and all(
        isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in embedding)
    if not ok:
        raise ValueError(f"{COMPONENT}: 'query_embedding' must be a non-empty list of finite numbers.")


def _outputs(nodes: list[Document], edges: list[dict[str, Any]], documents: list[Document], trace: dict[str, Any],
             degradations: list[dict[str, Any]]) -> dict[str, Any]:
    trace = {**trace, "nodes": len(nodes), "edges": len(edges), "documents": len(documents)}
    return {"nodes": nodes, "causal_edges": edges, "documents": documents, "trace": trace,
            "degradations": degradations}
