"""FAISS on a GPU: a thin extension of faiss-haystack's store and retriever.

`GpuFAISSDocumentStore` keeps faiss-haystack's CPU index as the one source of truth (writes, deletes and `save` as in
the base class) and searches a GPU copy, made when faiss reports GPUs and remade after a write; with no GPU it is
the base class. `GpuFAISSEmbeddingRetriever` only changes `from_dict`, so that a serialised pipeline gets this
store back.

faiss-gpu wheels come from conda (`conda install -c pytorch faiss-gpu`) or `pip install faiss-gpu-cu12`;
they replace faiss-cpu under the same `faiss` module name.
"""

from __future__ import annotations

from typing import Any

from haystack import component, default_from_dict, default_to_dict, logging
from haystack.lazy_imports import LazyImport

with LazyImport("Run 'pip install faiss-haystack' (or haystack-cfrag[stores])") as faiss_import:
    import faiss
    from haystack_integrations.components.retrievers.faiss import FAISSEmbeddingRetriever
    from haystack_integrations.document_stores.faiss import FAISSDocumentStore

logger = logging.getLogger(__name__)

if not faiss_import.is_successful():  # keep the module importable; using a class raises the hint
    FAISSDocumentStore = object  # type: ignore[assignment,misc]  # noqa: N816
    FAISSEmbeddingRetriever = object  # type: ignore[assignment,misc]  # noqa: N816


def gpu_device(requested: int | None, n_gpus: int) -> int | None:
    """The GPU to search on: `requested` (-1 = never), else GPU 0 when there is one, else None (CPU)."""
    if requested is not None and requested < 0:
        return None
    if n_gpus <= 0:
        if requested is not None:
            logger.warning("GPU {device} requested for FAISS but faiss reports no GPU: searching on CPU",
                           device=requested)
        return None
    if requested is not None and requested >= n_gpus:
        raise ValueError(f"FAISS GPU {requested} requested, but faiss reports {n_gpus} GPU(s).")
    return requested or 0


class GpuFAISSDocumentStore(FAISSDocumentStore):  # type: ignore[misc,valid-type]
    """`FAISSDocumentStore` that searches a GPU copy of its index when faiss has GPUs.

    ```python
    from haystack_cfrag.stores import GpuFAISSDocumentStore, GpuFAISSEmbeddingRetriever
    store = GpuFAISSDocumentStore(index_path="stores/demo", embedding_dim=384)  # loads demo.faiss/.json
    retriever = GpuFAISSEmbeddingRetriever(document_store=store, top_k=5)
    ```
    """

    def __init__(self, *, index_path: str | None = None, index_string: str = "Flat", embedding_dim: int = 768,
                 device: int | None = None) -> None:
        """
        :param index_path, index_string, embedding_dim: as in `FAISSDocumentStore`.
        :param device: GPU number to search on; None = GPU 0 when faiss has one, -1 = always CPU.
        """
        faiss_import.check()
        if device is not None and not isinstance(device, int):
            raise TypeError(f"device must be an int or None, got {device!r}")
        self.device = device
        self._gpu_index: Any = None
        self._gpu_resources: Any = None
        super().__init__(index_path=index_path, index_string=index_string, embedding_dim=embedding_dim)

    # The base class reads `self.index` to search and `_get_index_or_raise()` to write and save:
    # writes and saves go to the CPU index, searches to the GPU copy.
    @property
    def index(self) -> Any:  # type: ignore[override]
        """The index searches use: the GPU copy when there is a GPU, else the CPU index."""
        cpu = self.__dict__.get("_cpu_index")
        if cpu is None:
            return None
        target = gpu_device(self.device, faiss.get_num_gpus())
        if target is None:
            return cpu
        if self._gpu_index is None:
            if self._gpu_resources is None:
                self._gpu_resources = faiss.StandardGpuResources()
            self._gpu_index = faiss.index_cpu_to_gpu(self._gpu_resources, target, cpu)
            logger.info("FAISS index ({n} vectors) copied to GPU {device}", n=cpu.ntotal, device=target)
        return self._gpu_index

    @index.setter
    def index(self, value: Any) -> None:
        self.__dict__["_cpu_index"] = value
        self._gpu_index = None

    @property
    def on_gpu(self) -> bool:
        """Whether searches run on a GPU."""
        return self.index is not None and self.index is not self.__dict__.get("_cpu_index")

    def load(self, index_path: Any) -> None:
        """Read the store's two files checked (`faiss_files.load_store`: no FIFO, no header that claims
        more than its file holds), never through faiss-haystack's unchecked reader."""
        from haystack_cfrag.stores.kinds.faiss_files import load_store  # noqa: PLC0415

        load_store(self, index_path)

    def _get_index_or_raise(self) -> Any:
        cpu = self.__dict__.get("_cpu_index")
        if cpu is None:
            return super()._get_index_or_raise()
        return cpu

    def write_documents(self, documents: Any, policy: Any = None) -> int:  # noqa: D102
        kwargs = {} if policy is None else {"policy": policy}
        try:
            return super().write_documents(documents, **kwargs)
        finally:
            self._gpu_index = None  # remade from the CPU index at the next search

    def delete_documents(self, document_ids: list[str]) -> None:  # noqa: D102
        try:
            super().delete_documents(document_ids)
        finally:
            self._gpu_index = None

    def to_dict(self) -> dict[str, Any]:
        """Serialise (the base parameters and `device`)."""
        return default_to_dict(self, index_path=self.index_path, index_string=self.index_string,
                               embedding_dim=self.embedding_dim, device=self.device)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GpuFAISSDocumentStore:
        """Deserialise."""
        return default_from_dict(cls, data)


if faiss_import.is_successful():

    @component
    class GpuFAISSEmbeddingRetriever(FAISSEmbeddingRetriever):  # type: ignore[misc,valid-type]
        """`FAISSEmbeddingRetriever` whose `from_dict` rebuilds a `GpuFAISSDocumentStore` (all else is the base's)."""

        @classmethod
        def from_dict(cls, data: dict[str, Any]) -> GpuFAISSEmbeddingRetriever:
            """Deserialise, with the GPU-capable store."""
            data = {**data, "init_parameters": dict(data["init_parameters"])}
            data["init_parameters"]["document_store"] = GpuFAISSDocumentStore.from_dict(
                data["init_parameters"]["document_store"])
            return default_from_dict(cls, data)
else:

    class GpuFAISSEmbeddingRetriever:  # type: ignore[no-redef]
        """Needs faiss-haystack."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            faiss_import.check()
