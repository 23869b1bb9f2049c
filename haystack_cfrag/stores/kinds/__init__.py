"""The store kinds (`memory`, `faiss`, `pgvector`, `qdrant`; their specs: `stores.specs`), one declared object
each, in one table: `KINDS`, looked up by a spec's kind (`kind_named`) or by a store (`kind_of`).

Everything that differs between stores is a call on the kind (`base.StoreKind`): nothing outside this folder names a
store's class or branches on a kind's name. A new kind is one object, `register`ed here.

>>> from haystack.document_stores.in_memory import InMemoryDocumentStore
>>> kind_named("faiss").name, kind_of(InMemoryDocumentStore()).name, kind_of(object())
('faiss', 'memory', None)
"""

from __future__ import annotations

from typing import Any

from haystack_cfrag.stores.kinds.base import Beside, StoreKind, StoreSpec
from haystack_cfrag.stores.kinds.faiss import FAISS
from haystack_cfrag.stores.kinds.memory import MEMORY
from haystack_cfrag.stores.kinds.pgvector import PGVECTOR
from haystack_cfrag.stores.kinds.qdrant import QDRANT
from haystack_cfrag.stores.specs import KINDS

KINDS.update((kind.name, kind) for kind in (MEMORY, FAISS, PGVECTOR, QDRANT))  # the table is `specs.KINDS`


def register(kind: StoreKind) -> StoreKind:
    """Add (or replace) a kind in `KINDS`; a kind registered later is asked first by `kind_of`."""
    KINDS.pop(kind.name, None)
    KINDS[kind.name] = kind
    return kind


def kind_named(name: str) -> StoreKind:
    """The kind of a spec's ``KIND:``; ValueError for none."""
    return StoreSpec(name, "").store_kind


def kind_of(store: Any) -> StoreKind | None:
    """The kind that owns `store` (the latest registered first: a variant of an earlier kind's class); None for a
    store of no kind here (a user's own, a test's fake)."""
    return next((kind for kind in reversed(KINDS.values()) if kind.owns(store)), None)


def held_documents(store: Any) -> dict[str, Any] | None:
    """The id -> Document dict of a store that keeps one (in memory, FAISS), read by key; None: ask the store."""
    kind = kind_of(store)
    return kind.held(store) if kind is not None else None


__all__ = ["KINDS", "Beside", "StoreKind", "held_documents", "kind_named", "kind_of", "register"]
