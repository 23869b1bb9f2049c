"""Read an evaluation run folder as committed under docs/results/ or as `cfrag eval` left it.

A committed run folder keeps its report, `results.json`, `metadata.json` and plots in the open
and its records and reply cache in `replay.tar.xz` (docs/evaluation.md, "Replaying a committed
run"). The analysis tools read `records.jsonl` from the folder when it is there (a run of
your own, or an extracted archive), else straight from the archive, without extracting it.

Usage:
    >>> import json, tarfile, tempfile, io
    >>> from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp())
    >>> line = (json.dumps({"key": "k", "system": "standard_rag"}) + "\\n").encode()
    >>> with tarfile.open(folder / ARCHIVE, "w:xz") as tar:
    ...     info = tarfile.TarInfo("records.jsonl"); info.size = len(line)
    ...     tar.addfile(info, io.BytesIO(line))
    >>> [r["system"] for r in read_run_records(folder)]
    ['standard_rag']
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path
from typing import Any

from haystack_cfrag.stores.safe_files import MAX_BYTES, open_checked, read_text

ARCHIVE = "replay.tar.xz"
REPLY_SOURCES = "reply_sources.json"
"""An archive member naming the other run folders (beside it under docs/results/) whose archives hold the
replies this run also read: `{"archives": [...], "lines": n}`. `dedupe_archives.py` writes it when it drops
n replies from this one's reply cache; a run archived from a folder seeded with earlier runs' caches (only
the replies it added) names those runs, with n = 0."""


def read_run_records(out: Path, name: str = "records.jsonl") -> list[dict[str, Any]]:
    """The records of run folder `out`: its `name` file, or that member of its `replay.tar.xz`; both read
    through the package's safe opener (a FIFO or a device there is refused in one line naming it)."""
    out = Path(out)
    try:
        return _parse(read_text(out / name, "run"))
    except FileNotFoundError:
        text = read_member(out, name)
        return _parse(text) if text else []


def read_member(out: Path, name: str) -> str | None:
    """The text of member `name` of `out`'s `replay.tar.xz` (None: no archive, or no such member); a member
    that is not a regular file, or larger than a run file may be, is refused in one line naming it."""
    archive = Path(out) / ARCHIVE
    try:
        fh = open_checked(archive, "run")
    except FileNotFoundError:
        return None
    with fh, tarfile.open(fileobj=fh, mode="r:xz") as tar:
        try:
            member = tar.getmember(name)
        except KeyError:
            return None
        if not member.isfile() or member.size > MAX_BYTES["run"]:
            raise ValueError(f"{archive}: its {name} is not a regular file of at most {MAX_BYTES['run']} "
                             "bytes")
        data = tar.extractfile(member).read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{archive}: its {name} is not UTF-8 text") from None


def reply_cache_lines(out: Path) -> list[str]:
    """Every reply-cache line a replay of committed run folder `out` needs: its archive's own, then those of
    the folders its `reply_sources.json` names (beside it), theirs in turn, each line once.

    Raises FileNotFoundError naming a source folder that is missing (the replay would miss its replies).
    """
    out = Path(out)
    lines, seen, done, queue = [], set(), set(), [out]
    while queue:
        folder = queue.pop(0)
        if folder.name in done:
            continue
        done.add(folder.name)
        if not (folder / ARCHIVE).exists():
            raise FileNotFoundError(f"{out.name}: its replies are also in {folder.name}, which has no {ARCHIVE}")
        for line in (read_member(folder, "llm_cache.jsonl") or "").splitlines():
            if line.strip() and line not in seen:
                seen.add(line)
                lines.append(line)
        try:
            sources = json.loads(read_member(folder, REPLY_SOURCES) or "{}")
        except (ValueError, RecursionError):
            sources = None
        names = sources.get("archives", []) if isinstance(sources, dict) else None
        if not isinstance(names, list) or not all(isinstance(n, str) and n not in ("", ".", "..")
                                                  and Path(n).name == n for n in names):
            raise ValueError(f"{folder / ARCHIVE}: its {REPLY_SOURCES} does not list run folders beside it")
        queue += [folder.parent / name for name in names]
    return lines


def group_by_system(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The records by system, sorted by name; "system (condition)" when they hold several conditions.

    >>> sorted(group_by_system([{"system": "a", "condition": "pooled"}, {"system": "a", "condition": "inject"}]))
    ['a (inject)', 'a (pooled)']
    >>> list(group_by_system([{"system": "a", "condition": "pooled"}]))
    ['a']
    """
    several = len({r.get("condition") for r in records}) > 1
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault(f"{r['system']} ({r.get('condition')})" if several else r["system"], []).append(r)
    return dict(sorted(groups.items()))


def _parse(text: str) -> list[dict[str, Any]]:
    out = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue  # a line cut by an interrupted run (summary.read_records skips it too)
        if isinstance(record, dict):
            out.append(record)
    return out
