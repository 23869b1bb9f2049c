"""MultiQueryRetriever: retrieve for the query and its counterfactuals, keep provenance (4.1.2)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging

from haystack_cfrag.cfrag import ranges
from haystack_cfrag.common.plumbing import InjectedParts, accepts, run_async_or_thread, with_meta
from haystack_cfrag.common.protocols import Retriever, TextEmbedder
from haystack_cfrag.common.serialization import deserialize_init_components, serialize_component

logger = logging.getLogger(__name__)

PROVENANCE_KEY = "cfrag_provenance"


@component
class MultiQueryRetriever(InjectedParts):
    """
    Runs any Haystack retriever for several queries and unions the results by document id.

    Text retrievers get the query text, embedding retrievers a `query_embedder`'s embedding; queries run up to
    `max_workers` at once. Each document is a copy with `meta["cfrag_provenance"]` ({"query_index", "rank",
    "score"} per query that found it); the original query's come first in its order, then the rest by best rank.
    `original_documents` are the original query's own results (standard RAG's). The store is only read.

    ### Usage example
    ```python
    from haystack import Document
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore
    from haystack_cfrag import MultiQueryRetriever

    store = InMemoryDocumentStore()
    store.write_documents([Document(content="Christian Bale plays Batman."),
                           Document(content="Heath Ledger plays the Joker.")])
    retriever = MultiQueryRetriever(retriever=InMemoryBM25Retriever(document_store=store), top_k=1)
    docs = retriever.run(queries=["Who plays Batman?", "Who plays the Joker?"])["documents"]
    print([d.meta["cfrag_provenance"] for d in docs])
    ```
    """

    _INJECTED = ("retriever", "query_embedder")

    def __init__(
        self,
        *,
        retriever: Retriever,
        query_embedder: TextEmbedder | None = None,
        top_k: int | None = None,
        max_workers: int = 4,
    ) -> None:
        """
        :param retriever: any Haystack retriever instance (text or embedding).
        :param query_embedder: a text embedder, required when the retriever takes `query_embedding`.
        :param top_k: documents per query; None = the retriever's own default.
        :param max_workers: queries run at once (1 = one after the other).
        """
        if top_k is not None:
            ranges.check("top_k", top_k)
        ranges.check("max_workers", max_workers)
        self._by_embedding = accepts(retriever, "query_embedding")
        if self._by_embedding and query_embedder is None:
            raise ValueError(
                "MultiQueryRetriever: the retriever takes 'query_embedding'; pass a 'query_embedder' "
                "(a Haystack text embedder) to embed the queries."
            )
        self.retriever = retriever
        self.query_embedder = query_embedder
        self.top_k = top_k
        self.max_workers = max_workers


    def to_dict(self) -> dict[str, Any]:
        """Serialise, including the injected components (the retriever carries its store)."""
        return default_to_dict(self, retriever=serialize_component(self.retriever),
                               query_embedder=serialize_component(self.query_embedder), top_k=self.top_k,
                               max_workers=self.max_workers)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MultiQueryRetriever:
        """Deserialise, including the injected components."""
        return default_from_dict(cls, deserialize_init_components(data, cls._INJECTED))

    @component.output_types(documents=list[Document], original_documents=list[Document])
    def run(
        self, queries: list[str], top_k: int | None = None, filters: dict[str, Any] | None = None,
        original_documents: list[Document] | None = None,
    ) -> dict[str, list[Document]]:
        """
        :param queries: the original query first, then the counterfactuals.
        :param top_k: overrides `top_k` for this call.
        :param filters: Haystack metadata filters passed to the retriever.
        :param original_documents: the original query's results already retrieved (not retrieved again).
        :returns: `documents`, the union with provenance, and `original_documents`, the original query's results.
        """
        self._check(queries, original_documents)
        todo = queries if original_documents is None else queries[1:]
        if len(todo) <= 1 or self.max_workers == 1:
            results = [self._retrieve(q, top_k, filters) for q in todo]
        else:
            with ThreadPoolExecutor(max_workers=min(self.max_workers, len(todo))) as pool:
                results = list(pool.map(lambda q: self._retrieve(q, top_k, filters), todo))
        return _outputs(union_with_provenance(_given(original_documents) + results))

    @component.output_types(documents=list[Document], original_documents=list[Document])
    async def run_async(
        self, queries: list[str], top_k: int | None = None, filters: dict[str, Any] | None = None,
        original_documents: list[Document] | None = None,
    ) -> dict[str, list[Document]]:
        """Async twin of `run`, with the same sockets; queries run concurrently up to `max_workers`."""
        self._check(queries, original_documents)
        todo = queries if original_documents is None else queries[1:]
        limit = asyncio.Semaphore(self.max_workers)

        async def one(query: str) -> list[Document]:
            async with limit:
                embedding = None
                if self._by_embedding:
                    embedding = (await run_async_or_thread(self.query_embedder, text=query))["embedding"]
                kwargs = self._retriever_kwargs(query, embedding, top_k, filters)
                return (await run_async_or_thread(self.retriever, **kwargs))["documents"]

        results = await asyncio.gather(*(one(q) for q in todo))
        return _outputs(union_with_provenance(_given(original_documents) + list(results)))

    # ------------------------------------------------------------------ steps
    @staticmethod
    def _check(queries: list[str], original_documents: list[Document] | None = None) -> None:
        if not queries or not all(isinstance(q, str) and q.strip() for q in queries):
            raise ValueError("MultiQueryRetriever: 'queries' must be a non-empty list of non-empty strings.")
        if original_documents is not None and not (
            isinstance(original_documents, list) and all(isinstance(d, Document) for d in original_documents)
        ):
            raise ValueError("MultiQueryRetriever: 'original_documents' must be a list of documents.")

    def _retriever_kwargs(
        self, query: str, embedding: list[float] | None, top_k: int | None, filters: dict[str, Any] | None
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"query_embedding": embedding} if self._by_embedding else {"query": query}
        k = top_k if top_k is not None else self.top_k
        if k is not None:
            kwargs["top_k"] = k
        if filters is not None:
            kwargs["filters"] = filters
        if accepts(self.retriever, "return_embedding"):
            kwargs["return_embedding"] = True
        return kwargs

    def _retrieve(self, query: str, top_k: int | None, filters: dict[str, Any] | None) -> list[Document]:
        embedding = self.query_embedder.run(text=query)["embedding"] if self._by_embedding else None
        return self.retriever.run(**self._retriever_kwargs(query, embedding, top_k, filters))["documents"]


def _given(original_documents: list[Document] | None) -> list[list[Document]]:
    """The original query's results when they were given (as the first query's result list), else none."""
    return [] if original_documents is None else [list(original_documents)]


def _outputs(union: list[Document]) -> dict[str, list[Document]]:
    """The union, and its documents the original query retrieved (they come first, in its rank order)."""
    original = [d for d in union if any(p["query_index"] == 0 for p in d.meta[PROVENANCE_KEY])]
    return {"documents": union, "original_documents": original}


def union_with_provenance(results: list[list[Document]]) -> list[Document]:
    """Union of per-query result lists by document id, with provenance in meta (inputs untouched): results[0]'s
    in order, then the rest by best rank and first query index."""
    provenance: dict[str, list[dict[str, Any]]] = {}
    first: dict[str, Document] = {}
    for qi, docs in enumerate(results):
        for rank, doc in enumerate(docs):
            first.setdefault(doc.id, doc)
            provenance.setdefault(doc.id, []).append({"query_index": qi, "rank": rank, "score": doc.score})

    def order(doc_id: str) -> tuple[int, int, int]:
        prov = provenance[doc_id]
        by_original = next((p["rank"] for p in prov if p["query_index"] == 0), None)
        if by_original is not None:
            return (0, by_original, 0)
        best = min(prov, key=lambda p: (p["rank"], p["query_index"]))
        return (1, best["rank"], best["query_index"])

    out = []
    for doc_id in sorted(provenance, key=order):
        prov = provenance[doc_id]
        original = next((p["score"] for p in prov if p["query_index"] == 0), None)
        doc = with_meta(first[doc_id], **{PROVENANCE_KEY: prov})
        out.append(replace(doc, score=original))
    return out

