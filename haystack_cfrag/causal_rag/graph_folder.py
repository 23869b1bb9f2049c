"""The folder a file store's graph lives in (``STORE.graph/``): the package's own, or refused.

The package creates it with a marker file (`MARKER`); a link, or a folder without the marker (the user's), is
refused in one line before anything is written (an older graph folder holding a valid graph file is marked).
Reading only refuses a link or a non-folder (`check_folder`)."""

from __future__ import annotations

import stat
from pathlib import Path

MARKER = ".cfrag-graph"
MARKER_TEXT = "This folder holds a causal graph written by haystack-cfrag (cfrag index --graph).\n"
GRAPH_FILE = "graph.sqlite"


def _refuse(folder: Path, why: str) -> ValueError:
    return ValueError(f"graph folder {folder} {why}; nothing written (move it away, or index into another store).")


def _mode(path: Path) -> int | None:
    try:
        return path.lstat().st_mode
    except FileNotFoundError:
        return None


def check_folder(folder: Path, *, writing: bool) -> bool:
    """Whether `folder` exists; refused (one line) when it is a link or not a folder, and, when `writing`, when
    the package did not create it (no marker, and no graph of the package's own in it)."""
    mode = _mode(folder)
    if mode is None:
        return False
    if stat.S_ISLNK(mode):
        raise _refuse(folder, "is a link; cfrag writes its graph only into a folder it created")
    if not stat.S_ISDIR(mode):
        raise _refuse(folder, "is not a folder")
    if writing and not _marked(folder) and not _legacy_graph(folder):
        raise _refuse(folder, f"was not created by cfrag (it has no {MARKER} file)")
    return True


def _marked(folder: Path) -> bool:
    mode = _mode(folder / MARKER)
    return mode is not None and stat.S_ISREG(mode)


def _legacy_graph(folder: Path) -> bool:
    """A graph folder from before the marker: it holds a graph file of this package's format."""
    from haystack_cfrag.causal_rag.sqlite_guard import open_tables  # noqa: PLC0415

    try:
        open_tables(folder / GRAPH_FILE, readonly=True).close()
    except (OSError, ValueError):
        return False
    return True


def make_folder(folder: Path) -> None:
    """Create `folder` with its marker (its parents as needed), or check the one there and mark a legacy one."""
    if check_folder(folder, writing=True):
        if not _marked(folder):
            (folder / MARKER).write_text(MARKER_TEXT, encoding="utf-8")
        return
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        folder.mkdir()
    except FileExistsError:  # made meanwhile by another process: its own, or refused
        check_folder(folder, writing=True)
        return
    (folder / MARKER).write_text(MARKER_TEXT, encoding="utf-8")


__all__ = ["MARKER", "check_folder", "make_folder"]
