"""Every method's default beside the controls, one row per (method, run folder): the README's and results.md's table.

    python benchmarks/analysis/controls_summary.py trap_dev=docs/results/controls_trap_dev \
        dev_c=docs/results/controls_dev_c

Per run folder (its pooled or per-question condition): the best retrieval control (the highest EM of
`standard_rag`, `standard_rag[top_k=6]`, `hybrid_rag`), the order-noise floor (`order_rag`: answers
changed by order alone), then per method default (`--methods`): EM, ΔEM against standard RAG and against
the best control (paired 95 % bootstrap interval, ↑/↓), and what its wins and losses against standard
RAG are (`haystack_cfrag.evaluation.controls.change_kind`). **Bold**: a lower bound above zero against
the best control. A folder without a retrieval control other than standard RAG says so.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from run_folder import read_run_records

from haystack_cfrag.evaluation.controls import kinds_text
from haystack_cfrag.evaluation.summary import summarize

METHODS = ("cf_rag", "cer", "causal_rag", "cdf_rag")


def _ci(o: dict[str, Any] | None) -> str:
    if not o:
        return "–"
    return f"{100 * o['difference']:+.1f} [{100 * o['low']:+.1f}, {100 * o['high']:+.1f}] ({o['wins']}↑ {o['losses']}↓)"


def folder_rows(label: str, records: list[dict[str, Any]], methods: tuple[str, ...]) -> tuple[str, list[str]]:
    """(a line naming the sample's controls, the table rows of its methods).

    >>> recs = [{"condition": "pooled", "system": s, "pipeline": s.split("[")[0], "qid": str(q), "em": float(q < k),
    ...          "f1": float(q < k), "lenient": float(q < k), "support_recall": 0.5, "evidence": [], "answers": ["x"],
    ...          "answer": str(q < k), "seconds": 1.0, "llm": {"calls": 1}}
    ...         for s, k in (("standard_rag", 2), ("hybrid_rag", 3), ("order_rag", 2), ("cer", 4)) for q in range(6)]
    >>> head, rows = folder_rows("demo", recs, ("cer",))
    >>> print(head.replace("; ", ";\\n"))
    demo (6 questions): best retrieval control `hybrid_rag` 50.0 EM (standard RAG 33.3);
    order noise 0 of 6 answers changed, ΔEM +0.0 [+0.0, +0.0] (0↑ 0↓)
    >>> rows[0].split(" | ")[3:5]
    ['+33.3 [+0.0, +66.7] (2↑ 0↓)', '+16.7 [+0.0, +50.0] (1↑ 0↓) vs `hybrid_rag`']
    """
    condition = records[0]["condition"]
    summary = summarize(records)["conditions"][condition]
    systems, ctl = summary["systems"], summary["controls"]
    best, noise = ctl["best_control"], ctl["order_noise"]
    head = f"{label} ({summary['n_questions']} questions): "
    tried = [n for n in systems if n != "standard_rag" and ctl["systems"].get(n) is not None
             and "vs_best_control" not in ctl["systems"][n] and n.split("[")[0] in ("standard_rag", "hybrid_rag")]
    head += (f"best retrieval control `{best}` {100 * systems[best]['em']:.1f} EM" if tried and best
             else "no retrieval control beside standard RAG yet")
    head += f" (standard RAG {100 * systems['standard_rag']['em']:.1f})" if "standard_rag" in systems else ""
    head += (f"; order noise {noise['changed']} of {noise['n']} answers changed, ΔEM {_ci(noise['em'])}"
             if noise else "; no order control yet")
    rows = []
    for method in methods:
        if method not in systems:
            continue
        s, entry = systems[method], ctl["systems"].get(method, {})
        vs_best = (entry.get("vs_best_control") or {}).get("em") if tried else None
        cell = _ci(vs_best) + f" vs `{best}`" if vs_best else "no control run here yet"
        rows.append(" | ".join([f"| {method}", label, f"{100 * s['em']:.1f}",
                                _ci((s.get("vs_baseline") or {}).get("em")),
                                f"**{cell}**" if vs_best and vs_best["low"] > 0 else cell,
                                kinds_text(entry.get("kinds_vs_baseline"))]) + " |")
    return head, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="+", help="LABEL=FOLDER (a run folder or its archive)")
    parser.add_argument("--methods", default=",".join(METHODS))
    args = parser.parse_args()
    heads, rows = [], []
    for spec in args.folders:
        label, _, folder = spec.partition("=")
        records = read_run_records(Path(folder))
        if not records:
            raise SystemExit(f"No records in {folder}.")
        conditions = {r["condition"] for r in records}
        condition = "pooled" if "pooled" in conditions else sorted(conditions)[0]
        head, found = folder_rows(label, [r for r in records if r["condition"] == condition],
                                  tuple(args.methods.split(",")))
        heads.append(head)
        rows += found
    print("\n".join(f"- {h}" for h in heads))
    print("\n| method | sample | EM | ΔEM vs standard RAG | ΔEM vs the best control | what changed vs standard RAG |")
    print("|---|---|---:|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
