"""Which passages a store already holds: `cfrag index` embeds and writes only the others, and replaces or
removes the ones a file no longer gives (`stored_documents`, `documents_from`).

A passage's id is Haystack's hash of its text and metadata, so a passage found by id is the same passage:
re-indexing a folder after adding one file embeds that file's passages only.

>>> from haystack import Document
>>> from haystack.document_stores.in_memory import InMemoryDocumentStore
>>> store = InMemoryDocumentStore()
>>> _ = store.write_documents([Document(content="kept")])
>>> kept, new = Document(content="kept").id, Document(content="new").id
>>> stored_ids(store, [kept, new]) == {kept}
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from haystack_cfrag.stores.kinds import held_documents

BATCH = 1000
"""Ids asked per query of a database store."""


def stored_ids(store: Any, ids: Sequence[str], *, batch: int = BATCH) -> set[str]:
    """The ids among `ids` that `store` holds (file stores: from the dict their kind holds, `StoreKind.held`;
    Qdrant by `get_documents_by_id`; others by a filter on `id`, `batch` ids a query)."""
    return set(stored_documents(store, ids, batch=batch))


def stored_documents(store: Any, ids: Sequence[str], *, batch: int = BATCH) -> dict[str, Any]:
    """id -> the stored Document, of the ids among `ids` that `store` holds (asked as `stored_ids` says)."""
    if (held := held_documents(store)) is not None:
        return {i: held[i] for i in ids if i in held}
    found: dict[str, Any] = {}
    for start in range(0, len(ids), batch):
        part = list(ids[start:start + batch])
        asked = set(part)
        if hasattr(store, "get_documents_by_id"):  # qdrant-haystack (its ids are UUIDs made from these)
            docs = store.get_documents_by_id(part)
        else:
            docs = store.filter_documents(filters={"field": "id", "operator": "in", "value": part})
        found.update((d.id, d) for d in docs if d.id in asked)
    return found


def documents_from(store: Any, key: str, values: Sequence[str] | None = None, *, batch: int = BATCH) -> list[Any]:
    """The stored Documents whose `meta[key]` is one of `values` (None: every document that has the key); file stores
    from the dict their kind holds, others by a filter on `meta.KEY`, `batch` values a query."""
    if (held := held_documents(store)) is not None:
        wanted = None if values is None else set(values)
        return [d for d in held.values() if key in d.meta and (wanted is None or d.meta[key] in wanted)]
    if values is None:
        return [d for d in store.filter_documents() if key in d.meta]
    out: list[Any] = []
    values = list(values)
    for start in range(0, len(values), batch):
        part = values[start:start + batch]
        out += store.filter_documents(filters={"field": f"meta.{key}", "operator": "in", "value": part})
    return out


def stored_dim(store: Any) -> int | None:
    """The dimension of the vectors `store` holds: a FAISS index's, a pgvector table's, a Qdrant
    collection's; None for a store that takes any (InMemory)."""
    index = getattr(store, "index", None)
    if index is not None and isinstance(getattr(index, "d", None), int):  # faiss-haystack, once loaded
        return index.d
    for attribute in ("embedding_dimension", "embedding_dim"):  # pgvector-haystack, qdrant-haystack
        dim = getattr(store, attribute, None)
        if isinstance(dim, int):
            return dim
    return None


__all__ = ["documents_from", "stored_dim", "stored_documents", "stored_ids"]
