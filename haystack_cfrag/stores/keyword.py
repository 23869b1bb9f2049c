"""The keyword (BM25) side of `hybrid_rag` on every store kind the package supports.

- in memory: Haystack's `InMemoryBM25Retriever` reads the store itself (the pipeline file's own node);
- pgvector: its own `PgvectorKeywordRetriever` (PostgreSQL full-text search) replaces that node;
- FAISS and Qdrant have no keyword retriever of their own (Qdrant's sparse retrieval needs sparse
  embeddings from a model hub): BM25 reads an in-memory copy of the store's documents, made once
  per store and logged. The user's store is only read, never written.

    >>> from haystack import Document
    >>> from haystack.document_stores.in_memory import InMemoryDocumentStore
    >>> store = InMemoryDocumentStore()
    >>> keyword_store(store) is store, keyword_retriever(store, top_k=5) is None
    (True, True)
"""

from __future__ import annotations

from typing import Any

from haystack import Document, logging
from haystack.document_stores.in_memory import InMemoryDocumentStore

logger = logging.getLogger(__name__)


def keyword_retriever(store: Any, *, top_k: int = 5) -> Any | None:
    """The store's own keyword retriever where it is not BM25 in memory (pgvector); None: BM25 in memory reads it."""
    if type(store).__name__ == "PgvectorDocumentStore":
        from haystack_integrations.components.retrievers.pgvector import PgvectorKeywordRetriever  # noqa: PLC0415

        return PgvectorKeywordRetriever(document_store=store, top_k=top_k)
    return None


def keyword_store(store: Any) -> Any:
    """The store BM25 in memory reads for `store`: itself in memory, else a copy of its documents (logged)."""
    if isinstance(store, InMemoryDocumentStore):
        return store
    documents = [Document(id=d.id, content=d.content, meta=dict(d.meta)) for d in store.filter_documents() if d.content]
    logger.warning("{kind} has no keyword retriever of its own: BM25 reads an in-memory copy of its {n} documents",
                   kind=type(store).__name__, n=len(documents))
    mirror = InMemoryDocumentStore()
    mirror.write_documents(documents)
    return mirror


__all__ = ["keyword_retriever", "keyword_store"]
