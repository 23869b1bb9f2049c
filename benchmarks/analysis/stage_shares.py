"""Where each system's time goes: mean seconds per pipeline stage (component), and its share.

Reads an evaluation run folder (`run_folder.read_run_records`); each record's `stages` holds the
seconds each component of the pipeline took on that question. For CDF-RAG this is "the loop's
share" of the cost: the refiner, the two checks (their scorings and corrective calls) against the
answer's own generation. Replies replayed from a reply cache take no time, so a system with cache
hits is marked: its shares are of what ran, not of an uncached run.

    python benchmarks/analysis/stage_shares.py docs/results/trap_dev_family
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path
from typing import Any

from run_folder import group_by_system, read_run_records

MIN_SHARE = 0.01
"""Stages under this share of a system's time are summed into "other"."""


def shares(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """{system: {"questions", "seconds" (mean), "cache_hits" (total), "stages": {stage: (mean s, share)}}}
    ("system (condition)" when the records hold several conditions).

    >>> recs = [{"system": "s", "stages": {"generator": 3.0, "checker": 1.0}, "cache_hits": 0},
    ...         {"system": "s", "stages": {"generator": 5.0, "checker": 3.0}, "cache_hits": 1}]
    >>> out = shares(recs)["s"]
    >>> out["questions"], out["seconds"], out["cache_hits"], out["stages"]
    (2, 6.0, 1, {'generator': (4.0, 0.667), 'checker': (2.0, 0.333)})
    """
    out = {}
    for system, recs in group_by_system(records).items():
        recs = [r for r in recs if r.get("stages")]
        if not recs:
            continue
        n = len(recs)
        totals: dict[str, float] = defaultdict(float)
        for r in recs:
            for stage, seconds in r["stages"].items():
                totals[stage] += seconds
        whole = sum(totals.values())
        stages = {stage: (round(total / n, 3), round(total / whole, 3) if whole else 0.0)
                  for stage, total in sorted(totals.items(), key=lambda kv: -kv[1])}
        out[system] = {"questions": n, "seconds": round(whole / n, 3),
                       "cache_hits": sum(r.get("cache_hits") or 0 for r in recs), "stages": stages}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path)
    args = parser.parse_args()
    print("| system | questions | mean s (stages) | stages: mean s (share) | cache hits |")
    print("|---|---:|---:|---|---:|")
    for system, s in shares([r for r in read_run_records(args.folder) if not r.get("error")]).items():
        shown = {k: v for k, v in s["stages"].items() if v[1] >= MIN_SHARE}
        other = sum(v[0] for k, v in s["stages"].items() if k not in shown)
        parts = [f"{k} {m:.1f} ({100 * f:.0f} %)" for k, (m, f) in shown.items()]
        if other:
            parts.append(f"other {other:.2f}")
        hits = f"{s['cache_hits']} (replayed: shares of what ran)" if s["cache_hits"] else "0"
        print(f"| {system} | {s['questions']} | {s['seconds']:.1f} | {'; '.join(parts)} | {hits} |")


if __name__ == "__main__":
    main()
