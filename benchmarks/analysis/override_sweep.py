"""Re-decide a CF-RAG run's override offline, for several margins, from its recorded candidates.

    python benchmarks/analysis/override_sweep.py docs/results/v2_trap_dev_pooled cf_rag --margins 0,0.02,0.05,0.1,1

The records keep every usable draft's answer, Ψ and φ_causal (`candidates`) and which one was
the baseline (`override.baseline_draft`), so the override rule of
`haystack_cfrag.cfrag.math.arbitration.override_decision` can be replayed for any margin without
running a model. Prints, per margin: EM, ΔEM against standard RAG paired over the same
questions with its 95% bootstrap interval and wins/losses, the overrides made, how many were
right, and the trap rate (Correlation-Trap data only); then the oracle over candidates (some
candidate right) beside standard RAG's EM — what arbitration could reach at best.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from run_folder import read_run_records

from haystack_cfrag.cfrag.math.arbitration import override_decision
from haystack_cfrag.common.text import answers_agree
from haystack_cfrag.evaluation.metrics import exact_match, trap_hit
from haystack_cfrag.evaluation.summary import paired


def redecide(record: dict[str, Any], margin: float) -> tuple[str, str]:
    """(answer, decision) of one record under another override margin."""
    cands, info = record.get("candidates") or [], record.get("override")
    if not cands or not info:
        return record["answer"], record.get("decision") or ""
    base = next((j for j, c in enumerate(cands) if c["index"] == info["baseline_draft"]), None)
    if base is None:
        return record["answer"], record.get("decision") or ""
    agree = [answers_agree(c["answer"], cands[base]["answer"]) for c in cands]
    causal = [(c.get("scores") or {}).get("causal") for c in cands]
    winner, decision, _ = override_decision([c["psi"] for c in cands], causal, agree, base, margin)
    return cands[winner]["answer"], decision


def rescored(record: dict[str, Any], answer: str, decision: str) -> dict[str, Any]:
    return {**record, "answer": answer, "decision": decision, "em": exact_match(answer, record["answers"]),
            "trapped": trap_hit(answer, record["answers"], record.get("trap_answer"))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="an eval output folder (records.jsonl or its replay.tar.xz)")
    parser.add_argument("system", help="a system run with a baseline and override_margin (e.g. cf_rag)")
    parser.add_argument("--margins", default="-1,0,0.02,0.05,0.1,0.2,1")
    parser.add_argument("--condition", default="pooled")
    parser.add_argument("--baseline", default="standard_rag")
    args = parser.parse_args()
    records = [r for r in read_run_records(args.out) if r["condition"] == args.condition and not r.get("error")]
    system = [r for r in records if r["system"] == args.system]
    standard = [r for r in records if r["system"] == args.baseline]
    if not system or not standard:
        raise SystemExit(f"No records of '{args.system}' and '{args.baseline}' in {args.out} ({args.condition}).")
    by_q = {r["qid"]: r for r in standard}
    common = [r for r in system if r["qid"] in by_q]
    print(f"{args.system} vs {args.baseline}: {len(common)} questions")
    for margin in (float(m) for m in args.margins.split(",")):
        new = [rescored(r, *redecide(r, margin)) for r in common]
        overrides = [n for n in new if n["decision"] == "override"]
        d = paired(new, [by_q[r["qid"]] for r in common], "em")
        traps = [n["trapped"] for n in new if n["trapped"] is not None]
        trap = f"  trap rate {100 * sum(traps) / len(traps):.1f}" if traps else ""
        print(f"margin {margin:+.2f}: EM {100 * sum(n['em'] for n in new) / len(new):.1f}  "
              f"ΔEM {100 * d['difference']:+.1f} [{100 * d['low']:+.1f}, {100 * d['high']:+.1f}] "
              f"({d['wins']}↑ {d['losses']}↓)  overrides {len(overrides)} "
              f"(right {sum(n['em'] for n in overrides):.0f}){trap}")
    oracle = [max([c["em"] for c in r.get("candidates") or []] or [r["em"]]) for r in common]
    std_em = [by_q[r["qid"]]["em"] for r in common]
    print(f"oracle over candidates {100 * sum(oracle) / len(oracle):.1f}  "
          f"(standard RAG {100 * sum(std_em) / len(std_em):.1f})")


if __name__ == "__main__":
    main()
