"""Writing into a folder without following links: `replace_text` (atomic, a link at the name replaced, never
written through) and `open_append` (`O_NOFOLLOW`: a link at the name is an OSError).

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> replace_text(folder / "report.md", "# Report\\n")
>>> with open_append(folder / "records.jsonl") as fh:
...     _ = fh.write("{}\\n")
>>> sorted(p.name for p in folder.iterdir())
['records.jsonl', 'report.md']
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import IO


def replace_text(path: Path, text: str, *, mode: int | None = None) -> None:
    """Write `text` to `path` atomically: a temporary file in the same folder, then one rename.

    :param mode: the file's permission bits (default: what a plain write gives under the umask).
    """
    path = Path(path)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(name, mode if mode is not None else 0o666 & ~_umask())  # mkstemp's file is private (0600)
        os.replace(name, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)


def open_append(path: Path) -> IO[str]:
    """`path` opened to append UTF-8 text, created if missing; OSError when its name is a link."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    return os.fdopen(os.open(path, flags, 0o666), "a", encoding="utf-8")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
