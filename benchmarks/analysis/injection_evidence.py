"""How many injected passages reached the evidence each answer was written from, per system and level.

    python benchmarks/analysis/injection_evidence.py ../shared/data/hotpotqa_distractor_dev_a.jsonl \
        docs/results/hotpotqa_a_injection

An injection run gives each question its own 10 paragraphs plus N passages of other questions. A record keeps the
titles of its evidence; a title that is not one of the question's own paragraphs is foreign. For each system and
level this prints the mean evidence size, the mean number of foreign passages in it, on how many questions at least
one got in, and on how many questions the evidence is the same as at the previous level. Only questions that every
level answered are counted, so the levels compare the same questions.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path
from typing import Any

from run_folder import read_run_records

from haystack_cfrag.evaluation.datasets import load_items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", type=Path, help="the JSONL file the run used")
    parser.add_argument("out", type=Path, help="the injection run's output folder (records.jsonl or its replay.tar.xz)")
    parser.add_argument("--limit", type=int, default=100, help="the run's --limit (rows whose passages it read)")
    args = parser.parse_args()
    own = {item.id: {p.title for p in item.passages} for item in load_items(args.data, limit=args.limit)}
    by_system: dict[str, dict[int, dict[str, dict[str, Any]]]] = defaultdict(lambda: defaultdict(dict))
    for r in read_run_records(args.out):
        if (r["condition"] == "per-question" or r["condition"].startswith("inject:distractor:")) and not r["error"]:
            by_system[r["system"]][r["inject"]][r["qid"]] = r
    if not by_system:
        raise SystemExit(f"No injection records in {args.out}.")
    missing = {qid for levels in by_system.values() for recs in levels.values() for qid in recs} - set(own)
    if missing:
        raise SystemExit(f"{len(missing)} questions of {args.out} are not in the first {args.limit} rows of "
                         f"{args.data}.")
    print(f"{'system':14s} {'N':>3s} {'n':>3s} {'evidence':>8s} {'foreign':>7s} {'q with foreign':>14s} "
          f"{'same as prev':>12s}")
    for system, levels in sorted(by_system.items()):
        common = set.intersection(*(set(recs) for recs in levels.values()))
        previous: dict[str, list[str]] | None = None
        for level in sorted(levels):
            evidence = {q: levels[level][q]["evidence"] for q in common}
            foreign = [sum(t not in own[q] for t in titles) for q, titles in evidence.items()]
            n = len(common)
            same = "–" if previous is None else f"{sum(evidence[q] == previous[q] for q in common)}/{n}"
            print(f"{system:14s} {level:3d} {n:3d} {sum(map(len, evidence.values())) / n:8.1f} {sum(foreign) / n:7.2f}"
                  f" {sum(f > 0 for f in foreign):>10d}/{n:<3d} {same:>12s}")
            previous = evidence


if __name__ == "__main__":
    main()
