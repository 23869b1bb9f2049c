"""Paired comparison of any two systems in an eval run's records (the report pairs against standard RAG only).

    python benchmarks/analysis/paired_compare.py docs/results/hotpotqa_a_pooled "cf_rag[anchors=2]" cf_rag

A system may come from another run folder over the same questions (`FOLDER::SYSTEM`): for example one
graph extractor's CausalRAG against the archived run with the other extractor's graph:

    python benchmarks/analysis/paired_compare.py runs/g45_trap causal_rag docs/results/trap_dev_family::causal_rag

Prints, for EM, F1, lenient containment and gold recall, the mean difference A − B over the questions both
answered, its 95% paired bootstrap interval, and how many questions A scored higher (↑) or lower (↓) than B.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from run_folder import read_run_records

from haystack_cfrag.evaluation.summary import METRICS, paired

SEPARATOR = "::"


def system_records(default_folder: Path, spec: str, condition: str) -> list[dict[str, Any]]:
    """The records of `spec` ("SYSTEM" in `default_folder`, or "FOLDER::SYSTEM") under `condition`."""
    folder, _, system = spec.rpartition(SEPARATOR)
    records = read_run_records(Path(folder) if folder else default_folder)
    return [r for r in records if r["condition"] == condition and r["system"] == system]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="an eval output folder (records.jsonl or its replay.tar.xz)")
    parser.add_argument("system_a", help="SYSTEM of OUT, or FOLDER::SYSTEM")
    parser.add_argument("system_b", help="SYSTEM of OUT, or FOLDER::SYSTEM")
    parser.add_argument("--condition", default="pooled")
    args = parser.parse_args()
    a = system_records(args.out, args.system_a, args.condition)
    b = system_records(args.out, args.system_b, args.condition)
    for metric in (*METRICS, "support_recall"):
        o = paired(a, b, metric)
        if o is None:
            raise SystemExit(f"No question answered by both '{args.system_a}' and '{args.system_b}' in {args.out}.")
        print(f"{metric:15s} n={o['n']}  {100 * o['difference']:+.1f} [{100 * o['low']:+.1f}, {100 * o['high']:+.1f}]"
              f"  ({o['wins']}↑ {o['losses']}↓)")


if __name__ == "__main__":
    main()
