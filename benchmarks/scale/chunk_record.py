"""One JSON line per chunk log of `benchmarks/scale/run.sh` (what docs/results/scale_2026-11-28/chunks.jsonl holds).

    python benchmarks/scale/chunk_record.py RUNS/part-003.log [--note TEXT] >> chunks.jsonl

Reads `cfrag index`'s summary line, its `graph:` line, `/usr/bin/time -v`'s peak and the run's wall seconds and
bytes on disk; a log without a `graph:` line (an interrupted chunk) is refused.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path


def record(text: str, chunk: str) -> dict:
    summary = re.search(r"→ (\d+) passages, (\d+) written(?: \((\d+) already in the store, kept\))?; store has (\d+) "
                        r"in ([\d.]+) s", text)
    graph = re.search(r"^graph: .*$", text, re.M)
    if summary is None or graph is None:
        raise SystemExit(f"{chunk}: no summary or no graph: line (an interrupted chunk?)")
    line = graph.group(0)

    def num(pattern: str, cast=float):
        m = re.search(pattern, line)
        return cast(m.group(1)) if m else None

    per = re.search(r"([\d.]+) (ms|s) per extracted passage", line)
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
    wall = re.search(r"^chunk_wall_s ([\d.]+)", text, re.M)
    disk = re.search(r"^disk_bytes (\d+)", text, re.M)
    return {
        "chunk": chunk, "passages": int(summary.group(1)), "written": int(summary.group(2)),
        "already_held": int(summary.group(3) or 0), "store_total": int(summary.group(4)),
        "index_seconds": float(summary.group(5)), "graph_line": line,
        "extract_s_per_passage": (float(per.group(1)) / (1000 if per.group(2) == "ms" else 1)) if per else None,
        "nodes_embedded": num(r"stored beside the store: (\d+) nodes embedded", int),
        "node_embedding_s": num(r"nodes embedded in ([\d.]+) s"),
        "edge_writing_s": num(r"tables written in ([\d.]+) s"),
        "nodes": num(r"; (\d+) nodes, ", int), "edges": num(r" nodes, (\d+) edges", int),
        "causal_edges": num(r"edges \((\d+) causal\)", int),
        "peak_gb": round(int(peak.group(1)) / 1024 / 1024, 3) if peak else None,
        "chunk_wall_s": float(wall.group(1)) if wall else None,
        "disk_bytes_after": int(disk.group(1)) if disk else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path)
    parser.add_argument("--note", default="")
    args = parser.parse_args()
    line = record(args.log.read_text(errors="replace"), args.log.stem)
    if args.note:
        line["note"] = args.note
    json.dump(line, sys.stdout)
    print()


if __name__ == "__main__":
    main()
