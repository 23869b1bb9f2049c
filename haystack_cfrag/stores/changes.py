"""What `cfrag index` does to a store: the passages it adds, replaces, removes and keeps.

A passage is known by its id; it carries the file it came from in `meta[SOURCE_KEY]` (an
absolute path, `indexing.source_of`). Against the store, the passages read now are:

- **added**: an id the store lacks;
- **replaced**: an id the store holds with other text or meta (Haystack's `DuplicatePolicy.OVERWRITE`);
- **kept**: an id the store holds as it is (never embedded or written again; a passage stored
  before sources were recorded, or from another file, gets its source written, not its vector);

and the store's passages are **removed** when their source is a file read now that no longer
gives them (an edited or shortened file), or, with `prune`, when their source file is gone.
Passages stored before sources were recorded are never removed.

>>> from haystack import Document

from haystack_cfrag.indexing import SOURCE_KEY, source_of
>>> from haystack.document_stores.in_memory import InMemoryDocumentStore
>>> store = InMemoryDocumentStore(index="changes_doctest")  # its own index: instances share one name's data
>>> _ = store.write_documents([Document(id="a", content="old", meta={SOURCE_KEY: "/f"}),
...                            Document(id="b", content="gone", meta={SOURCE_KEY: "/f"})])
>>> plan = plan_changes(store, [Document(id="a", content="new", meta={SOURCE_KEY: "/f"})], sources={"/f"})
>>> plan.summary()
'0 added, 1 replaced, 1 removed, 0 kept'
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from haystack import Document

from haystack_cfrag.indexing import SOURCE_KEY, source_of



@dataclass
class Changes:
    """The plan of one `cfrag index` run (module doc)."""

    add: list[Document] = field(default_factory=list)
    replace: list[Document] = field(default_factory=list)
    remove: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    retag: list[Document] = field(default_factory=list)
    """Kept passages written back with their source (the stored Document, its vector as stored)."""

    @property
    def to_embed(self) -> list[Document]:
        """The passages to embed: added and replaced."""
        return self.add + self.replace

    def changes_store(self) -> bool:
        """Whether the store's passages change (a source written back alone changes no passage)."""
        return bool(self.add or self.replace or self.remove)

    def summary(self) -> str:
        """e.g. '2 added, 1 replaced, 0 removed, 5 kept'."""
        return f"{len(self.add)} added, {len(self.replace)} replaced, {len(self.remove)} removed, {len(self.kept)} kept"


def plan_changes(store: Any | None, passages: list[Document], *, sources: Iterable[str] = (),
                 prune: bool = False) -> Changes:
    """What writing `passages` (unique ids) into `store` (None: a new store) adds, replaces, removes and keeps.

    :param sources: the source keys of the files read in this run: their stored passages that `passages`
        lack are removed.
    :param prune: also remove passages whose source is not a regular file any more.
    """
    from haystack_cfrag.stores.existing import documents_from, stored_documents  # noqa: PLC0415

    plan = Changes()
    held = stored_documents(store, [p.id for p in passages]) if store is not None else {}
    for doc in passages:
        old = held.get(doc.id)
        if old is None:
            plan.add.append(doc)
        elif not same_passage(old, doc):
            plan.replace.append(doc)
        else:
            plan.kept.append(doc.id)
            if old.meta.get(SOURCE_KEY) != doc.meta.get(SOURCE_KEY):
                plan.retag.append(replace(old, meta={**old.meta, SOURCE_KEY: doc.meta.get(SOURCE_KEY)}))
    if store is None:
        return plan
    ids = {p.id for p in passages}
    read = sorted(set(sources))
    if read:
        plan.remove += [d.id for d in documents_from(store, SOURCE_KEY, read) if d.id not in ids]
    if prune:
        seen = set(plan.remove)
        plan.remove += [d.id for d in documents_from(store, SOURCE_KEY)
                        if d.id not in ids and d.id not in seen and not _is_file(d.meta[SOURCE_KEY])]
    plan.remove = list(dict.fromkeys(plan.remove))
    return plan


def same_passage(stored: Document, new: Document) -> bool:
    """Same text and same meta (the source key aside; meta compared as JSON, as a saved store reads it back)."""
    return (stored.content or "") == (new.content or "") and _meta(stored) == _meta(new)


def _meta(doc: Document) -> str:
    return json.dumps({k: v for k, v in doc.meta.items() if k != SOURCE_KEY}, sort_keys=True, default=str)


def _is_file(path: Any) -> bool:
    try:
        return isinstance(path, str) and stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def apply_changes(store: Any, plan: Changes, embedded: list[Document]) -> int:
    """Remove, write back sources, and write the embedded passages (added and replaced); how many were written.

    Replaced passages are deleted before they are written again where the store cannot overwrite a vector
    (a FAISS index that cannot remove one is rebuilt once, `removal.delete_documents`)."""
    from haystack.document_stores.types import DuplicatePolicy  # noqa: PLC0415

    from haystack_cfrag.stores.removal import delete_documents  # noqa: PLC0415

    faiss = type(store).__name__.endswith("FAISSDocumentStore")
    gone = plan.remove + ([d.id for d in plan.replace] if faiss else [])
    if gone:
        delete_documents(store, gone)
    _retag(store, plan.retag)
    return store.write_documents(embedded, policy=DuplicatePolicy.OVERWRITE) if embedded else 0


def _retag(store: Any, docs: list[Document]) -> None:
    """Write each kept passage's source into the stored Document; its vector stays as it is."""
    if not docs:
        return
    for attribute in ("documents", "storage"):  # faiss-haystack, InMemory: the dict holds the Document
        held = getattr(store, attribute, None)
        if isinstance(held, dict):
            for doc in docs:
                if doc.id in held:
                    held[doc.id] = replace(held[doc.id], meta=doc.meta)
            return
    from haystack.document_stores.types import DuplicatePolicy  # noqa: PLC0415

    with_vectors = [d for d in docs if d.embedding is not None]  # pgvector, Qdrant: written back with the vector read
    if with_vectors:
        store.write_documents(with_vectors, policy=DuplicatePolicy.OVERWRITE)


__all__ = ["SOURCE_KEY", "Changes", "apply_changes", "plan_changes", "same_passage", "source_of"]
