"""Document stores: one spec string names a store, for indexing, asking and serving.

- `specs`: `parse_store_spec` of ``PATH.json`` | ``memory:PATH.json`` | ``faiss:PATH[#INDEX]`` |
  ``pgvector:postgresql://…[#TABLE]`` | ``qdrant:PATH|URL[#COLLECTION]``, and `redact`.
- `opening`: `open_document_store`, `save_document_store`, `close_document_store` and the
  `embedding_retriever` that reads each kind.
- `demo`: the demo corpus embedded on first use, and `open_query_store`, the store `cfrag ask`
  and `cfrag serve` answer from.
- `faiss_gpu`: `GpuFAISSDocumentStore` and `GpuFAISSEmbeddingRetriever`, faiss-haystack searching
  a GPU copy of its index (imported on first use: importing it imports faiss).

Files are converted and split into passages by `haystack_cfrag.stores.sources`.
"""

from typing import Any

from haystack_cfrag.stores.demo import DEMO_CORPUS, default_store_path, open_model_store, open_query_store, open_store
from haystack_cfrag.stores.opening import (
    close_document_store,
    embedding_retriever,
    faiss_cosine,
    open_document_store,
    open_memory_store,
    pg_secret,
    save_document_store,
    save_memory_store,
)
from haystack_cfrag.stores.specs import DEFAULT_COLLECTION, DEFAULT_TABLE, KINDS, StoreSpec, parse_store_spec, redact

_FAISS_GPU = ("GpuFAISSDocumentStore", "GpuFAISSEmbeddingRetriever")

__all__ = [
    "DEFAULT_COLLECTION",
    "DEFAULT_TABLE",
    "DEMO_CORPUS",
    "KINDS",
    "StoreSpec",
    "close_document_store",
    "default_store_path",
    "embedding_retriever",
    "faiss_cosine",
    "open_document_store",
    "open_memory_store",
    "open_model_store",
    "open_query_store",
    "open_store",
    "parse_store_spec",
    "pg_secret",
    "redact",
    "save_document_store",
    "save_memory_store",
    *_FAISS_GPU,
]


def __getattr__(name: str) -> Any:
    """The FAISS GPU classes, imported on first use (importing them imports faiss)."""
    if name in _FAISS_GPU:
        from haystack_cfrag.stores import faiss_gpu  # noqa: PLC0415

        return getattr(faiss_gpu, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
