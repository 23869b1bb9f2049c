"""Deleting documents from a store of any kind: a call on its kind (`StoreKind.delete`), of the ids it holds.

A FAISS index that cannot remove a vector (HNSW) is rebuilt from the vectors it keeps, so that no
orphan vector stays (`stores.kinds.faiss`); other stores delete by id.

>>> from haystack import Document
>>> from haystack.document_stores.in_memory import InMemoryDocumentStore
>>> store = InMemoryDocumentStore(index="removal_doctest")  # its own index: instances share one name's data
>>> _ = store.write_documents([Document(id="a", content="a"), Document(id="b", content="b")])
>>> delete_documents(store, ["a", "missing"]), [d.id for d in store.filter_documents()]
(1, ['b'])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def delete_documents(store: Any, ids: Sequence[str]) -> int:
    """Delete the documents `ids` that `store` holds; how many were held. No orphan vector stays in a FAISS index."""
    from haystack_cfrag.stores.existing import stored_ids  # noqa: PLC0415
    from haystack_cfrag.stores.kinds import kind_of  # noqa: PLC0415

    held = sorted(stored_ids(store, list(dict.fromkeys(ids))))
    if not held:
        return 0
    kind = kind_of(store)
    if kind is not None:
        kind.delete(store, held)
    else:
        store.delete_documents(held)
    return len(held)


__all__ = ["delete_documents"]
