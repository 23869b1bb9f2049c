"""Unpack a committed run folder's `replay.tar.xz` into a run folder of your own, ready for `cfrag eval`.

Its records, metadata and graph stats as archived, and a `llm_cache.jsonl` holding every reply the run
read: the archive's own, then those of the run folders its `reply_sources.json` names
(`dedupe_archives.py` keeps each reply in the earliest archive holding it). The target must be a new
or empty folder: nothing of yours is overwritten.

    python benchmarks/analysis/replay_folder.py docs/results/cer_dev_a runs/cer_dev_a
    cfrag eval ../shared/data/hotpotqa_distractor_dev_a.jsonl --out runs/cer_dev_a --report-only
"""

from __future__ import annotations

import argparse
import sys
import tarfile
from pathlib import Path

from run_folder import ARCHIVE, REPLY_SOURCES, reply_cache_lines

from haystack_cfrag.stores.safe_files import MAX_BYTES, open_checked


def replay_folder(src: Path, out: Path) -> dict[str, int]:
    """Unpack `src`'s archive into `out` (new or empty) with the full reply cache; what was written."""
    if not (src / ARCHIVE).is_file():
        raise FileNotFoundError(f"{src} has no {ARCHIVE}")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FileExistsError(f"{out} exists and is not an empty folder; nothing was written")
    lines = reply_cache_lines(src)  # before writing anything: a missing source folder stops here
    out.mkdir(parents=True, exist_ok=True)
    written = 0
    with open_checked(src / ARCHIVE, "run") as fh, tarfile.open(fileobj=fh, mode="r:xz") as tar:
        for member in tar.getmembers():
            name = Path(member.name).name
            if not member.isfile() or name != member.name or name in ("llm_cache.jsonl", REPLY_SOURCES):
                continue  # flat files only: a member path never leaves the folder
            if member.size > MAX_BYTES["run"]:
                raise ValueError(f"{src / ARCHIVE}: its {name} claims {member.size} bytes; nothing more "
                                 "written")
            (out / name).write_bytes(tar.extractfile(member).read())
            written += 1
    if lines:
        (out / "llm_cache.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return {"files": written + bool(lines), "replies": len(lines)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("src", type=Path, help="a committed run folder (docs/results/RUN)")
    parser.add_argument("out", type=Path, help="a new or empty folder")
    args = parser.parse_args(argv)
    try:
        done = replay_folder(args.src, args.out)
    except (FileNotFoundError, FileExistsError, ValueError, tarfile.TarError) as exc:
        print(f"replay_folder: {exc}", file=sys.stderr)
        return 2
    print(f"{args.out}: {done['files']} files, {done['replies']} cached replies")
    return 0


if __name__ == "__main__":
    sys.exit(main())
