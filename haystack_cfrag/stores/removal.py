"""Deleting documents from any store kind, FAISS indexes that cannot remove a vector included.

faiss-haystack deletes a document by `remove_ids` on its index, which an HNSW (or IVF without a
direct map) index refuses, and only after it has dropped the document from its dict: the store
is then left with a vector no document owns. `delete_documents` asks an index that can remove
(a flat one) to do so, and rebuilds any other one from the vectors it keeps (each kept
document's embedding, or the vector read back from the index when a document is stored
without it, as a graph's node store is), so that no orphan vector stays. Other stores delete
by id.

>>> from haystack import Document
>>> from haystack.document_stores.in_memory import InMemoryDocumentStore
>>> store = InMemoryDocumentStore(index="removal_doctest")  # its own index: instances share one name's data
>>> _ = store.write_documents([Document(id="a", content="a"), Document(id="b", content="b")])
>>> delete_documents(store, ["a", "missing"]), [d.id for d in store.filter_documents()]
(1, ['b'])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any


def delete_documents(store: Any, ids: Sequence[str]) -> int:
    """Delete the documents `ids` that `store` holds; how many were held. No orphan vector stays in a FAISS index."""
    from haystack_cfrag.stores.existing import stored_ids  # noqa: PLC0415

    held = sorted(stored_ids(store, list(dict.fromkeys(ids))))
    if not held:
        return 0
    if _is_faiss(store) and not _removable(store):
        _rebuild_faiss(store, set(held))
    else:
        store.delete_documents(held)
    return len(held)


def _is_faiss(store: Any) -> bool:
    return type(store).__name__.endswith("FAISSDocumentStore") and isinstance(getattr(store, "documents", None), dict)


def _removable(store: Any) -> bool:
    """Whether the FAISS index under faiss-haystack's IndexIDMap removes ids (a flat index does)."""
    import faiss  # noqa: PLC0415

    inner = getattr(_cpu_index(store), "index", None)
    if inner is None:
        return False
    return isinstance(faiss.downcast_index(inner), faiss.IndexFlat)


def _rebuild_faiss(store: Any, gone: set[str]) -> None:
    """A new index of the kept documents' vectors (in the store's order), their documents as they were stored."""
    import numpy as np  # noqa: PLC0415

    vectors = _vectors(store)
    kept = [d for i, d in store.documents.items() if i not in gone]
    docs_out = [d for d in kept if d.embedding is None]  # stored without their vector: written with the one read back
    missing = [d.id for d in docs_out if d.id not in vectors]
    if missing:
        raise ValueError(f"the FAISS store holds {len(missing)} documents without a vector; it cannot be rebuilt "
                         "to delete others (index into a new store).")
    plain = {d.id for d in docs_out}
    store.embedding_dim = _cpu_index(store).d  # a loaded store keeps the dimension it was opened with (768)
    store.delete_all_documents()
    with_vectors = [d if d.embedding is not None else replace(d, embedding=np.asarray(vectors[d.id]).tolist())
                    for d in kept]
    from haystack.document_stores.types import DuplicatePolicy  # noqa: PLC0415

    store.write_documents(with_vectors, policy=DuplicatePolicy.OVERWRITE)
    for doc_id in plain:  # as they were: the index holds their vectors
        store.documents[doc_id] = replace(store.documents[doc_id], embedding=None)


def _cpu_index(store: Any) -> Any:
    """faiss-haystack's IndexIDMap as written and saved (a GPU store's CPU index, not its search copy)."""
    getter = getattr(store, "_get_index_or_raise", None)
    return getter() if getter is not None else store.index


def _vectors(store: Any) -> dict[str, Any]:
    """Document id -> its vector read back from the index (faiss-haystack's IndexIDMap over a storing index)."""
    import faiss  # noqa: PLC0415

    idmap = _cpu_index(store)
    inner = faiss.downcast_index(idmap.index)
    if inner.ntotal == 0:
        return {}
    external = faiss.vector_to_array(idmap.id_map)
    try:
        matrix = inner.reconstruct_n(0, inner.ntotal)
    except RuntimeError:
        return {}
    by_int = {int(e): row for e, row in zip(external, matrix, strict=True)}
    return {doc_id: by_int[int_id] for int_id, doc_id in store.id_map.items() if int_id in by_int}


__all__ = ["delete_documents"]
