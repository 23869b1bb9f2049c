"""A FAISS store's two files (`PATH.faiss`, `PATH.json`): read checked, saved atomically.

Reading (`load_store`) is `FAISSDocumentStore.load` through `faiss_header.read_index` and `safe_files.read_json`:
both files are checked before either is parsed, and anything else is one line naming the file.

Saving (`save_pair`) writes both files into a new temporary folder, names it in a commit record
(`.PATH.cfrag-commit`, one rename), then moves the two files in: a save killed between the moves is finished when
the store is next opened or saved (`finish_interrupted_save`), one killed before its record leaves the old pair.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any

from haystack import logging

from haystack_cfrag.common.files import replace_text
from haystack_cfrag.stores.kinds.base import is_real_dir, remove_leftovers, temporary_name
from haystack_cfrag.stores.kinds.faiss_header import read_index
from haystack_cfrag.stores.safe_files import check_file, read_json

logger = logging.getLogger(__name__)

SUFFIXES = (".json", ".faiss")
"""The files of a FAISS store, in the order they are moved in (the index last: a reader keys on .faiss)."""


def load_store(store: Any, base: str | Path) -> None:
    """Read `base`.faiss and `base`.json into `store` (a `FAISSDocumentStore`), checked.

    :raises FileNotFoundError: a file is missing.
    :raises ValueError: one line naming the file that is not a store's.
    """
    from haystack import Document  # noqa: PLC0415

    base = Path(base)
    index_path, json_path = base.with_suffix(".faiss"), base.with_suffix(".json")
    check_file(json_path, "json")  # both looked at before either is read
    index = read_index(index_path)
    data = read_json(json_path, "json")
    try:
        documents = {d["id"]: Document.from_dict(d) for d in data["documents"]}
        id_map = {int(k): str(v) for k, v in data["id_map"].items()}
        inverse = {str(k): int(v) for k, v in data["inverse_id_map"].items()}
        next_id = int(data["next_id"])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"{json_path} is not the documents of a FAISS store cfrag index wrote "
                         f"({type(exc).__name__}: {' '.join(str(exc).split())[:80]}); nothing read.") from exc
    if len(id_map) != index.ntotal:  # as faiss-haystack's own load: said, not refused
        logger.warning("{base}: {index} holds {n} vectors, {docs} maps {m}: the pair may be out of step",
                       base=str(base), index=index_path.name, n=index.ntotal, docs=json_path.name, m=len(id_map))
    store.index = index
    store.documents, store.id_map, store.inverse_id_map, store._next_id = documents, id_map, inverse, next_id


def save_pair(store: Any, base: Path) -> None:
    """Save a FAISS store's two files atomically (module doc): a new folder, a commit record, two moves."""
    base.parent.mkdir(parents=True, exist_ok=True)
    finish_interrupted_save(base)
    remove_leftovers(base)
    folder = Path(tempfile.mkdtemp(prefix=f".{base.name}.", suffix=".tmp", dir=base.parent))  # a new, unique name
    commit = _commit_record(base)
    committed = False
    try:
        store.save(folder / base.name)  # writes NAME.faiss and NAME.json
        replace_text(commit, json.dumps({"folder": folder.name}))  # from here on the new pair is the store
        committed = True
        _move_pair(folder, base)
        commit.unlink()
        committed = False
    finally:
        if not committed:  # a failure before the commit: the old pair stands; after it: finished on next open
            shutil.rmtree(folder, ignore_errors=True)


def _commit_record(base: Path) -> Path:
    return base.parent / f".{base.name}.cfrag-commit"


def finish_interrupted_save(base: Path) -> bool:
    """Complete a FAISS save killed after its commit record (which must name a temporary save's folder beside the
    store): its regular files moved in, the record and folder removed. True when there was a save to finish.

    :raises ValueError: the record is not one this package wrote, or the files cannot be moved.
    """
    commit = _commit_record(base)
    try:
        name = read_json(commit, "meta")["folder"]  # a regular file of a few bytes: never a FIFO's endless wait
    except FileNotFoundError:
        return False
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{commit} is not a commit record cfrag wrote; move it away to open "
                         f"{base}.") from exc
    if not isinstance(name, str) or not temporary_name(base).fullmatch(name):
        raise ValueError(f"{commit} is not a commit record cfrag wrote; move it away to open {base}.")
    folder = base.parent / name
    try:
        if is_real_dir(folder):
            _move_pair(folder, base)
            logger.warning("{base}: finished an interrupted save (the new files moved in)", base=str(base))
        commit.unlink()
    except OSError as exc:
        raise ValueError(f"{base}: an interrupted save cannot be finished ({exc.strerror or exc}); "
                         "run cfrag index again with write access.") from exc
    if is_real_dir(folder):
        shutil.rmtree(folder, ignore_errors=True)
    return True


def _move_pair(folder: Path, base: Path) -> None:
    for suffix in SUFFIXES:
        source = (folder / base.name).with_suffix(suffix)
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISREG(source.lstat().st_mode):
                os.replace(source, base.with_suffix(suffix))


__all__ = ["SUFFIXES", "finish_interrupted_save", "load_store", "save_pair"]
