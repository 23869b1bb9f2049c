"""Document stores: one spec string names a store, for indexing, asking and serving.

- `specs`: `parse_store_spec` of ``PATH.json`` | ``memory:``, ``faiss:``, ``pgvector:``, ``qdrant:`` specs into a
  `StoreSpec` (its password a `Secret`); `kinds`: each kind of store as one object (`KINDS`), what differs;
- `opening`: open, save, close a store and the retrievers that read it, each a call on its kind;
- `lock`: one writer per store; `safe_files`: every file read without trusting it; `update`: `update_store`;
- `demo`: the demo corpus embedded on first use, and `open_query_store`, the store `cfrag ask/serve` answer from;
- `kinds.faiss_gpu`: faiss-haystack searching a GPU copy of its index (imported on first use).
"""

from typing import Any

from haystack_cfrag.stores.demo import DEMO_CORPUS, default_store_path, open_model_store, open_query_store, open_store
from haystack_cfrag.stores.kinds import KINDS, StoreKind, kind_of, register
from haystack_cfrag.stores.kinds.faiss import GPU_CLASSES, faiss_cosine
from haystack_cfrag.stores.kinds.memory import open_memory_store, save_memory_store
from haystack_cfrag.stores.opening import (
    close_document_store,
    embedding_retriever,
    keyword_retriever,
    keyword_store,
    open_document_store,
    save_document_store,
)
from haystack_cfrag.stores.specs import StoreSpec, parse_store_spec

__all__ = [
    "DEMO_CORPUS",
    "KINDS",
    "StoreKind",
    "StoreSpec",
    "close_document_store",
    "default_store_path",
    "embedding_retriever",
    "faiss_cosine",
    "keyword_retriever",
    "keyword_store",
    "kind_of",
    "open_document_store",
    "open_memory_store",
    "open_model_store",
    "open_query_store",
    "open_store",
    "parse_store_spec",
    "register",
    "save_document_store",
    "save_memory_store",
    *GPU_CLASSES,
]


def __getattr__(name: str) -> Any:
    """The FAISS GPU classes, imported on first use (importing them imports faiss)."""
    if name in GPU_CLASSES:
        from haystack_cfrag.stores.kinds import faiss_gpu  # noqa: PLC0415

        return getattr(faiss_gpu, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
