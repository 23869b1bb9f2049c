"""Keep each cached reply in one committed run archive only: the earliest run's that holds it.

Runs here are often resumed in a folder seeded with earlier runs' reply caches, and their archives used
to keep the whole cache: on 2026-11-28, 11 MB of the archives' reply lines (uncompressed) were copies of
lines in another archive. This drops from each `docs/results/*/replay.tar.xz` the `llm_cache.jsonl`
lines that an earlier archive holds (earlier: the first `cfrag eval` invocation's start time in its
`metadata.json`, then the folder name), and names those archives in its `reply_sources.json` member
(`{"archives": [...], "lines": n}`, merged with any it had). Nothing else changes: records, metadata,
graph stats, the remaining lines in their order. A replay takes the union back:
`python benchmarks/analysis/replay_folder.py docs/results/RUN runs/RUN` (`run_folder.reply_cache_lines`).

The archives are written as `slim_archive.py` writes them (deterministic, xz -9e), so the script is
idempotent: a second run changes nothing.

    python benchmarks/analysis/dedupe_archives.py docs/results            # rewrite the archives below
    python benchmarks/analysis/dedupe_archives.py docs/results --check    # exit 1 if one would change

    >>> plan({"b": ["x", "y", "z"], "a": ["x", "x"], "c": ["y", "w", "x"]}, ["a", "b", "c"])
    {'a': ([], 0), 'b': (['a'], 1), 'c': (['a', 'b'], 2)}
"""

from __future__ import annotations

import argparse
import json
import sys
import tarfile
from pathlib import Path

from run_folder import ARCHIVE, REPLY_SOURCES
from slim_archive import pack, read_members, replace_file

CACHE = "llm_cache.jsonl"


def holders(lines: dict[str, list[str]], order: list[str]) -> dict[str, str]:
    """Each reply line's keeper: the first archive in `order` (earliest first) that holds it."""
    holder: dict[str, str] = {}
    for name in order:
        for line in lines[name]:
            holder.setdefault(line, name)
    return holder


def plan(lines: dict[str, list[str]], order: list[str]) -> dict[str, tuple[list[str], int]]:
    """For each archive (in `order`, earliest first): the earlier archives holding some of its lines, and how
    many of its lines they hold (those it drops)."""
    holder = holders(lines, order)
    out = {}
    for name in order:
        kept_by = [holder[line] for line in lines[name] if holder[line] != name]
        out[name] = (sorted(set(kept_by)), len(kept_by))
    return out


def started(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> str:
    """When the run began: its first invocation's start in `metadata.json` ("" when not recorded)."""
    for info, data in members:
        if info.name == "metadata.json" and data is not None:
            try:
                invocations = json.loads(data).get("invocations") or [{}]
            except (json.JSONDecodeError, AttributeError):
                return ""
            return str(invocations[0].get("started") or "")
    return ""


def cache_lines(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> list[str]:
    for info, data in members:
        if info.name == CACHE and data is not None:
            return [line for line in data.decode("utf-8").split("\n") if line.strip()]
    return []


def rewritten(members, drop: set[str], sources: list[str], dropped: int):
    """The members with the `drop` lines gone from the reply cache and `sources` merged into REPLY_SOURCES."""
    old = {"archives": [], "lines": 0}
    for info, data in members:
        if info.name == REPLY_SOURCES and data is not None:
            old = json.loads(data)
    merged = {"archives": sorted(set(old["archives"]) | set(sources)), "lines": old["lines"] + dropped}
    out, template = [], None
    for info, data in members:
        if info.name == REPLY_SOURCES:
            continue
        if info.name == CACHE and data is not None:
            kept = [line for line in data.decode("utf-8").split("\n") if line.strip() and line not in drop]
            data = ("\n".join(kept) + "\n" if kept else "").encode("utf-8")
            template = info
        out.append((info, data))
    if merged["archives"]:
        info = tarfile.TarInfo(REPLY_SOURCES)
        info.mode, info.mtime = (template.mode, template.mtime) if template else (0o644, 0)
        out.append((info, (json.dumps(merged, indent=1) + "\n").encode("utf-8")))
    return out


def dedupe(folder: Path, *, write: bool = True) -> list[tuple[str, int, int, int, list[str]]]:
    """Apply `plan` to every archive below `folder`: (name, bytes before, after, lines dropped, sources)."""
    runs = {}
    for path in sorted(folder.glob(f"*/{ARCHIVE}")):
        original = path.read_bytes()
        runs[path.parent.name] = (path, original, read_members(original))
    order = sorted(runs, key=lambda name: (started(runs[name][2]), name))
    lines = {name: cache_lines(runs[name][2]) for name in order}
    holder, done = holders(lines, order), []
    for name, (sources, dropped) in plan(lines, order).items():
        path, original, members = runs[name]
        if not dropped:
            done.append((name, len(original), len(original), 0, []))
            continue
        drop = {line for line in lines[name] if holder[line] != name}
        packed = pack(rewritten(members, drop, sources, dropped))
        if write:
            replace_file(path, packed)
        done.append((name, len(original), len(packed), dropped, sources))
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="the folder of run folders (docs/results)")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if an archive would change")
    args = parser.parse_args(argv)
    if not args.folder.is_dir():
        print(f"dedupe_archives: no such folder: {args.folder}", file=sys.stderr)
        return 2
    done = dedupe(args.folder, write=not args.check)
    before, after = sum(d[1] for d in done), sum(d[2] for d in done)
    for name, b, a, dropped, sources in done:
        if dropped:
            verb = "would drop" if args.check else "dropped"
            print(f"{name}: {verb} {dropped} reply lines held by {', '.join(sources)}: {b:,} -> {a:,} bytes")
    print(f"{len(done)} archives, {before:,} -> {after:,} bytes")
    return 1 if args.check and any(d[3] for d in done) else 0


if __name__ == "__main__":
    sys.exit(main())
