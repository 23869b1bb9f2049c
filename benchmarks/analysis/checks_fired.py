"""How often CDF-RAG's checks fired, and whether the answer each produced was right against the one it replaced.

Reads an evaluation run folder (`run_folder.read_run_records`): every record whose `selection`
holds a checker's summary (`cdf_rag`, `grounded_rag`, or a YAML of your own with the checkers).
Per system and check, over the questions: how often the check was scored (a decision other
than "undefined"), how often it fired (decided to regenerate or rewrite), how often it fired on
an answer that was wrong (strict EM against the question's answers: the detector's hits), how
often the correction changed the answer, and of those how many turned a wrong answer right and a
right one wrong. The refiner: how often each action was taken.

    python benchmarks/analysis/checks_fired.py runs/trap_family
"""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from run_folder import read_run_records

CHECKS = {"causal_checker": "regenerate", "hallucination_checker": "rewrite"}
"""Each check and the decision with which it fires (its correction call may still return the same answer)."""


def tally(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """{system: {check: counts}} and {system: {"refiner": Counter of actions}}.

    >>> rec = {"system": "s", "answers": ["Bale"], "answer": "Bale", "em": 1.0, "selection": {
    ...     "hallucination_checker": {"decision": "rewrite", "rewritten": True, "original_answer": "Ledger"}}}
    >>> tally([rec])["s"]["hallucination_checker"]  # doctest: +NORMALIZE_WHITESPACE
    {'questions': 1, 'scored': 1, 'fired': 1, 'fired_on_wrong': 1, 'changed': 1, 'wrong_to_right': 1,
     'right_to_wrong': 0}
    """
    from haystack_cfrag.evaluation.metrics import exact_match

    out: dict[str, dict[str, Any]] = defaultdict(dict)
    for r in records:
        selection = r.get("selection") or {}
        if not any(name in selection for name in (*CHECKS, "refiner")):
            continue
        system = out[r["system"]]
        for name, fires in CHECKS.items():
            check = selection.get(name)
            if check is None:
                continue
            c = system.setdefault(name, {"questions": 0, "scored": 0, "fired": 0, "fired_on_wrong": 0, "changed": 0,
                                         "wrong_to_right": 0, "right_to_wrong": 0})
            c["questions"] += 1
            c["scored"] += check.get("decision") not in (None, "undefined", "scorer_failed")
            if check.get("decision") == fires:
                c["fired"] += 1
                before = check.get("original_answer") or ""
                c["fired_on_wrong"] += exact_match(before, r["answers"]) == 0
                # the answer this check produced: what the next check received, or the final answer
                later = selection.get("hallucination_checker") if name == "causal_checker" else None
                after = (later or {}).get("original_answer") or r.get("answer") or ""
                if before.strip() != after.strip():
                    c["changed"] += 1
                    right_before = exact_match(before, r["answers"]) > 0
                    right_after = exact_match(after, r["answers"]) > 0
                    c["wrong_to_right"] += (not right_before) and right_after
                    c["right_to_wrong"] += right_before and not right_after
        if "refiner" in selection:
            system.setdefault("refiner", Counter())[str(selection["refiner"].get("action"))] += 1
    return dict(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path)
    args = parser.parse_args()
    table = tally([r for r in read_run_records(args.folder) if not r.get("error")])
    print("| system | check | questions | scored | fired | fired on a wrong answer | changed the answer "
          "| wrong → right | right → wrong |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for system, checks in sorted(table.items()):
        for name in CHECKS:
            c = checks.get(name)
            if c:
                print(f"| {system} | {name} | {c['questions']} | {c['scored']} | {c['fired']} | {c['fired_on_wrong']} "
                      f"| {c['changed']} "
                      f"| {c['wrong_to_right']} | {c['right_to_wrong']} |")
    for system, checks in sorted(table.items()):
        if "refiner" in checks:
            print(f"\n{system} refiner actions: " + ", ".join(f"{a} {n}" for a, n in checks["refiner"].most_common()))


if __name__ == "__main__":
    main()
