"""Opening, saving and closing the document store a spec names, and the retrievers that read it: each a call on
the store's kind (`stores.kinds`).

Opening a store to *read* (`ask`, `serve`) never creates or changes anything (a missing store is an error); only
`cfrag index` (``create=True``) creates and writes. Saving is atomic (file stores write beside and rename in).
Every file is read through `stores.safe_files`, every network store has its timeouts (`stores.timeouts`).

>>> import tempfile
>>> spec = parse_store_spec(f"{tempfile.mkdtemp()}/s.json")
>>> store = open_document_store(spec, create=True); save_document_store(store, spec)
>>> type(embedding_retriever(store)).__name__, keyword_retriever(store), keyword_store(store) is store
('InMemoryEmbeddingRetriever', None, True)
"""

from __future__ import annotations

import os
from typing import Any

from haystack_cfrag.stores.kinds import kind_of
from haystack_cfrag.stores.kinds.base import mirror
from haystack_cfrag.stores.specs import StoreSpec, parse_store_spec


def open_document_store(spec: str | os.PathLike[str] | StoreSpec, *, embedding_dim: int | None = None,
                        create: bool = False, faiss_device: int | None = None) -> Any:
    """The document store a spec names.

    :param embedding_dim: needed to create a FAISS index, a table or a collection.
    :param create: create it when missing (indexing); otherwise a missing store is an error, nothing created.
    :param faiss_device: GPU for FAISS searches (None: GPU 0 when faiss has one; -1: CPU).
    :raises FileNotFoundError: the store does not exist and `create` is False.
    """
    s = parse_store_spec(spec)
    return s.store_kind.open(s, embedding_dim=embedding_dim, create=create, device=faiss_device)


def save_document_store(store: Any, spec: str | os.PathLike[str] | StoreSpec) -> None:
    """Persist what needs persisting, atomically: a JSON store's file, a FAISS store's pair (pgvector and Qdrant
    write through)."""
    s = parse_store_spec(spec)
    s.store_kind.save(store, s)


def close_document_store(store: Any) -> None:
    """Release what a store holds open: a Qdrant client (local mode locks its folder), a Postgres connection."""
    if (kind := kind_of(store)) is not None:
        kind.close(store)


def embedding_retriever(store: Any, *, top_k: int = 5) -> Any:
    """The embedding retriever that reads `store` (a store of any kind of `stores.kinds`)."""
    kind = kind_of(store)
    if kind is None:
        raise TypeError(f"No embedding retriever known for {type(store).__name__}; pass your own retriever instead.")
    return kind.embedding_retriever(store, top_k=top_k)


def keyword_retriever(store: Any, *, top_k: int = 5) -> Any | None:
    """The store's own keyword retriever where it is not BM25 in memory (pgvector: full-text search); None: BM25
    in memory reads `keyword_store(store)`."""
    kind = kind_of(store)
    return kind.keyword_retriever(store, top_k=top_k) if kind is not None else None


def keyword_store(store: Any) -> Any:
    """The store BM25 in memory reads for `store`: itself in memory, else a copy of its documents (logged)."""
    kind = kind_of(store)
    return kind.keyword_store(store) if kind is not None else mirror(store, type(store).__name__)


__all__ = ["close_document_store", "embedding_retriever", "keyword_retriever", "keyword_store", "open_document_store",
           "save_document_store"]
