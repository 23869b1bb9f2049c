"""``qdrant:PATH[#COLLECTION]`` (local mode, a folder), ``qdrant:http://HOST:6333[#COLLECTION]`` (a server) or
``qdrant::memory:``: qdrant-haystack's store, cosine.

A local store's files are checked before the client opens any (`check_folder`, `stores.safe_files`), its
dimensions read from its meta.json the same way. A server's client has `timeouts.QDRANT_SECONDS` per request and
its key from QDRANT_API_KEY, never the URL; its collection's lock is a file in the cache (this machine's writers
only). A collection name is a plain name (a local store keeps it as a folder).

>>> QDRANT.parse("stores/q/", "", "qdrant:stores/q/")
StoreSpec(kind='qdrant', location='stores/q', name='cfrag')
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from haystack_cfrag.stores.kinds.base import (
    LOCK_SUFFIX,
    NODE_SUFFIX,
    Beside,
    StoreKind,
    file_path,
    instance_of,
    lock_beside,
)
from haystack_cfrag.stores.safe_files import check_file, read_json
from haystack_cfrag.stores.specs import StoreSpec
from haystack_cfrag.stores.timeouts import QDRANT_SECONDS

DEFAULT_COLLECTION = "cfrag"
MAX_COLLECTION = 100
_COLLECTION = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*")


def _local(spec: StoreSpec) -> Path | None:
    """The folder of a local store; None for a server or ``:memory:``."""
    return None if spec.location == ":memory:" or spec.location.startswith(("http://", "https://")) \
        else Path(spec.location)


def check_folder(folder: Path) -> None:
    """The files a local Qdrant client reads when it opens `folder` (its meta.json, each collection's storage):
    regular files of bounded size, before the client opens any (`safe_files`)."""
    if not folder.is_dir():
        return
    try:
        check_file(folder / "meta.json", "meta", folder=folder)
    except FileNotFoundError:
        return
    collections = folder / "collection"
    if not collections.is_dir() or collections.is_symlink():
        return
    for sub in list(collections.iterdir())[:1000]:
        if sub.is_symlink() or not sub.is_dir():
            raise ValueError(f"{sub} is not a folder of a local Qdrant store; nothing read.")
        for path in list(sub.iterdir())[:100]:
            check_file(path, "sqlite", folder=sub)


def _meta(folder: Path) -> dict[str, Any] | None:
    """A local store's meta.json (read checked), None when it is not one."""
    try:
        meta = read_json(folder / "meta.json", "meta")
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) and isinstance(meta.get("collections"), dict) else None


class QdrantKind(StoreKind):
    """The Qdrant store (module doc)."""

    name = "qdrant"
    usage = "qdrant:PATH, qdrant:http://HOST:6333 or qdrant::memory:"

    def parse(self, location: str, name: str, shown: str) -> StoreSpec:
        if not location:
            raise ValueError(f"Store spec '{shown}': use {self.usage}.")
        if location != ":memory:" and not location.startswith(("http://", "https://")):
            location = location.rstrip("/") or location  # a local store is a folder: qdrant:DIR/ is qdrant:DIR
            file_path(location, shown, "qdrant:DIR[#COLLECTION]")
        name = name or DEFAULT_COLLECTION
        if len(name) > MAX_COLLECTION or not _COLLECTION.fullmatch(name) or ".." in name:
            raise ValueError(f"Store spec '{shown[:120]}': collection name '{name[:70]}' must be letters, digits, "
                             f"'_', '-' and single dots, at most {MAX_COLLECTION} characters (no '/' or '..': a "
                             "local store keeps it as a folder).")
        return StoreSpec(self.name, location, name)

    def check(self, spec: StoreSpec, *, create: bool) -> None:
        if spec.password is not None:
            raise ValueError(f"'{spec}': a Qdrant server's key is read from QDRANT_API_KEY, not from its URL")
        local = _local(spec)
        if local is None:
            return
        if not create and not local.exists():
            raise FileNotFoundError(f"no store at {local}: create it with `cfrag index FILES --store {spec}`")
        if local.exists() and not local.is_dir():
            raise ValueError(f"{local} is not a folder: a local Qdrant store is the folder cfrag index wrote")
        if create and local.is_dir() and any(local.iterdir()) and _meta(local) is None:
            shown = ", ".join(sorted(p.name for p in local.iterdir())[:5])
            raise ValueError(f"{local} holds files that are not a local Qdrant store ({shown}): Qdrant would write "
                             "its meta.json and collection/ among them; name a new folder or one cfrag index wrote")
        if not create and not (local / "collection" / spec.name).is_dir():
            raise ValueError(f"no Qdrant collection '{spec.name}' in {local}: create it with "
                             f"`cfrag index FILES --store {spec}`")

    def open(self, spec: StoreSpec, *, embedding_dim: int | None = None, create: bool = False,
             device: int | None = None) -> Any:
        from haystack_integrations.document_stores.qdrant import QdrantDocumentStore  # noqa: PLC0415

        if spec.password is not None:
            self.check(spec, create=create)
        local = _local(spec)
        where: dict[str, Any] = {"location": ":memory:"} if spec.location == ":memory:" else \
            {"path": spec.location} if local is not None else {"url": spec.location, "timeout": int(QDRANT_SECONDS)}
        if local is not None:
            check_folder(local)
        if not create:
            if not self._collection(spec):
                raise FileNotFoundError(f"No Qdrant collection '{spec.name}' at {spec.location}: create it with "
                                        f"`cfrag index FILES --store {spec}`.")
            if embedding_dim is None:
                embedding_dim = self._collection(spec, dim=True)
        elif embedding_dim is None:
            raise ValueError("A new Qdrant collection needs embedding_dim.")
        return QdrantDocumentStore(**where, index=spec.name, embedding_dim=embedding_dim or 768, similarity="cosine",
                                   return_embedding=True, recreate_index=False)

    @staticmethod
    def _collection(spec: StoreSpec, dim: bool = False) -> Any:
        """Whether the collection exists (with `dim`: its vectors' size), asked without locking a local folder."""
        local = _local(spec)
        if local is not None:  # local mode locks its folder: its files are read (the configuration in meta.json)
            held = (local / "collection" / spec.name).is_dir()
            return read_json(local / "meta.json", "meta")["collections"][spec.name]["vectors"]["size"] if dim else held
        if spec.location == ":memory:":
            return None if dim else False
        from qdrant_client import QdrantClient  # noqa: PLC0415

        with contextlib.closing(QdrantClient(url=spec.location, timeout=int(QDRANT_SECONDS))) as client:
            if dim:
                return getattr(client.get_collection(spec.name).config.params.vectors, "size", None)
            return bool(client.collection_exists(spec.name))

    def close(self, store: Any) -> None:
        client = getattr(store, "_client", None)  # local mode locks its folder until the client closes
        if client is not None and hasattr(client, "close"):
            client.close()
            store._client = None

    def embedding_retriever(self, store: Any, *, top_k: int = 5) -> Any:
        from haystack_integrations.components.retrievers.qdrant import QdrantEmbeddingRetriever  # noqa: PLC0415

        return QdrantEmbeddingRetriever(document_store=store, top_k=top_k, return_embedding=True)

    def lock_path(self, spec: StoreSpec) -> Path | None:
        if spec.location == ":memory:":
            return None
        if _local(spec) is None:
            from haystack_cfrag import models  # noqa: PLC0415

            digest = hashlib.sha256(f"{spec.location}#{spec.name}".encode()).hexdigest()[:16]
            return models.cache_dir() / "locks" / f"qdrant-{digest}{LOCK_SUFFIX}"
        return lock_beside(spec.location)

    def owns(self, store: Any) -> bool:
        return instance_of(store, "haystack_integrations.document_stores.qdrant", "QdrantDocumentStore")

    def beside(self, spec: StoreSpec, cache_dir: Path) -> Beside:
        nodes = replace(spec, name=spec.name + NODE_SUFFIX)
        if _local(spec) is None:
            digest = hashlib.sha256(f"{spec.location}#{spec.name}".encode()).hexdigest()[:16]
            return Beside(nodes, sqlite=cache_dir / f"qdrant-{digest}.graph.sqlite")
        folder = Path(f"{spec.location}.{spec.name}.graph")
        return Beside(nodes, sqlite=folder / "graph.sqlite", folder=folder)


QDRANT = QdrantKind()

__all__ = ["DEFAULT_COLLECTION", "QDRANT", "QdrantKind", "check_folder"]
