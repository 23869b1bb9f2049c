"""``memory:PATH.json`` (or a bare path): Haystack's `InMemoryDocumentStore`, saved as one JSON file (cosine).

Opening reads the file through `stores.safe_files` once it begins as Haystack's `save_to_disk` writes a store (else
refused before anything loads); saving writes a temporary file beside it and renames it over the store.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "s.json"
>>> store = MEMORY.open(MEMORY.parse(str(path), "", str(path)), create=True)
>>> MEMORY.save(store, MEMORY.parse(str(path), "", str(path))); MEMORY.owns(open_memory_store(path))
True
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from haystack_cfrag.common.files import replace_text
from haystack_cfrag.stores.kinds.base import Beside, StoreKind, file_path, lock_beside, remove_leftovers
from haystack_cfrag.stores.safe_files import open_checked, read_json
from haystack_cfrag.stores.specs import StoreSpec

_HEAD = re.compile(rb'\A\s*\{\s*"type"\s*:\s*"[A-Za-z0-9_.]*InMemoryDocumentStore"')


def open_memory_store(path: Path, *, create: bool = False) -> Any:
    """An `InMemoryDocumentStore` saved as JSON at `path` (cosine); a new, empty one when missing and `create`.

    :raises FileNotFoundError: no file at `path` and `create` is False.
    """
    from haystack import Document  # noqa: PLC0415
    from haystack.document_stores.in_memory import InMemoryDocumentStore  # noqa: PLC0415
    from haystack.document_stores.types import DuplicatePolicy  # noqa: PLC0415

    if path.exists() or path.is_symlink():
        check_memory_store_file(path)
        data = read_json(path, "json")
        try:  # what `InMemoryDocumentStore.load_from_disk` does, from the checked file
            documents = data.pop("documents")
            store = InMemoryDocumentStore.from_dict(data)
            store.write_documents([Document.from_dict(d) for d in documents], policy=DuplicatePolicy.OVERWRITE)
            return store
        except Exception as exc:  # noqa: BLE001  (Haystack raises KeyError, DocumentStoreError, TypeError …)
            raise ValueError(f"{path} is not a store cfrag index wrote (it does not load: {type(exc).__name__}); "
                             "name another file.") from exc
    if not create:
        raise FileNotFoundError(f"No store at {path}: create it with `cfrag index FILES --store {path}`.")
    return InMemoryDocumentStore(embedding_similarity_function="cosine")


def check_memory_store_file(path: Path) -> None:
    """ValueError naming `path` unless it is a file that Haystack's `InMemoryDocumentStore.save_to_disk` wrote:
    only its first bytes are read (the JSON object must begin with its `"type"`)."""
    if path.is_dir():
        raise ValueError(f"{path} is a folder, not a store file: name the .json file cfrag index wrote.")
    try:
        with open_checked(path, "json") as fh:  # a FIFO, a device, a link out or a huge file: refused unread
            head = fh.read(512)
    except OSError as exc:
        raise ValueError(f"{path} cannot be read ({exc.strerror or type(exc).__name__}).") from exc
    if not _HEAD.match(head):
        raise ValueError(f"{path} is not a store cfrag index wrote (no InMemoryDocumentStore JSON): "
                         "name another file; cfrag never replaces it.")


def save_memory_store(store: Any, path: Path) -> None:
    """Save an in-memory store as `save_to_disk` writes it, atomically (`common.files.replace_text`: a temporary file
    beside it, then a rename), its mode kept; temporary files of earlier saves that were killed are removed first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_leftovers(path)
    data = {**store.to_dict(), "documents": [d.to_dict(flatten=False) for d in store.storage.values()]}
    replace_text(path, json.dumps(data), mode=path.stat().st_mode & 0o777 if path.exists() else None)


class MemoryKind(StoreKind):
    """The in-memory store saved as JSON (module doc)."""

    name = "memory"
    usage = "memory:PATH.json"
    native = True

    def parse(self, location: str, name: str, shown: str) -> StoreSpec:
        if not location or name:
            raise ValueError(f"Store spec '{shown}': use {self.usage}.")
        file_path(location, shown, self.usage)
        return StoreSpec(self.name, location)

    def text(self, spec: StoreSpec) -> str:
        """The bare path where it reads back as the same spec (as users write it), else ``memory:PATH``."""
        return spec.location if ":" not in spec.location else f"memory:{spec.location}"

    def check(self, spec: StoreSpec, *, create: bool) -> None:
        path = Path(spec.location)
        if create and path.is_dir():
            raise ValueError(f"{path} is a folder: name a file")
        if not create and not path.exists():
            raise FileNotFoundError(f"no store at {path}: create it with `cfrag index FILES --store {spec}`")
        if path.exists():
            check_memory_store_file(path)

    def open(self, spec: StoreSpec, *, embedding_dim: int | None = None, create: bool = False,
             device: int | None = None) -> Any:
        return open_memory_store(Path(spec.location), create=create)

    def save(self, store: Any, spec: StoreSpec) -> None:
        save_memory_store(store, Path(spec.location))

    def embedding_retriever(self, store: Any, *, top_k: int = 5) -> Any:
        from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever  # noqa: PLC0415

        return InMemoryEmbeddingRetriever(document_store=store, top_k=top_k)

    def keyword_store(self, store: Any) -> Any:
        return store

    def held(self, store: Any) -> dict[str, Any] | None:
        return store.storage

    def lock_path(self, spec: StoreSpec) -> Path:
        return lock_beside(spec.location)

    def owns(self, store: Any) -> bool:
        from haystack.document_stores.in_memory import InMemoryDocumentStore  # noqa: PLC0415

        return isinstance(store, InMemoryDocumentStore)

    def files(self, spec: StoreSpec) -> set[Path]:
        return {Path(spec.location).resolve()}

    def beside(self, spec: StoreSpec, cache_dir: Path) -> Beside:
        base = Path(spec.location)
        folder = Path(f"{base.with_suffix('') if base.suffix == '.json' else base}.graph")
        return Beside(StoreSpec(self.name, str(folder / "nodes.json")), sqlite=folder / "graph.sqlite", folder=folder)


MEMORY = MemoryKind()

__all__ = ["MEMORY", "MemoryKind", "check_memory_store_file", "open_memory_store", "save_memory_store"]
