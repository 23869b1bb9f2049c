"""``faiss:PATH[#INDEX]``: faiss-haystack's `FAISSDocumentStore`, saved as ``PATH.faiss`` + ``PATH.json``.

INDEX is ``Flat`` (exact, the default) or ``HNSWm`` (what `faiss_header` checks). L2 on normalised embeddings ranks
as cosine (`faiss_cosine`); searches run on a GPU copy when faiss has a GPU (`faiss_gpu`); the files are read
checked and saved atomically (`faiss_files`). faiss-haystack deletes by `remove_ids`, which HNSW refuses after the
document left its dict (a vector no document owns): `delete` rebuilds such an index from the vectors it keeps.

>>> FAISS.parse("stores/demo", "", "faiss:stores/demo")
StoreSpec(kind='faiss', location='stores/demo', name='Flat')
>>> round(faiss_cosine(1 / (1 + 0.5)), 3)  # squared L2 of 0.5 between unit vectors
0.75
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from haystack_cfrag.stores.kinds.base import Beside, StoreKind, file_path, instance_of, lock_beside
from haystack_cfrag.stores.specs import StoreSpec

GPU_CLASSES = ("GpuFAISSDocumentStore", "GpuFAISSEmbeddingRetriever")
"""The classes of `faiss_gpu` (imported on first use: importing them imports faiss)."""
INDEXES = re.compile(r"Flat|HNSW[1-9][0-9]{0,2}")
"""The FAISS index kinds a store may be created with: those `faiss_header` checks before reading."""


def faiss_cosine(score: float, index_string: str = "Flat") -> float:
    """Cosine similarity from a FAISS score, for unit-length embeddings: faiss-haystack reports 1 / (1 + D) for
    "Flat" indexes and D for the others, D the squared L2 distance 2 - 2·cos."""
    distance = (1.0 / score - 1.0) if index_string == "Flat" else score
    return 1.0 - distance / 2.0


class FaissKind(StoreKind):
    """The FAISS store (module doc)."""

    name = "faiss"
    usage = "faiss:DIR/NAME[#INDEX]"
    overwrites = False

    def parse(self, location: str, name: str, shown: str) -> StoreSpec:
        if not location:
            raise ValueError(f"Store spec '{shown}': use faiss:PATH[#INDEX], e.g. faiss:stores/demo#Flat.")
        file_path(location, shown, self.usage)
        name = name or "Flat"
        if not INDEXES.fullmatch(name):
            raise ValueError(f"Store spec '{shown}': FAISS index '{name[:40]}' is not one cfrag can check when it "
                             "opens the store: use #Flat or #HNSW32 (HNSW with 1-999 links).")
        return StoreSpec(self.name, location, name)

    def check(self, spec: StoreSpec, *, create: bool) -> None:
        index = Path(spec.location).with_suffix(".faiss")
        companion = index.with_suffix(".json")
        if create and index.is_dir():
            raise ValueError(f"{index} is a folder: name a file")
        if not create and not index.exists():
            raise FileNotFoundError(f"no store at {index}: create it with `cfrag index FILES --store {spec}`")
        if index.exists() and not index.is_file():
            raise ValueError(f"{index} is not a file: name the FAISS store cfrag index wrote (faiss:PATH)")
        if create and not index.exists() and companion.exists():
            raise ValueError(f"{companion} exists but {index} does not: it is not part of a FAISS store cfrag "
                             "index wrote, and cfrag never replaces it; name another PATH")

    def open(self, spec: StoreSpec, *, embedding_dim: int | None = None, create: bool = False,
             device: int | None = None) -> Any:
        from haystack_cfrag.stores.kinds import faiss_gpu  # noqa: PLC0415
        from haystack_cfrag.stores.kinds.faiss_files import finish_interrupted_save, load_store  # noqa: PLC0415

        faiss_gpu.faiss_import.check()
        import faiss  # noqa: PLC0415
        from haystack_integrations.document_stores.faiss import FAISSDocumentStore  # noqa: PLC0415

        base = Path(spec.location)
        finish_interrupted_save(base)  # a save killed between its two moves: its complete pair, never a mixed one
        exists = base.with_suffix(".faiss").exists()
        if not exists and not create:
            raise FileNotFoundError(f"No FAISS store at {base.with_suffix('.faiss')}: create it with "
                                    f"`cfrag index FILES --store {spec}`.")
        if not exists and embedding_dim is None:
            raise ValueError("A new FAISS store needs embedding_dim.")
        kwargs = {"index_path": str(base), "index_string": spec.name, "embedding_dim": embedding_dim or 768}
        if device is not None or faiss_gpu.gpu_device(None, faiss.get_num_gpus()) is not None:
            return faiss_gpu.GpuFAISSDocumentStore(**kwargs, device=device)  # loads through `faiss_files.load_store`
        store = FAISSDocumentStore(**{**kwargs, "index_path": None})  # an empty index: the files are read below
        store.index_path = str(base)
        if exists:
            load_store(store, base)
        return store

    def save(self, store: Any, spec: StoreSpec) -> None:
        from haystack_cfrag.stores.kinds.faiss_files import save_pair  # noqa: PLC0415

        save_pair(store, Path(spec.location))

    def delete(self, store: Any, ids: Sequence[str]) -> None:
        import faiss  # noqa: PLC0415

        inner = getattr(_cpu_index(store), "index", None)
        if inner is not None and isinstance(faiss.downcast_index(inner), faiss.IndexFlat):
            store.delete_documents(list(ids))  # a flat index removes ids
        else:
            _rebuild(store, set(ids))

    def embedding_retriever(self, store: Any, *, top_k: int = 5) -> Any:
        from haystack_integrations.components.retrievers.faiss import FAISSEmbeddingRetriever  # noqa: PLC0415

        from haystack_cfrag.stores.kinds import faiss_gpu  # noqa: PLC0415

        gpu = isinstance(store, faiss_gpu.GpuFAISSDocumentStore)  # its retriever's from_dict rebuilds that store
        retriever = faiss_gpu.GpuFAISSEmbeddingRetriever if gpu else FAISSEmbeddingRetriever
        return retriever(document_store=store, top_k=top_k)

    def held(self, store: Any) -> dict[str, Any] | None:
        return store.documents

    def slim(self, store: Any) -> None:
        """A FAISS node store keeps each node Document without its vector (the index holds them; the saved JSON is
        a tenth the size). Retrieval returns Documents from that dict; nothing reads their vectors."""
        store.documents = {k: replace(d, embedding=None) if d.embedding is not None else d
                           for k, d in store.documents.items()}

    def lock_path(self, spec: StoreSpec) -> Path:
        return lock_beside(spec.location)

    def owns(self, store: Any) -> bool:
        return instance_of(store, "haystack_integrations.document_stores.faiss", "FAISSDocumentStore")

    def files(self, spec: StoreSpec) -> set[Path]:
        base = Path(spec.location)
        return {base.with_suffix(".faiss").resolve(), base.with_suffix(".json").resolve()}

    def beside(self, spec: StoreSpec, cache_dir: Path) -> Beside:
        # a folder of its own: `PATH.graph-nodes` would be saved as PATH.faiss, over the passages
        folder = Path(f"{spec.location}.graph")
        return Beside(StoreSpec(self.name, str(folder / "nodes"), spec.name), sqlite=folder / "graph.sqlite",
                      folder=folder)


def _cpu_index(store: Any) -> Any:
    """faiss-haystack's IndexIDMap as written and saved (a GPU store's CPU index, not its search copy)."""
    getter = getattr(store, "_get_index_or_raise", None)
    return getter() if getter is not None else store.index


def _rebuild(store: Any, gone: set[str]) -> None:
    """A new index of the kept documents' vectors (in the store's order), their documents as they were stored."""
    import numpy as np  # noqa: PLC0415
    from haystack.document_stores.types import DuplicatePolicy  # noqa: PLC0415

    vectors = _vectors(store)
    kept = [d for i, d in store.documents.items() if i not in gone]
    plain = [d for d in kept if d.embedding is None]  # stored without their vector: written with the one read back
    missing = [d.id for d in plain if d.id not in vectors]
    if missing:
        raise ValueError(f"the FAISS store holds {len(missing)} documents without a vector; it cannot be rebuilt "
                         "to delete others (index into a new store).")
    store.embedding_dim = _cpu_index(store).d  # a loaded store keeps the dimension it was opened with (768)
    store.delete_all_documents()
    store.write_documents([d if d.embedding is not None else replace(d, embedding=np.asarray(vectors[d.id]).tolist())
                           for d in kept], policy=DuplicatePolicy.OVERWRITE)
    for doc in plain:  # as they were: the index holds their vectors
        store.documents[doc.id] = replace(store.documents[doc.id], embedding=None)


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


FAISS = FaissKind()

__all__ = ["FAISS", "GPU_CLASSES", "INDEXES", "FaissKind", "faiss_cosine"]
