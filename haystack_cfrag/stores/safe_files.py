"""Reading a store's files without trusting them: only regular files of bounded size, never through a link out.

Every file a store or its graph is read from goes through `open_checked` (or `check_file` where a library opens the
path itself): `lstat` first, so a FIFO, device, socket or folder is refused before anything opens it; a link is
followed only to a regular file in the same folder; the size is checked against its kind's cap (`MAX_BYTES`, and
this machine's memory for a file read whole). The file is then opened without following links and checked again on
its descriptor: what is read is what was checked. Every refusal is one line naming the file.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "s.json"; _ = p.write_text('{"documents": []}')
    >>> read_json(p, "json")
    {'documents': []}
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import IO, Any

GIB = 1 << 30
MAX_BYTES = {
    "json": 16 * GIB,  # a JSON store or a FAISS store's documents (100,468 passages: 0.9 GB)
    "faiss": 64 * GIB,  # a FAISS index (its header's claim is checked too: `faiss_header`)
    "sqlite": 64 * GIB,  # the graph's tables (100,468 passages: 0.6 GB); read by pages, never whole
    "meta": 64 << 20,  # a small metadata file (a local Qdrant store's meta.json)
    "run": 16 * GIB,  # a `cfrag eval` folder's records, metadata or graph stats, or a replay archive
}
"""The largest file of each kind that is read at all."""
READ_WHOLE = ("json", "faiss", "run")
"""Kinds read whole into memory: also refused when larger than this machine's memory."""
CHUNK = 4 << 20


def _kind_of(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a link")):
        if test(mode):
            return name
    return "not a regular file"


def memory_bytes() -> int | None:
    """This machine's physical memory in bytes (None where it cannot be told)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _size_check(path: Path, size: int, kind: str) -> None:
    cap = MAX_BYTES[kind]
    if size > cap:
        raise ValueError(f"{path} is {size / GIB:.1f} GiB, more than a {kind} file may be "
                         f"({cap / GIB:.3g} GiB); nothing read.")
    memory = memory_bytes()
    if kind in READ_WHOLE and memory and size > memory:
        raise ValueError(f"{path} is {size / GIB:.1f} GiB, more than this machine's memory ({memory / GIB:.1f} GiB) "
                         "can hold; nothing read.")


def _target(path: Path, folder: Path | None) -> Path:
    """The file `path` names: itself, or where its link points when that is inside `folder` (default: its own)."""
    info = path.lstat()
    if not stat.S_ISLNK(info.st_mode):
        return path
    home = (folder or path.parent).resolve()
    target = path.resolve()
    if target.parent != home and home not in target.parents:
        raise ValueError(f"{path} is a link out of its folder (to {target}); nothing read: the files read are "
                         "the folder's own.")
    return target


def check_file(path: str | os.PathLike[str], kind: str, *, folder: Path | None = None) -> os.stat_result:
    """The `stat` of `path` when it is a regular file (or a link to one inside `folder`) of at most its kind's size.

    :raises FileNotFoundError: nothing is there.
    :raises ValueError: one line naming the file: a FIFO, device, socket, folder, a link out, or too large.
    """
    path = Path(path)
    target = _target(path, folder)
    info = target.lstat()
    if not stat.S_ISREG(info.st_mode):
        raise ValueError(f"{path} is {_kind_of(info.st_mode)}, not a regular file; nothing read.")
    _size_check(path, info.st_size, kind)
    return info


def open_checked(path: str | os.PathLike[str], kind: str, *, folder: Path | None = None) -> IO[bytes]:
    """`path` opened for binary reading after `check_file`, checked again on the open descriptor; the caller
    closes it.

    :raises FileNotFoundError: nothing is there.
    :raises ValueError: as `check_file`.
    """
    path = Path(path)
    target = _target(path, folder)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(target, flags)  # O_NONBLOCK: a FIFO put here after the look does not block the open
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise ValueError(f"{path} cannot be opened ({exc.strerror or type(exc).__name__}); nothing read.") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{path} is {_kind_of(info.st_mode)}, not a regular file; nothing read.")
        _size_check(path, info.st_size, kind)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def size_of(fh: IO[bytes]) -> int:
    """The size of an open file, from its descriptor."""
    return os.fstat(fh.fileno()).st_size


def read_text(path: str | os.PathLike[str], kind: str, *, folder: Path | None = None) -> str:
    """The UTF-8 text of a user's file (a `cfrag eval` folder's records, a cascade), read by `open_checked`.

    :raises FileNotFoundError: nothing is there.
    :raises ValueError: one line naming the file (as `open_checked`, or not UTF-8 text).
    """
    with open_checked(path, kind, folder=folder) as fh:
        data = fh.read(size_of(fh))  # the size checked: what a file that grows afterwards adds is not read
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path} is not UTF-8 text (byte {exc.start}); nothing read.") from None


def read_json(path: str | os.PathLike[str], kind: str = "json", *, head: bytes = b"{",
              folder: Path | None = None) -> Any:
    """The JSON object in `path`, read through `open_checked`: it must begin (after white space) with `head` and hold
    no NUL byte (a sparse file's holes), scanned in chunks of constant memory before the parser sees it.

    :raises ValueError: one line naming the file.
    """
    path = Path(path)
    with open_checked(path, kind, folder=folder) as fh:
        first = fh.read(CHUNK)
        if not first.lstrip().startswith(head):
            raise ValueError(f"{path} is not a JSON file a store wrote (it does not begin with {head.decode()!r}); "
                             "nothing read.")
        chunk = first
        while chunk:
            if b"\0" in chunk:
                raise ValueError(f"{path} holds NUL bytes (a sparse or corrupt file, not JSON a store wrote); "
                                 "nothing read.")
            chunk = fh.read(CHUNK)
        fh.seek(0)
        try:
            return json.load(fh)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise ValueError(f"{path} is not valid JSON ({' '.join(str(exc).split())[:80]}); nothing read.") from exc


__all__ = ["MAX_BYTES", "check_file", "memory_bytes", "open_checked", "read_json", "read_text", "size_of"]
