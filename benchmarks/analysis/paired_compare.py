"""Paired comparison of any two systems in an eval run's records (the report pairs against standard RAG only).

    python benchmarks/analysis/paired_compare.py docs/results/hotpotqa_a_pooled "cf_rag[anchors=2]" cf_rag

Prints, for EM, F1, lenient containment and gold recall, the mean difference A − B over the questions both
answered, its 95% paired bootstrap interval, and how many questions A scored higher (↑) or lower (↓) than B.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from haystack_cfrag.evaluation.summary import METRICS, paired
from run_folder import read_run_records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="an eval output folder (records.jsonl or its replay.tar.xz)")
    parser.add_argument("system_a")
    parser.add_argument("system_b")
    parser.add_argument("--condition", default="pooled")
    args = parser.parse_args()
    records = [r for r in read_run_records(args.out) if r["condition"] == args.condition]
    a = [r for r in records if r["system"] == args.system_a]
    b = [r for r in records if r["system"] == args.system_b]
    for metric in (*METRICS, "support_recall"):
        o = paired(a, b, metric)
        if o is None:
            raise SystemExit(f"No question answered by both '{args.system_a}' and '{args.system_b}' in {args.out}.")
        print(f"{metric:15s} n={o['n']}  {100 * o['difference']:+.1f} [{100 * o['low']:+.1f}, {100 * o['high']:+.1f}]"
              f"  ({o['wins']}↑ {o['losses']}↓)")


if __name__ == "__main__":
    main()
