"""`StoreKind`: what varies between the document stores, as one object per kind; a file store's shared parts.

The defaults are those of a store written through to a database: no save, no keyword retriever of its
own (BM25 reads an in-memory copy, `mirror`), deletion by id. A file store names a file (`file_path`), is
locked beside it (`lock_beside`) and leaves temporary files when a save is killed (`remove_leftovers`).

>>> Beside(StoreSpec("memory", "s.graph/nodes.json"), sqlite=Path("s.graph/graph.sqlite")).postgres is None
True
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from haystack import logging

from haystack_cfrag.stores.specs import StoreSpec

logger = logging.getLogger(__name__)
LOCK_SUFFIX = ".cfrag-lock"
NODE_SUFFIX = "_graph_vectors"
"""A database store's graph's node vectors: table or collection NAME_graph_vectors."""


@dataclass(frozen=True)
class Beside:
    """Where a store keeps its graph: a node store of its kind, and tables in an SQLite file or in its database."""

    nodes: StoreSpec
    sqlite: Path | None = None
    postgres: str | None = None  # the tables' prefix in the node store's database
    folder: Path | None = None  # the package's own folder of a file store's graph (`causal_rag.graph_folder`)


class StoreKind(Protocol):
    """One kind of store (module doc); subclass it and override what differs from the defaults."""

    name: str
    usage: str
    """The spec's form, for messages, e.g. ``faiss:PATH[#INDEX]``."""
    native: bool = False
    """Haystack's in-memory components read it as it is (the shipped pipeline files' retrievers, BM25)."""
    overwrites: bool = True
    """A write with `DuplicatePolicy.OVERWRITE` replaces a held document's vector (FAISS: it is deleted first)."""

    def parse(self, location: str, name: str, shown: str) -> StoreSpec:
        """The spec of the text after ``KIND:``, its names checked; ValueError naming `shown` (no password)."""
        raise NotImplementedError

    def text(self, spec: StoreSpec) -> str:
        """The spec as a user writes it (never with a password: `StoreSpec` holds none in its text)."""
        return f"{spec.kind}:{spec.location}" + (f"#{spec.name}" if spec.name else "")

    def check(self, spec: StoreSpec, *, create: bool) -> None:
        """Refuse in one line, before anything loads or connects, what cannot be read (written, with `create`)."""

    def open(self, spec: StoreSpec, *, embedding_dim: int | None = None, create: bool = False,
             device: int | None = None) -> Any:
        """The store; FileNotFoundError when it does not exist and not `create` (nothing is created then)."""
        raise NotImplementedError

    def save(self, store: Any, spec: StoreSpec) -> None:
        """Persist what needs persisting (atomically); stores written through to their home need nothing."""

    def close(self, store: Any) -> None:
        """Release what the store holds open (a client, a connection)."""

    def delete(self, store: Any, ids: Sequence[str]) -> None:
        """Delete the documents `ids`, which the store holds."""
        store.delete_documents(list(ids))

    def embedding_retriever(self, store: Any, *, top_k: int = 5) -> Any:
        """The Haystack embedding retriever that reads `store`."""
        raise NotImplementedError

    def keyword_retriever(self, store: Any, *, top_k: int = 5) -> Any | None:
        """The store's own keyword retriever; None: BM25 in memory reads `keyword_store(store)`."""
        return None

    def keyword_store(self, store: Any) -> Any:
        """The store BM25 in memory reads: a copy of the documents (`mirror`)."""
        return mirror(store, self.name)

    def held(self, store: Any) -> dict[str, Any] | None:
        """The id -> Document dict of a store that keeps one (read by key); None: ask the store."""
        return None

    def slim(self, store: Any) -> None:
        """Before a graph's node store is saved: drop what its index holds already (FAISS: the vectors)."""

    def lock_path(self, spec: StoreSpec) -> Path | None:
        """The file `stores.lock` locks for one writer; None when the kind locks otherwise or needs no lock."""
        return None

    def acquire(self, spec: StoreSpec, wait: float, notify: Callable[[str], None] | None) -> Callable[[], None] | None:
        """Hold the store's writer lock and return its release; None: `stores.lock` locks `lock_path`."""
        return None

    def owns(self, store: Any) -> bool:
        """Whether `store` is a store of this kind."""
        raise NotImplementedError

    def files(self, spec: StoreSpec) -> set[Path]:
        """The files the store is saved as (resolved); none for a database."""
        return set()

    def beside(self, spec: StoreSpec, cache_dir: Path) -> Beside:
        """Where the store's graph lives (`causal_rag.stored_graph`)."""
        raise NotImplementedError


def mirror(store: Any, what: str) -> Any:
    """An in-memory copy of `store`'s documents with text, for BM25 (logged, once per store; the store is only read)."""
    from haystack import Document  # noqa: PLC0415
    from haystack.document_stores.in_memory import InMemoryDocumentStore  # noqa: PLC0415

    documents = [Document(id=d.id, content=d.content, meta=dict(d.meta)) for d in store.filter_documents() if d.content]
    logger.warning("{kind} has no keyword retriever of its own: BM25 reads an in-memory copy of its {n} documents",
                   kind=what, n=len(documents))
    copy = InMemoryDocumentStore()
    copy.write_documents(documents)
    return copy


def instance_of(store: Any, module: str, name: str) -> bool:
    """Whether `store` is an instance of `module.name`, without importing the module (when it is not imported,
    no store of its class exists): asking a kind whether it owns a store costs nothing.

    >>> instance_of(object(), "haystack_integrations.document_stores.not_imported", "Store")
    False
    """
    cls = getattr(sys.modules.get(module), name, None)
    return isinstance(cls, type) and isinstance(store, cls)


# ---------------------------------------------------------------- file stores
def file_path(location: str, shown: str, usage: str) -> None:
    """Refuse a path that names no file: ``DIR/`` (its files would be written beside the folder), ``.``, ``..``."""
    if location.endswith(("/", os.sep)):
        raise ValueError(f"Store spec '{shown}': '{location}' ends with '/', a folder; name the store inside it: "
                         f"{usage}.")
    if Path(location).name in ("", ".", ".."):
        raise ValueError(f"Store spec '{shown}': '{location}' names a folder, not a store; use {usage}.")


def lock_beside(location: str) -> Path:
    """The lock file beside a file store: ``DIR/.NAME.cfrag-lock``.

    >>> lock_beside("stores/demo").as_posix()
    'stores/.demo.cfrag-lock'
    """
    base = Path(location)
    return base.parent / f".{base.name}{LOCK_SUFFIX}"


def temporary_name(base: Path, *, commit: bool = False) -> re.Pattern[str]:
    """The names `tempfile` gives a save's temporary file or folder beside `base` (8 random characters); with
    `commit`, a FAISS commit record's temporary file too."""
    name = re.escape(base.name)
    head = rf"(\.{name}|\.\.{name}\.cfrag-commit)" if commit else rf"\.{name}"
    return re.compile(rf"{head}\.[a-z0-9_]{{8}}\.tmp")


def remove_leftovers(base: Path) -> list[Path]:
    """Remove the temporary files and folders killed saves left beside a store (this user's, never links)."""
    pattern, removed = temporary_name(base, commit=True), []
    try:
        entries = list(base.parent.iterdir())
    except OSError:
        return []
    for path in entries:
        if not pattern.fullmatch(path.name):
            continue
        try:
            info = path.lstat()
        except OSError:
            continue
        if info.st_uid != os.getuid() or stat.S_ISLNK(info.st_mode):
            continue
        if stat.S_ISDIR(info.st_mode):
            shutil.rmtree(path, ignore_errors=True)
        elif stat.S_ISREG(info.st_mode):
            path.unlink(missing_ok=True)
        removed.append(path)
    return removed


def is_real_dir(path: Path) -> bool:
    """A folder, not a link to one."""
    try:
        return stat.S_ISDIR(path.lstat().st_mode)
    except OSError:
        return False


__all__ = ["LOCK_SUFFIX", "NODE_SUFFIX", "Beside", "StoreKind", "file_path", "instance_of", "is_real_dir",
           "lock_beside", "mirror", "remove_leftovers", "temporary_name"]
