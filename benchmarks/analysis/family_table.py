"""One table per run folder, the issues' way: accuracy against two references, the oracle, traps and cost.

The report pairs every system against standard RAG only; the causal family's issues also ask for
the default CF-RAG as a reference. Per system, over the questions of one condition:

    system | n | EM | F1 | ΔEM vs A [95% CI] (↑/↓) | ΔF1 vs A | ΔEM vs B [95% CI] (↑/↓) | oracle | trap rate |
    s/question (uncached, † timed on other machines than A's) | calls | prompt / completion tokens |
    what changed vs A | what changed vs B

B is by default the run's best retrieval control (`--second best`: the highest EM of standard RAG,
`standard_rag[top_k=6]`, `hybrid_rag`, … in the folder; `haystack_cfrag.evaluation.controls`); "what
changed" sorts each won and lost question into new evidence, same evidence reordered, answer form, yes/no.

    python benchmarks/analysis/family_table.py docs/results/trap_ks
    python benchmarks/analysis/family_table.py runs/hotpot_c_graph --reference standard_rag --second cf_rag

`trap rate`: the share of answers that contain the question's trap answer (Correlation-Trap data
only; "–" elsewhere). Oracle: the answer or some candidate draft is right (EM).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from run_folder import read_run_records

from haystack_cfrag.evaluation.controls import kinds_of_changes, kinds_text
from haystack_cfrag.evaluation.summary import paired, summarize


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def _delta(o: dict[str, float] | None, counts: bool = True) -> str:
    if o is None:
        return "–"
    text = f"{100 * o['difference']:+.1f} [{100 * o['low']:+.1f}, {100 * o['high']:+.1f}]"
    return text + (f" ({o['wins']}↑ {o['losses']}↓)" if counts else "")


def rows(records: list[dict[str, Any]], reference: str, second: str | None) -> list[str]:
    """The Markdown table's lines for one condition's records.

    >>> recs = [{"system": s, "qid": q, "condition": "pooled", "em": e, "f1": e, "lenient": e, "seconds": t,
    ...          "llm": {"calls": 1, "prompt_tokens": 10, "completion_tokens": 2}}
    ...         for s, t in [("standard_rag", 1.0), ("x", 3.0)] for q, e in [("a", 1.0), ("b", float(s == "x"))]]
    >>> print(rows(recs, "standard_rag", None)[-1])  # doctest: +NORMALIZE_WHITESPACE
    | x | 2 | 100.0 | 100.0 | +50.0 [+0.0, +100.0] (1↑ 0↓) | +50.0 [+0.0, +100.0] | 100.0 | – | 3.0 | 1.0 | 10 / 2
    | won: 1 same evidence reordered; lost: – |
    """
    condition = records[0]["condition"]
    summary = summarize(records, baseline=reference)["conditions"][condition]
    systems = summary["systems"]
    if second == "best":
        second = summary["controls"]["best_control"]
        second = None if second == reference else second
    by_system: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        by_system.setdefault(r["system"], []).append(r)
    head = (f"| system | n | EM | F1 | ΔEM vs {reference} [95% CI] | ΔF1 | "
            + (f"ΔEM vs {second} [95% CI] | " if second else "")
            + "oracle | trap rate | s/question (uncached) | calls | prompt / completion tok | what changed vs "
            + reference + (f" | what changed vs {second}" if second else "") + " |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for name, s in systems.items():
        recs = by_system[name]
        vs = s.get("vs_baseline") or {}
        trap = [float(bool(r.get("trapped"))) for r in recs if r.get("trap_answer")]
        seconds = f"{s['latency']['mean_equivalent']:.1f}" + (" †" if s.get("overhead_across_machines") else "")
        cells = [name, str(s["n"]), _pct(s["em"]), _pct(s["f1"]), _delta(vs.get("em")),
                 _delta(vs.get("f1"), counts=False)]
        if second:
            cells.append("–" if name == second else _delta(paired(recs, by_system.get(second, []), "em")))
        cells += [_pct(s["oracle"]), _pct(sum(trap) / len(trap) if trap else None), seconds,
                  f"{s['llm']['calls'] or 0:.1f}",
                  f"{s['llm']['prompt_tokens'] or 0:.0f} / {s['llm']['completion_tokens'] or 0:.0f}",
                  "–" if name == reference else kinds_text(kinds_of_changes(recs, by_system[reference]))]
        if second:
            cells.append("–" if name == second else kinds_text(kinds_of_changes(recs, by_system.get(second, []))))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="an eval output folder (records.jsonl or its replay.tar.xz)")
    parser.add_argument("--condition", default="pooled")
    parser.add_argument("--reference", default="standard_rag")
    parser.add_argument("--second", default="best",
                        help="a second reference: a system, 'best' (the best retrieval control), '' for none")
    args = parser.parse_args()
    records = [r for r in read_run_records(args.out) if r["condition"] == args.condition]
    if not records:
        raise SystemExit(f"No record of condition '{args.condition}' in {args.out}.")
    print("\n".join(rows(records, args.reference, args.second or None)))
    print("\n† timed on other machines than the reference's (`timing.timed_on`): the ratio of the two compares "
          "machines as much as systems.")


if __name__ == "__main__":
    main()
