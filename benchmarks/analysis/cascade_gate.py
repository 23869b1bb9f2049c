"""Explore a gate's operating points offline — a COMPOSED figure, not a measured cascade: the gate's reading on a
sample set against each method's archived answers.

A cascade answers as standard RAG where the gate stays closed and as the method where it opens (the
method's calls are the always-on method's own, so its archived answer is the one it gives there). For each
sample, method and threshold this prints the escalation rate, the method's wins kept (a win behind a closed
gate is lost), its losses avoided (a loss behind a closed gate is saved), and the cascade's EM against
standard RAG and against the method (paired, 95 % bootstrap interval, ↑/↓).

    python benchmarks/analysis/cascade_gate.py runs/cascade/archived_answers.json \
        trap_dev=runs/cascade/sig_trap_dev dev_a=runs/cascade/sig_dev_a --thresholds=0.2,0.4,0.6

The signals come from `cfrag eval … --systems benchmarks/gate_signals.yml --no-cache` (standard RAG and the
gate, nothing behind it): standard RAG's answer there is this run's, and a method's archived answer stands
where the gate opens. The decision is the shipped one (`haystack_cfrag.cascade.math.decide`) with each method's
shipped gate model (its `*_auto.yml`) at each operating point (P(the method wins) ≥ threshold). What a cascade
did end to end is in its own runs' records (docs/cascade.md); a figure from here says "composed" beside it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_folder import read_run_records  # noqa: E402

from haystack_cfrag.cascade.math import decide  # noqa: E402
from haystack_cfrag.cascade.model import GateModel  # noqa: E402
from haystack_cfrag.evaluation.metrics import exact_match, paired_bootstrap  # noqa: E402
from haystack_cfrag.registry import resolve  # noqa: E402
from haystack_cfrag.stores.safe_files import read_text  # noqa: E402

METHODS = ("cf_rag", "cf_rag_fast", "cer", "cdf_rag", "causal_rag")


def signals_of(folder: Path) -> dict[str, dict[str, Any]]:
    """qid -> {"answer", "em", "gate", "gold", "question"} of the gate-signals run in `folder`."""
    out = {}
    for r in read_run_records(folder):
        if r.get("gate") and r["condition"] in ("pooled", "per_question", "per-question"):
            out[r["qid"]] = {"answer": r["answer"], "em": float(r["em"]), "gate": r["gate"], "gold": r["answers"],
                          "question": r.get("question", "")}
    return out


def table(sample: dict[str, Any], sig: dict[str, dict[str, Any]], method: str,
          threshold: float) -> dict[str, Any] | None:
    """The cascade of `method` at `threshold` on one sample (None: the method has no archived answers there)."""
    qids = [q for q, row in sample["questions"].items() if q in sig and method in row]
    if not qids:
        return None
    std = [sig[q]["em"] for q in qids]
    meth = [float(sample["questions"][q][method]["em"]) for q in qids]
    cascade_name = f"{method.removesuffix('_fast')}_auto"  # cf_rag_fast behind cf_rag_auto's gate
    model = GateModel.from_dict(resolve(cascade_name).data["components"]["gate"]["init_parameters"]["model"])
    esc = [decide(sig[q]["gate"]["signals"], sig[q].get("question") or "", model, threshold=threshold).escalate
           for q in qids]
    cascade = [m if e else s for s, m, e in zip(std, meth, esc, strict=True)]
    wins = [q for q, s, m in zip(qids, std, meth, strict=True) if m > s]
    losses = [q for q, s, m in zip(qids, std, meth, strict=True) if m < s]
    opened = {q for q, e in zip(qids, esc, strict=True) if e}
    return {
        "n": len(qids), "escalated": len(opened), "std_em": 100 * sum(std) / len(std),
        "method_em": 100 * sum(meth) / len(meth), "cascade_em": 100 * sum(cascade) / len(cascade),
        "wins": len(wins), "wins_kept": sum(q in opened for q in wins),
        "losses": len(losses), "losses_avoided": sum(q not in opened for q in losses),
        "vs_std": paired_bootstrap(cascade, std), "vs_method": paired_bootstrap(cascade, meth),
        "lost_wins": [q for q in wins if q not in opened],
    }


def _ci(p: dict[str, float]) -> str:
    return (f"{100 * p['difference']:+.1f} [{100 * p['low']:+.1f}, {100 * p['high']:+.1f}] "
            f"({p['wins']}↑ {p['losses']}↓)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("answers", type=Path, help="archived_answers.json (benchmarks/analysis/archived_answers.py)")
    parser.add_argument("runs", nargs="+", help="SAMPLE=FOLDER of a gate-signals run")
    parser.add_argument("--thresholds", default="0.1,0.2,0.3,0.4,0.5,0.6,0.7")
    parser.add_argument("--methods", default=",".join(METHODS))
    args = parser.parse_args()
    archived = json.loads(read_text(args.answers, "run"))  # the safe opener: never a FIFO waited on
    thresholds = [float(t) for t in args.thresholds.split(",")]
    for spec in args.runs:
        name, _, folder = spec.partition("=")
        sample, sig = archived[name], signals_of(Path(folder))
        changed = [q for q in sig if q in sample["questions"]
                   and exact_match(sig[q]["answer"], sample["questions"][q]["gold"])
                   != sample["questions"][q]["standard_rag"]["em"]]
        print(f"\n## {name}: {len(sig)} questions with signals; standard RAG's EM changed from the archive on "
              f"{len(changed)} {changed[:6]}")
        print("| method | gate | escalated | wins kept | losses avoided | EM std → cascade (method) "
              "| cascade − std | cascade − method | wins lost |")
        print("|---|---:|---:|---:|---:|---|---|---|---|")
        for method in args.methods.split(","):
            for t in thresholds:
                row = table(sample, sig, method, t)
                if row is None:
                    continue
                print(f"| {method} | {t:g} | {row['escalated']}/{row['n']} | {row['wins_kept']}/{row['wins']} | "
                      f"{row['losses_avoided']}/{row['losses']} | {row['std_em']:.1f} → {row['cascade_em']:.1f} "
                      f"({row['method_em']:.1f}) | {_ci(row['vs_std'])} | {_ci(row['vs_method'])} | "
                      f"{' '.join(row['lost_wins'])} |")


if __name__ == "__main__":
    main()
