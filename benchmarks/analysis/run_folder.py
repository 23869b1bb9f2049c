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

ARCHIVE = "replay.tar.xz"


def read_run_records(out: Path, name: str = "records.jsonl") -> list[dict[str, Any]]:
    """The records of run folder `out`: its `name` file, or that member of its `replay.tar.xz`."""
    out = Path(out)
    if (out / name).exists():
        return _parse((out / name).read_text(encoding="utf-8"))
    archive = out / ARCHIVE
    if not archive.exists():
        return []
    with tarfile.open(archive, "r:xz") as tar:
        try:
            member = tar.extractfile(name)
        except KeyError:
            return []
        return _parse(member.read().decode("utf-8")) if member else []


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
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line cut by an interrupted run (summary.read_records skips it too)
    return out
