"""One writer per store: `cfrag index` holds the store's lock from before it reads the store until its graph is written.

File stores (a JSON store, FAISS, a local Qdrant folder) and the graph beside them are locked
by `fcntl.flock` on a lock file next to the store (`.NAME.cfrag-lock`), which records the
holder's pid. The holder removes it before it lets go, and a writer that locked a file no
longer at that name (removed meanwhile) tries again, so two writers never hold two files; a
killed holder's file stays, unlocked, until the next writer removes it. A pgvector
table is locked by a Postgres advisory lock keyed by its name, held on a connection of its own
whose `application_name` names the holder's pid. A Qdrant server's collection is locked by a
file in the cache (it excludes writers on this machine only); `qdrant::memory:` is the process's own.

A second writer waits at most `wait` seconds (`cfrag index --wait`, default `DEFAULT_WAIT`),
saying once that it waits, then refuses in one line naming the store and the holder's pid:
never a wait without a bound. The lock is re-entrant within one process (the graph writer
takes it again under `cfrag index`'s hold), and is released when the process ends, killed or not.

>>> import tempfile, pathlib
>>> from haystack_cfrag.stores.specs import parse_store_spec
>>> spec = parse_store_spec(f"faiss:{tempfile.mkdtemp()}/store")
>>> with store_lock(spec, wait=0):
...     with store_lock(spec, wait=0):
...         pass
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from haystack_cfrag.stores.specs import StoreSpec, parse_store_spec, redact

DEFAULT_WAIT = 60.0
"""Seconds a second `cfrag index` into a store waits for the first before it refuses."""
MAX_WAIT = 86_400.0
POLL = 0.2
"""Seconds between two tries of a held lock."""
SUFFIX = ".cfrag-lock"

_held: dict[str, int] = {}
_guard = threading.Lock()


class StoreBusy(RuntimeError):
    """Another process writes the store; the message is one line naming the store and the holder."""


def lock_path(spec: StoreSpec) -> Path | None:
    """The lock file of a file store, or of a Qdrant server's collection (in the cache); None for pgvector and
    `qdrant::memory:`.

    >>> lock_path(parse_store_spec("faiss:stores/demo#HNSW32")).as_posix()
    'stores/.demo.cfrag-lock'
    >>> lock_path(parse_store_spec("stores/demo.json")).as_posix()
    'stores/.demo.json.cfrag-lock'
    """
    if spec.kind in ("memory", "faiss"):
        base = Path(spec.location)
        return base.parent / f".{base.name}{SUFFIX}"
    if spec.kind == "qdrant":
        if spec.location == ":memory:":
            return None
        if spec.location.startswith(("http://", "https://")):
            from haystack_cfrag import models  # noqa: PLC0415

            digest = hashlib.sha256(f"{spec.location}#{spec.name}".encode()).hexdigest()[:16]
            return models.cache_dir() / "locks" / f"qdrant-{digest}{SUFFIX}"
        base = Path(spec.location.rstrip("/") or spec.location)
        return base.parent / f".{base.name}{SUFFIX}"
    return None


def advisory_key(table: str) -> int:
    """The 64-bit Postgres advisory lock key of a pgvector table (signed, as `pg_try_advisory_lock` takes it).

    >>> advisory_key("docs") == advisory_key("docs") != advisory_key("docs2")
    True
    """
    return int.from_bytes(hashlib.sha256(f"haystack-cfrag index {table}".encode()).digest()[:8], "big", signed=True)


@contextlib.contextmanager
def store_lock(spec: str | StoreSpec, *, wait: float = DEFAULT_WAIT,
               notify: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold the store's writer lock for the block (module doc).

    :param wait: seconds to wait for another holder (0: refuse at once).
    :param notify: told once, in one line, when the lock is held by another process and this one waits.
    :raises StoreBusy: still held by another process after `wait` seconds.
    :raises ValueError: the lock cannot be taken at all (a folder that is not writable, a link at its name).
    """
    s = spec if isinstance(spec, StoreSpec) else parse_store_spec(spec)
    wait = min(max(float(wait), 0.0), MAX_WAIT)
    key = _key(s)
    with _guard:
        if key is not None and key in _held:
            _held[key] += 1
            reentered = True
        else:
            reentered = False
    if reentered:
        try:
            yield
        finally:
            with _guard:
                _held[key] -= 1  # type: ignore[index]
        return
    release = _acquire(s, wait, notify)
    if key is not None:
        with _guard:
            _held[key] = 1
    try:
        yield
    finally:
        if key is not None:
            with _guard:
                _held.pop(key, None)
        release()


def _key(s: StoreSpec) -> str | None:
    path = lock_path(s)
    if path is not None:
        return str(Path(os.path.abspath(path)))
    if s.kind == "pgvector":
        return f"pgvector:{redact(s.location)}#{s.name}"
    return None


def _acquire(s: StoreSpec, wait: float, notify: Callable[[str], None] | None) -> Callable[[], None]:
    if s.kind == "pgvector":
        return _acquire_advisory(s, wait, notify)
    path = lock_path(s)
    if path is None:
        return lambda: None
    return _acquire_file(s, path, wait, notify)


def _busy(s: StoreSpec, holder: str, wait: float) -> StoreBusy:
    return StoreBusy(f"{redact(str(s))} is being written by another cfrag index ({holder}); "
                     + (f"waited {wait:g} s; " if wait else "")
                     + "nothing written: run again when it has finished, or wait longer with --wait SECONDS.")


def _acquire_file(s: StoreSpec, path: Path, wait: float, notify: Callable[[str], None] | None) -> Callable[[], None]:
    deadline = time.monotonic() + wait
    told = False
    while True:
        fd = _open_lock_file(s, path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder_of(fd)
            os.close(fd)
            left = deadline - time.monotonic()
            if left <= 0:
                raise _busy(s, holder, wait) from None
            if not told and notify is not None:
                notify(f"waiting for another cfrag index ({holder}) to finish writing {redact(str(s))} "
                       f"(at most {wait:g} s)")
                told = True
            time.sleep(min(POLL, left))
            continue
        except OSError as exc:
            os.close(fd)
            raise ValueError(f"cannot lock {redact(str(s))} for writing: {path} ({exc.strerror or exc}); "
                             "nothing written.") from exc
        if _same_file(fd, path):
            break
        os.close(fd)  # the holder before removed the file after we opened it: lock the one at the name now
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)

    def release() -> None:
        with contextlib.suppress(OSError):
            os.unlink(path)  # still held: a writer waiting on this file finds it gone and opens the next one
        os.close(fd)  # closing the descriptor releases the lock

    return release


def _open_lock_file(s: StoreSpec, path: Path) -> int:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0),
                       0o644)
    except OSError as exc:
        raise ValueError(f"cannot lock {redact(str(s))} for writing: {path} ({exc.strerror or exc}); "
                         "nothing written.") from exc


def _same_file(fd: int, path: Path) -> bool:
    """Whether the locked descriptor is still the file at `path` (not one a releasing holder removed)."""
    try:
        named = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def _holder_of(fd: int) -> str:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        text = ""
    return f"pid {text}" if text.isdigit() else "pid unknown"


def _acquire_advisory(s: StoreSpec, wait: float, notify: Callable[[str], None] | None) -> Callable[[], None]:
    import psycopg  # noqa: PLC0415

    from haystack_cfrag.stores.opening import pg_secret  # noqa: PLC0415

    key = advisory_key(s.name)
    try:
        conn = psycopg.connect(pg_secret(s.location).resolve_value(), autocommit=True, connect_timeout=10,
                               application_name=f"cfrag index (pid {os.getpid()})")
    except psycopg.Error as exc:
        raise ValueError(f"cannot lock {redact(str(s))} for writing: {redact(' '.join(str(exc).split()))[:160]}; "
                         "nothing written.") from exc
    deadline = time.monotonic() + wait
    told = False
    try:
        while not conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
            holder = _advisory_holder(conn, key)
            left = deadline - time.monotonic()
            if left <= 0:
                raise _busy(s, holder, wait)
            if not told and notify is not None:
                notify(f"waiting for another cfrag index ({holder}) to finish writing {redact(str(s))} "
                       f"(at most {wait:g} s)")
                told = True
            time.sleep(min(POLL, left))
    except BaseException:
        conn.close()
        raise

    def release() -> None:
        with contextlib.suppress(Exception):
            conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
        conn.close()  # ending the session releases it too

    return release


def _advisory_holder(conn: Any, key: int) -> str:
    """The holder's `application_name` ("cfrag index (pid N)"), as far as the server says."""
    unsigned = key & 0xFFFFFFFFFFFFFFFF
    try:
        row = conn.execute(
            "SELECT a.application_name, a.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND l.granted AND l.classid::bigint = %s AND l.objid::bigint = %s "
            "AND l.objsubid = 1 LIMIT 1", (unsigned >> 32, unsigned & 0xFFFFFFFF)).fetchone()
    except Exception:  # noqa: BLE001  (the holder is a courtesy; the refusal stands without it)
        return "pid unknown"
    if row is None:
        return "pid unknown"
    name = str(row[0] or "")
    if name.startswith("cfrag index (pid ") and name.endswith(")"):
        return name[len("cfrag index ("):-1]
    return f"server pid {row[1]}"


__all__ = ["DEFAULT_WAIT", "StoreBusy", "advisory_key", "lock_path", "store_lock"]
