"""Slim a committed run archive (`replay.tar.xz`): no path of the machine that wrote it, packed with xz -9e.

Inside every member (records, reply cache, metadata, `graph_stats.jsonl`):

- a reply's meta "model" in `llm_cache.jsonl` that is a path becomes its file name, as the reply cache
  now stores it (`haystack_cfrag.evaluation.llm_cache.stored_reply`; llama-cpp-python reports the
  GGUF's full path);
- any other absolute path under /root, /work, /home or /tmp becomes a path relative to its run
  folder (what follows `runs/<name>/` or `docs/results/<name>/`; "." for the folder itself), or else
  its bare file name;
- a reply's meta "response_id" (a random id the server draws for each call; nothing reads it, and
  as noise it is an eighth of an archive) is dropped, and every timing in a JSONL member (a key
  that names "seconds", and each stage's seconds under "stages") is kept to the microsecond: the
  digits below it are float noise that xz cannot compress. No answer, score, token count or key
  changes, so a report rebuilt from the slim records (`cfrag eval … --report-only`) is the same.

Then the archive is packed again, members in their order with owners cleared, at xz preset 9e
(`xz -9e`: liblzma through Python's `lzma`). The result is deterministic, so the script is
idempotent: an archive already slim is left untouched (not even rewritten), and the new archive
replaces the old one only when complete. Nothing is extracted to disk.

    python benchmarks/analysis/slim_archive.py docs/results            # every *.tar.xz below
    python benchmarks/analysis/slim_archive.py docs/results --check    # exit 1 if one would change

    >>> relative_path("/root/.cache/haystack-cfrag/models/qwen.gguf")
    'qwen.gguf'
    >>> relative_path("/work/main/runs/trap_ks/graph_cache/g.json"), relative_path("/tmp/x/runs/trap_ks")
    ('graph_cache/g.json', '.')
    >>> slim_text('{"out": "/home/u/runs/a/llm_cache.jsonl", "url": "https://h.org/home/x"}')
    ('{"out": "llm_cache.jsonl", "url": "https://h.org/home/x"}', 1)
    >>> slim_line('{"seconds": 13.712400404001528, "stages": {"generator": 2.0000004}, "em": 0.75}')
    ('{"seconds": 13.7124, "stages": {"generator": 2.0}, "em": 0.75}', 0)
"""

from __future__ import annotations

import argparse
import io
import json
import lzma
import os
import re
import sys
import tarfile
import tempfile
from pathlib import Path, PurePosixPath

PRESET = 9 | lzma.PRESET_EXTREME
"""`xz -9e`."""

MACHINE_PATH = re.compile(r"(?<![\w.:/~-])/(?:root|work|home|tmp)/[^\s\"'\\<>|,;)\]}]*")
"""An absolute path of the machine that ran: not a URL's path (preceded by a host) nor a relative one."""

RUN_FOLDER = re.compile(r"/(?:runs|docs/results)/[^/]+(?:/(.*))?$")


def relative_path(path: str) -> str:
    """`path` relative to its run folder when it lies in one, else its file name."""
    inside = RUN_FOLDER.search(path.rstrip("/"))
    if inside:
        return inside.group(1) or "."
    return PurePosixPath(path).name or "."


def slim_text(text: str) -> tuple[str, int]:
    """`text` with every machine path made relative (`relative_path`), and how many were."""
    return MACHINE_PATH.subn(lambda m: relative_path(m.group(0)), text)


TIMING_DIGITS = 6
"""Timings are kept to the microsecond."""


def _slim_value(value, *, timing: bool = False, reply: bool = False) -> tuple[object, int]:
    """`value` with timings rounded and, where it is a reply (`reply`), its id dropped and its model's path
    cut to the file name; and how many model paths were cut."""
    if isinstance(value, float):
        return (round(value, TIMING_DIGITS) if timing else value), 0
    if isinstance(value, list):
        items = [_slim_value(v, timing=timing, reply=reply) for v in value]
        return [v for v, _ in items], sum(n for _, n in items)
    if not isinstance(value, dict):
        return value, 0
    out, count = {}, 0
    for key, v in value.items():
        if reply and key == "meta" and isinstance(v, dict):
            v = {k: m for k, m in v.items() if k != "response_id"}
            model = v.get("model")
            if isinstance(model, str) and ("/" in model or "\\" in model):
                v["model"] = PurePosixPath(model.replace("\\", "/")).name
                count += 1
        v, n = _slim_value(v, timing=timing or key == "stages" or "seconds" in key, reply=key == "replies")
        out[key] = v
        count += n
    return out, count


def slim_line(line: str) -> tuple[str, int]:
    """One JSONL line slimmed (timings, replies' ids and model paths), in the writers' own format
    (`json.dumps`), and how many model paths were cut; a line that is not JSON (one cut by an
    interrupted run) or that slimming leaves equal is returned as it was."""
    try:
        value = json.loads(line)
    except json.JSONDecodeError:
        return line, 0
    slim, count = _slim_value(value)
    return (line, 0) if slim == value and not count else (json.dumps(slim, default=str), count)


def slim_member(name: str, data: bytes) -> tuple[bytes, int]:
    """A member's bytes slimmed, and how many paths were rewritten (a binary member is kept as it is)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data, 0
    count = 0
    if name.endswith(".jsonl"):
        lines = []
        for line in text.split("\n"):
            line, n = slim_line(line)
            lines.append(line)
            count += n
        text = "\n".join(lines)
    text, n = slim_text(text)
    return text.encode("utf-8"), count + n


def slim_archive(archive: Path, *, write: bool = True) -> dict[str, int | bool]:
    """Rewrite `archive` in place (atomically) when slimming changes it; what was done."""
    original = archive.read_bytes()
    members, rewritten = [], 0
    for info, data in read_members(original):
        if data is not None:
            data, n = slim_member(info.name, data)
            rewritten += n
        members.append((info, data))
    packed = pack(members)
    changed = packed != original
    if changed and write:
        replace_file(archive, packed)
    return {"before": len(original), "after": len(packed), "paths": rewritten, "changed": changed}


def read_members(archive_bytes: bytes) -> list[tuple[tarfile.TarInfo, bytes | None]]:
    """An archive's members in order, each a fresh TarInfo (no owner) and its bytes (None: not a file)."""
    out = []
    with tarfile.open(fileobj=io.BytesIO(archive_bytes), mode="r:xz") as src:
        for member in src.getmembers():
            info = tarfile.TarInfo(member.name)
            info.type, info.mode, info.mtime = member.type, member.mode, int(member.mtime)
            info.linkname = member.linkname
            out.append((info, src.extractfile(member).read() if member.isfile() else None))
    return out


def pack(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    """The members as a deterministic .tar.xz at `PRESET` (PAX format, owners cleared)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as dst:
        for info, data in members:
            if data is None:
                dst.addfile(info)
            else:
                info.size = len(data)
                dst.addfile(info, io.BytesIO(data))
    return lzma.compress(buffer.getvalue(), format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64, preset=PRESET)


def replace_file(path: Path, data: bytes) -> None:
    """Write `data` over `path` atomically (a temporary file beside it, then a rename), keeping its mode."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".slim-", suffix=".tar.xz")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, path.stat().st_mode & 0o777)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def archives(paths: list[Path]) -> list[Path]:
    """The `*.tar.xz` files named, or found below the folders named, sorted."""
    found = []
    for p in paths:
        if p.is_dir():
            found += sorted(p.rglob("*.tar.xz"))
        elif p.is_file():
            found.append(p)
        else:
            raise SystemExit(f"slim_archive: no such file or folder: {p}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path, help="archives, or folders to search for *.tar.xz")
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 if an archive would change")
    args = parser.parse_args(argv)
    pending = 0
    for archive in archives(args.paths):
        try:
            done = slim_archive(archive, write=not args.check)
        except (tarfile.TarError, lzma.LZMAError, EOFError) as exc:
            print(f"slim_archive: {archive}: not a readable .tar.xz ({exc})", file=sys.stderr)
            return 2
        pending += done["changed"]
        state = ("would change" if args.check else "slimmed") if done["changed"] else "already slim"
        print(f"{archive}: {state}, {done['paths']} paths, {done['before']:,} -> {done['after']:,} bytes")
    return 1 if args.check and pending else 0


if __name__ == "__main__":
    sys.exit(main())
