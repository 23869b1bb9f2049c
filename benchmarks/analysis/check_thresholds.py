"""Calibrating the hallucination check from a run's records: would another threshold fire on wrong answers?

Reads an evaluation run folder (`run_folder.read_run_records`) whose `cdf_rag` / `grounded_rag`
records keep each claim's support (`claim_supports`, recorded since 2026-11-26). For every
checked answer (the answer the hallucination check received: `original_answer`), whether it was
right (strict EM), and:

- the AUC of the answer's weakest claim support for telling a right answer from a wrong one
  (0.5: the support says nothing about correctness; 1: every right answer is better supported);
- for each support threshold t (and the run's δ), how many answers the check would rewrite
  (S_hall > δ) and how many of those were wrong: the detector's precision and recall, with no
  new call. What a rewrite would then answer is not known from the records: that part of the
  check is measured only where it fired (`checks_fired.py`).

    python benchmarks/analysis/check_thresholds.py runs/trap_family
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path
from typing import Any

from run_folder import read_run_records

THRESHOLDS = (-0.1, -0.25, -0.5, -1.0, -1.5, -2.0, -3.0, -5.0)
"""Support thresholds (nats per token) to try; the checker's default is −1.0 (`cdf_rag.math.claims`)."""


def checked_answers(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """{system: [{"supports": [...], "right": bool}]} for every record whose check scored the answer's claims.

    >>> rec = {"system": "s", "answers": ["Bale"], "answer": "Bale", "selection": {"hallucination_checker": {
    ...     "decision": "rewrite", "original_answer": "Ledger", "claim_supports": [-2.5]}}}
    >>> checked_answers([rec, {"system": "s", "answers": ["x"], "selection": {}}])
    {'s': [{'supports': [-2.5], 'right': False}]}
    """
    from haystack_cfrag.evaluation.metrics import exact_match

    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        check = (r.get("selection") or {}).get("hallucination_checker") or {}
        supports = check.get("claim_supports")
        if not supports:  # no claim, a failed scorer, or a record written before claim supports were kept
            continue
        answer = check.get("original_answer") or r.get("answer") or ""
        out[r["system"]].append({"supports": supports, "right": exact_match(answer, r["answers"]) > 0})
    return dict(out)


def calibration(rows: list[dict[str, Any]], delta: float, thresholds: tuple[float, ...] = THRESHOLDS) -> dict[str, Any]:
    """The weakest claim's AUC for right against wrong answers, and the check's firing at each threshold.

    >>> rows = [{"supports": [-0.1], "right": True}, {"supports": [-0.2, -2.0], "right": False},
    ...         {"supports": [-3.0], "right": False}]
    >>> c = calibration(rows, delta=0.5, thresholds=(-1.0, -2.5))
    >>> c["auc"], c["right"], c["wrong"]
    (1.0, 1, 2)
    >>> c["by_threshold"][-1.0], c["by_threshold"][-2.5]
    ({'fired': 1, 'fired_on_wrong': 1}, {'fired': 1, 'fired_on_wrong': 1})
    """
    from haystack_cfrag.cdf_rag.math.claims import hallucination_score, should_rewrite
    from haystack_cfrag.evaluation.metrics import auc

    weakest_right = [min(r["supports"]) for r in rows if r["right"]]
    weakest_wrong = [min(r["supports"]) for r in rows if not r["right"]]
    by_threshold = {}
    for t in thresholds:
        fired = [r for r in rows if should_rewrite(hallucination_score(r["supports"], t), delta)]
        by_threshold[t] = {"fired": len(fired), "fired_on_wrong": sum(not r["right"] for r in fired)}
    return {"auc": auc(weakest_right, weakest_wrong), "right": len(weakest_right), "wrong": len(weakest_wrong),
            "by_threshold": by_threshold}


def main() -> None:
    from haystack_cfrag.cdf_rag.math.claims import DELTA

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folders", type=Path, nargs="+", help="run folders (their records are pooled per system)")
    parser.add_argument("--delta", type=float, default=DELTA, help=f"the check's δ (default {DELTA})")
    args = parser.parse_args()
    records = [r for folder in args.folders for r in read_run_records(folder) if not r.get("error")]
    table = checked_answers(records)
    if not table:
        raise SystemExit("No record keeps its claims' supports (claim_supports): run cdf_rag or grounded_rag again.")
    for system, rows in sorted(table.items()):
        c = calibration(rows, args.delta)
        print(f"\n{system}: {len(rows)} checked answers ({c['right']} right, {c['wrong']} wrong); AUC of the weakest "
              f"claim's support, right against wrong: {c['auc']:.3f}")
        print(f"\n| support threshold | rewrites (S_hall > δ {args.delta}) | on a wrong answer | on a right answer "
              "| share of the wrong answers caught |")
        print("|---:|---:|---:|---:|---:|")
        for t, f in c["by_threshold"].items():
            caught = f"{f['fired_on_wrong'] / c['wrong']:.2f}" if c["wrong"] else "–"
            print(f"| {t} | {f['fired']} | {f['fired_on_wrong']} | {f['fired'] - f['fired_on_wrong']} | {caught} |")


if __name__ == "__main__":
    main()
