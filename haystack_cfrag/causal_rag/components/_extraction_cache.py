"""The extraction cache: one JSON file per passage, named by its hex `cache_key`, written atomically (fsync,
`os.replace`), never read through a link or outside the folder; an invalid file is reported corrupt (re-extracted).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from haystack_cfrag.causal_rag.math.extraction import CACHE_VERSION, Extraction

MAX_CACHE_FILE_BYTES = 8 * 1024 * 1024
"""A cache file larger than this is treated as corrupt (a passage's record is a few KB)."""

MAX_MACHINES = 64
"""Machines a record's seconds may be split over (`timed_on`) at most."""

_HEX = re.compile(r"^[0-9a-f]{64}$")


class CacheCorruptError(ValueError):
    """A cache file exists but is not a valid record."""


class ExtractionCache:
    """Read and write the cached extraction of a passage (a list of chunk extractions, token counts and the
    seconds its calls took by the machine that timed them, `timed_on`)."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder).expanduser()
        self.folder.mkdir(parents=True, exist_ok=True)
        self._root = self.folder.resolve()

    def path(self, key: str) -> Path:
        if not _HEX.match(key):
            raise ValueError(f"not a cache key: {key!r:.80}")
        return self.folder / f"{key}.json"

    def load(self, key: str) -> dict[str, Any] | None:
        """The record under `key`; None when there is none; CacheCorruptError for an invalid file or a link."""
        path = self.path(key)
        if not os.path.lexists(path):
            return None
        if path.is_symlink() or path.resolve().parent != self._root or not path.is_file():
            raise CacheCorruptError(f"{path.name} is a link or not a regular file in the cache folder")
        try:
            flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
            fd = os.open(path, flags)
            with os.fdopen(fd, "rb") as fh:
                raw = fh.read(MAX_CACHE_FILE_BYTES + 1)
        except OSError as exc:
            raise CacheCorruptError(f"{path.name} cannot be read ({exc})") from None
        if len(raw) > MAX_CACHE_FILE_BYTES:
            raise CacheCorruptError(f"{path.name} is larger than {MAX_CACHE_FILE_BYTES} bytes")
        try:
            record = json.loads(raw.decode("utf-8"))
            return _validated(record, key)
        except Exception as exc:  # noqa: BLE001  (any unreadable entry is missing: OverflowError, …)
            raise CacheCorruptError(f"{path.name} is not a valid cache record "
                                    f"({type(exc).__name__}: {str(exc)[:120]})") from None

    def store(self, key: str, record: dict[str, Any]) -> None:
        """Write `record` under `key` atomically (temporary file + os.replace)."""
        path = self.path(key)
        data = json.dumps({**record, "version": CACHE_VERSION, "key": key}, ensure_ascii=False).encode("utf-8")
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=self.folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


def _validated(record: Any, key: str) -> dict[str, Any]:
    if not isinstance(record, dict) or record.get("version") != CACHE_VERSION or record.get("key") != key:
        raise ValueError("wrong version or key")
    chunks = record.get("chunks")
    if not isinstance(chunks, list):
        raise ValueError("no 'chunks' list")
    extractions = [Extraction.from_dict(c) for c in chunks]
    tokens = [record.get("prompt_tokens", 0), record.get("completion_tokens", 0)]
    if not all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in tokens):
        raise ValueError("malformed token counts")
    timed = record.get("timed_on")  # absent in records written before the cache kept seconds
    seconds = None if timed is None else _seconds_by_machine(timed)
    return {"chunks": extractions, "prompt_tokens": tokens[0], "completion_tokens": tokens[1],
            "timed_on": seconds}


def _seconds_by_machine(timed: Any) -> dict[str, float]:
    """`timed_on` read strictly: at most MAX_MACHINES string keys, each a finite number of seconds ≥ 0
    (a number too large for a float, such as a 401-digit integer, is malformed, not an OverflowError)."""
    if not isinstance(timed, dict) or len(timed) > MAX_MACHINES:
        raise ValueError("malformed 'timed_on' (seconds by machine)")
    out: dict[str, float] = {}
    for machine, value in timed.items():
        if not isinstance(machine, str) or isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError("malformed 'timed_on' (seconds by machine)")
        try:
            seconds = float(value)
        except OverflowError:
            raise ValueError("a 'timed_on' value is too large") from None
        if not (math.isfinite(seconds) and seconds >= 0):
            raise ValueError("a 'timed_on' value is not a finite number of seconds")
        out[machine[:40]] = seconds
    return out

