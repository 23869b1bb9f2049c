"""What writing passages does to a store: the passages it adds, replaces, removes and keeps (`plan_changes`).

A passage is known by its id and carries where it came from (`stores.sources`: `SOURCE_KEY`, `ALSO_KEY`,
`ROOT_KEY`). Against the store, a passage read now is **added** (an id the store lacks), **replaced** (an id it
holds with other text or meta) or **kept** (held as it is: never embedded or written again; where it came from
written back when that changes, its vector as stored: `Changes.retag`).

A stored passage is **removed** only when no file that gave it is left: the files read now give it no more and
(with `prune`) every other one is provably gone (`os.stat`: no such file). A file that could not be read or
checked, gave no text or was too large keeps its passages (`Changes.held`). A copy indexed later is one more source
of what it shares with the original, never its owner (a copy edited since stays a source until read as the owner:
kept longer, never lost). Passages stored before sources were recorded are never removed. `prune` refuses
(`Changes.refusal`, nothing written) past `max_share` of the store's files, or for every passage of a folder that
no longer exists or is empty (an unmounted disk), unless `force`.

>>> store = InMemoryDocumentStore(index="changes_doctest")  # its own index: instances share one name's data
>>> _ = store.write_documents([Document(id="a", content="old", meta={SOURCE_KEY: "/f"}),
...                            Document(id="b", content="gone", meta={SOURCE_KEY: "/f"})])
>>> plan = plan_changes(store, [Document(id="a", content="new", meta={SOURCE_KEY: "/f"})], sources={"/f"})
>>> plan.summary(), plan.files
('0 added, 1 replaced, 1 removed, 0 kept', {'/f': {'replaced': 1, 'removed': 1}})
"""

from __future__ import annotations

import functools
import os
import stat
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from haystack import Document
from haystack.document_stores.in_memory import InMemoryDocumentStore  # noqa: F401  (the doctest's store)

from haystack_cfrag.stores.sources import ALSO_KEY, BOOKKEEPING, ROOT_KEY, SOURCE_KEY, same_text

MAX_PRUNE_SHARE = 0.5
"""The largest share of a store's files whose passages `prune` removes without `force`."""
GONE = "gone"


@dataclass
class Changes:
    """The plan of one write (module doc)."""

    add: list[Document] = field(default_factory=list)
    replace: list[Document] = field(default_factory=list)
    remove: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    retag: list[Document] = field(default_factory=list)
    """Kept passages written back with where they came from (the stored Document, its vector as stored)."""
    files: dict[str, dict[str, int]] = field(default_factory=dict)
    """Source file -> how many of its passages are added, replaced, removed, kept."""
    held: dict[str, str] = field(default_factory=dict)
    """Source file not read, or not provably gone -> why its stored passages are kept (with how many)."""
    refusal: str = ""
    """Why `prune` refuses (one line; nothing is written), "" when it does not."""

    @property
    def to_embed(self) -> list[Document]:
        """The passages to embed: added and replaced."""
        return self.add + self.replace

    def changes_store(self) -> bool:
        """Whether the store's passages change (a source written back alone changes no passage)."""
        return bool(self.add or self.replace or self.remove)

    def summary(self) -> str:
        """e.g. '2 added, 1 replaced, 0 removed, 5 kept', then the files whose passages are kept unread."""
        held = "; ".join(f"kept: {os.path.basename(f)} {why}" for f, why in sorted(self.held.items()))
        return (f"{len(self.add)} added, {len(self.replace)} replaced, {len(self.remove)} removed, "
                f"{len(self.kept)} kept" + (f"; {held}" if held else ""))

    def by_file(self) -> list[str]:
        """One line a file ('/abs/a.md: 1 added, 2 kept'), then those kept unread ('/abs/c.pdf: kept, …')."""
        lines = [f"{f}: " + ", ".join(f"{n} {what}" for what, n in counts.items()) for f, counts in sorted(
            self.files.items())]
        return lines + [f"{f}: kept, {why}" for f, why in sorted(self.held.items())]

    def _count(self, doc: Document | None, what: str, file: str | None = None) -> None:
        name = file or str((doc.meta if doc is not None else {}).get(SOURCE_KEY) or "(no file)")
        counts = self.files.setdefault(name, {})
        counts[what] = counts.get(what, 0) + 1


def plan_changes(store: Any | None, passages: list[Document], *, sources: Iterable[str] = (),
                 prune: bool = False, unread: Mapping[str, str] | None = None, force: bool = False,
                 max_share: float = MAX_PRUNE_SHARE) -> Changes:
    """What writing `passages` (unique ids) into `store` (None: a new store) adds, replaces, removes, keeps.

    :param sources: the source keys of the files read now: their stored passages that `passages` lack, and
        that no other file gave, are removed.
    :param prune: also remove the passages whose every file is provably gone (module doc).
    :param unread: source key -> why that file was not read (`Passages.kept`): reported when the store holds
        passages of it (they are kept).
    :param force: prune even past the guard (`max_share`, a folder gone).
    """
    from haystack_cfrag.stores.existing import documents_from, stored_documents  # noqa: PLC0415

    plan, read, state = Changes(), set(sources), functools.cache(_state)  # each path asked once a plan
    held = stored_documents(store, [p.id for p in passages]) if store is not None else {}
    for doc in passages:
        old = held.get(doc.id)
        if old is None:
            plan.add.append(doc)
            plan._count(doc, "added")
        elif not same_text(old, doc):
            marks = _marks(doc, old, read, state, carry=False)
            plan.replace.append(replace(doc, meta={**_plain(doc), **marks}))
            plan._count(doc, "replaced")
        else:
            plan.kept.append(doc.id)
            plan._count(doc, "kept")
            if doc.meta.get(SOURCE_KEY) and (marks := _marks(doc, old, read, state)) != _marks_of(old):
                plan.retag.append(replace(old, meta={**_plain(old), **marks}))
    if store is None:
        return plan
    given = {p.id for p in passages}
    unread = unread or {}
    held_unread = documents_from(store, SOURCE_KEY, sorted(unread))
    for file, n in Counter(d.meta[SOURCE_KEY] for d in held_unread).items():
        plan.held[file] = f"{unread[file]} ({n} passage{'s' if n != 1 else ''})"
    for doc in documents_from(store, SOURCE_KEY, sorted(read)) if read else []:
        if doc.id not in given:  # a file read now gives it no more: the others that gave it keep it
            _drop(plan, doc, [s for s in _sources(doc) if s not in read and not (prune and state(s) == GONE)])
    if prune:
        _prune(plan, documents_from(store, SOURCE_KEY), given, state, force, max_share)
    plan.remove = list(dict.fromkeys(plan.remove))
    return plan


def _prune(plan: Changes, every: list[Document], given: set[str], state: Callable[[str], str | None],
           force: bool, max_share: float) -> None:
    """The passages whose every file is provably gone, removed unless the guard refuses (module doc)."""
    done = given | set(plan.remove) | {d.id for d in plan.retag}
    gone: list[Document] = []
    unsure: Counter[str] = Counter()
    for doc in every:
        if doc.id in done:
            continue
        left = [s for s in _sources(doc) if state(s) != GONE]
        if not left:
            gone.append(doc)
            continue
        if all(state(s) is not None for s in left):  # none of them a file now: kept, and said why
            unsure[left[0]] += 1
        if left != _sources(doc):
            _drop(plan, doc, left)
    for file, n in unsure.items():
        plan.held.setdefault(file, f"{state(file)} ({n} passage{'s' if n != 1 else ''})")
    if not gone:
        return
    files = {d.meta[SOURCE_KEY] for d in every}
    lost = {d.meta[SOURCE_KEY] for d in gone}
    why = ""
    if len(lost) > max_share * len(files):
        why = f"the passages of {len(lost)} of the {len(files)} files the store holds passages of"
    else:
        roots, lost_roots = Counter(map(_root, every)), Counter(map(_root, gone))
        why = next((f"every passage of {root}, which {what}" for root, n in sorted(lost_roots.items())
                    if n == roots[root] and (what := _folder_gone(root))), "")
    if why and not force:
        plan.refusal = (f"--prune would remove {why}; nothing written: if they were moved or are not "
                        "mounted, index them where they are now, or run again with --prune --force to remove "
                        "them.")
        return
    for doc in gone:
        plan.remove.append(doc.id)
        plan._count(doc, "removed")


def _drop(plan: Changes, doc: Document, left: list[str]) -> None:
    """A stored passage given now by none of the files read: removed when no file is `left`, else theirs."""
    if not left:
        plan.remove.append(doc.id)
        plan._count(doc, "removed")
        return
    owner = doc.meta.get(SOURCE_KEY)
    if owner not in left:
        owner = left[0]
    marks = {SOURCE_KEY: owner, **({ALSO_KEY: [s for s in left if s != owner]} if len(left) > 1 else {})}
    if owner == doc.meta.get(SOURCE_KEY) and ROOT_KEY in doc.meta:
        marks[ROOT_KEY] = doc.meta[ROOT_KEY]
    plan.retag.append(replace(doc, meta={**_plain(doc), **marks}))


def _marks(doc: Document, old: Document, read: set[str], state: Callable[[str], str | None], *,
           carry: bool = True) -> dict[str, Any]:
    """Where a passage read now came from, the files that gave it before and are left (`carry`) included: its
    owner stays the stored one while that file is left or gives it now (a copy never takes it over)."""
    now = [doc.meta[SOURCE_KEY], *doc.meta.get(ALSO_KEY, ())] if doc.meta.get(SOURCE_KEY) else []
    if not now:
        return _marks_of(doc)
    carried = [s for s in _sources(old) if carry and s not in read and s not in now and state(s) != GONE]
    owner, root = now[0], doc.meta.get(ROOT_KEY)
    if (stored := old.meta.get(SOURCE_KEY)) in carried or stored in now:  # its file stays its owner (and root)
        owner, root = stored, old.meta.get(ROOT_KEY) or root
    others = list(dict.fromkeys(s for s in [*now, *carried] if s != owner))
    return {SOURCE_KEY: owner, **({ROOT_KEY: root} if root else {}), **({ALSO_KEY: others} if others else {})}


def _marks_of(doc: Document) -> dict[str, Any]:
    return {k: doc.meta[k] for k in BOOKKEEPING if k in doc.meta}


def _plain(doc: Document) -> dict[str, Any]:
    return {k: v for k, v in doc.meta.items() if k not in BOOKKEEPING}


def _sources(doc: Document) -> list[str]:
    """The files that gave a stored passage: its own, then the others."""
    also = doc.meta.get(ALSO_KEY)
    found = [doc.meta.get(SOURCE_KEY), *(also if isinstance(also, list) else ())]
    return list(dict.fromkeys(s for s in found if isinstance(s, str) and s))


def _root(doc: Document) -> str:
    return str(doc.meta.get(ROOT_KEY) or os.path.dirname(str(doc.meta.get(SOURCE_KEY))))


def _state(path: str) -> str | None:
    """None for a regular file, `GONE` when provably gone, else why its passages are kept."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return GONE
    except (OSError, ValueError) as exc:  # a permission, an I/O error, a stale NFS handle: not proof of it
        return f"could not be checked ({getattr(exc, 'strerror', None) or type(exc).__name__})"
    return None if stat.S_ISREG(mode) else "is not a regular file"


def _folder_gone(root: str) -> str:
    """'no longer exists' or 'is empty' (an unmounted disk's mount point) for a folder indexed, else ''."""
    try:
        return "" if os.listdir(root) else "is empty"
    except (FileNotFoundError, NotADirectoryError):
        return "no longer exists"
    except OSError:
        return ""


def apply_changes(store: Any, plan: Changes, embedded: list[Document]) -> int:
    """Remove, write back sources, write the embedded passages (added and replaced); how many were written.
    Where a store cannot overwrite a vector, replaced passages are deleted first (`removal.delete_documents`)."""
    from haystack.document_stores.types import DuplicatePolicy  # noqa: PLC0415

    from haystack_cfrag.stores.kinds import kind_of  # noqa: PLC0415
    from haystack_cfrag.stores.removal import delete_documents  # noqa: PLC0415

    kind = kind_of(store)
    gone = plan.remove + ([d.id for d in plan.replace] if kind is not None and not kind.overwrites else [])
    if gone:
        delete_documents(store, gone)
    _retag(store, plan.retag)
    return store.write_documents(embedded, policy=DuplicatePolicy.OVERWRITE) if embedded else 0


def _retag(store: Any, docs: list[Document]) -> None:
    """Write each kept passage's source into the stored Document; its vector stays as it is."""
    from haystack.document_stores.types import DuplicatePolicy  # noqa: PLC0415

    from haystack_cfrag.stores.kinds import held_documents  # noqa: PLC0415

    if (held := held_documents(store) if docs else None) is not None:  # the dict that holds the Documents
        for doc in docs:
            if doc.id in held:
                held[doc.id] = replace(held[doc.id], meta=doc.meta)
        return
    with_vectors = [d for d in docs if d.embedding is not None]  # written back with the vector read
    if with_vectors:
        store.write_documents(with_vectors, policy=DuplicatePolicy.OVERWRITE)


__all__ = ["MAX_PRUNE_SHARE", "Changes", "apply_changes", "plan_changes"]
