"""One writer per store: `cfrag index` holds the store's lock from before it reads the store until its graph is written.

A store's kind names its lock file (`StoreKind.lock_path`: ``.NAME.cfrag-lock`` beside a file store; for a Qdrant
server, a file in the cache), locked with `filelock` and holding the holder's pid, or locks itself
(`StoreKind.acquire`: pgvector's advisory lock). The holder removes the file before it lets go; a killed holder's
stays, unlocked, until the next writer removes it. A FIFO, device or link at its name is refused in one line.

A second writer waits at most `wait` seconds (`cfrag index --wait`), saying once that it waits, then refuses in
one line naming the store and the holder's pid. The lock is re-entrant within one process (the graph writer takes
it again under `cfrag index`'s hold) and released when the process ends, killed or not.

>>> import tempfile
>>> from haystack_cfrag.stores.specs import parse_store_spec
>>> spec = parse_store_spec(f"faiss:{tempfile.mkdtemp()}/store")
>>> with store_lock(spec, wait=0):
...     with store_lock(spec, wait=0):
...         pass
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from haystack_cfrag.stores.safe_files import open_checked
from haystack_cfrag.stores.specs import StoreSpec, parse_store_spec

DEFAULT_WAIT = 60.0
"""Seconds a second `cfrag index` into a store waits for the first before it refuses."""
MAX_WAIT = 86_400.0
POLL = 0.2
"""Seconds between two tries of a held lock."""

_held: dict[str, int] = {}
_guard = threading.Lock()


class StoreBusy(RuntimeError):
    """Another process writes the store; the message is one line naming the store and the holder."""


def lock_path(spec: StoreSpec) -> Path | None:
    """The lock file of a store (`StoreKind.lock_path`); None for a kind that locks otherwise, or needs no lock.

    >>> lock_path(parse_store_spec("stores/demo.json")).as_posix()
    'stores/.demo.json.cfrag-lock'
    """
    return spec.store_kind.lock_path(spec)


def busy(spec: StoreSpec, holder: str, wait: float) -> StoreBusy:
    """The refusal of a store another process writes."""
    return StoreBusy(f"{spec} is being written by another cfrag index ({holder}); "
                     + (f"waited {wait:g} s; " if wait else "")
                     + "nothing written: run again when it has finished, or wait longer with --wait SECONDS.")


@contextlib.contextmanager
def store_lock(spec: str | StoreSpec, *, wait: float = DEFAULT_WAIT,
               notify: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold the store's writer lock for the block (module doc).

    :param wait: seconds to wait for another holder (0: refuse at once).
    :param notify: told once, in one line, when the lock is held by another process and this one waits.
    :raises StoreBusy: still held by another process after `wait` seconds.
    :raises ValueError: the lock cannot be taken at all (a folder that is not writable, a FIFO at its name).
    """
    s = parse_store_spec(spec)
    wait = min(max(float(wait), 0.0), MAX_WAIT)
    path = lock_path(s)
    key = os.path.abspath(path) if path is not None else str(s)
    with _guard:
        reentered = key in _held
        if reentered:
            _held[key] += 1
    if reentered:  # this process holds it already
        try:
            yield
        finally:
            with _guard:
                _held[key] -= 1
        return
    release = s.store_kind.acquire(s, wait, notify)
    if release is None:
        release = _acquire_file(s, path, wait, notify) if path is not None else (lambda: None)
    with _guard:
        _held[key] = 1
    try:
        yield
    finally:
        with _guard:
            _held.pop(key, None)
        release()


def _acquire_file(s: StoreSpec, path: Path, wait: float, notify: Callable[[str], None] | None) -> Callable[[], None]:
    from filelock import FileLock, Timeout  # noqa: PLC0415

    def refused(why: str) -> ValueError:
        return ValueError(f"cannot lock {s} for writing: {path} {why}; nothing written.")

    with contextlib.suppress(FileNotFoundError):
        mode = path.lstat().st_mode
        if not stat.S_ISREG(mode):  # a FIFO here would be opened and locked as if it were the lock file
            what = "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a link" if stat.S_ISLNK(mode) else \
                "a folder" if stat.S_ISDIR(mode) else "a device or socket"
            raise refused(f"is {what}, not a lock file: remove it and run again")
    lock = FileLock(path, thread_local=False, on_acquired=_write_pid)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            lock.acquire(timeout=0)
        except Timeout:
            if wait <= 0:
                raise busy(s, _holder(path), wait) from None
            if notify is not None:
                notify(f"waiting for another cfrag index ({_holder(path)}) to finish writing {s} (at most {wait:g} s)")
            try:
                lock.acquire(timeout=wait, poll_interval=POLL)
            except Timeout:
                raise busy(s, _holder(path), wait) from None
    except OSError as exc:
        raise refused(f"({exc.strerror or exc})") from exc

    def release() -> None:
        with contextlib.suppress(OSError):
            os.unlink(path)  # still held: a writer waiting on this file finds it gone and takes the next one
        lock.release()

    return release


def _write_pid(fd: int) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)


def _holder(path: Path) -> str:
    """The pid the holder wrote into the lock file, as far as it can be read."""
    try:
        with open_checked(path, "meta") as fh:
            text = fh.read(32).decode("ascii", "replace").strip()
    except (OSError, ValueError):
        text = ""
    return f"pid {text}" if text.isdigit() else "pid unknown"


__all__ = ["DEFAULT_WAIT", "StoreBusy", "busy", "lock_path", "store_lock"]
