"""Would CER's minimal set, as the evidence of CF-RAG's baseline draft, lift CF-RAG's candidates?

A CF-RAG whose baseline draft reads CER's kept set (instead of the original query's top k) has the
same challengers as the default: they read the strata of the original query's passages, which
the kept set does not change. Its baseline draft is CER's answer: the selector keeps passages in
the order the answer's prompt reads them, and both use standard RAG's prompt. So its candidate
set is exact from two runs over the same questions, with no new LLM call: CER's answer (from a run
with `cer`) and the default's challengers (the `candidates` of a run with `cf_rag`, less the
baseline's answer). This tool reports, over the questions both runs answered: the oracle over
candidates (a candidate right, strict EM) of the default and of that variant, the questions where
they differ, and where CER's answer differs from standard RAG's.

    python benchmarks/analysis/cer_as_baseline.py docs/results/cer_trap_dev docs/results/trap_dev_family
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from run_folder import read_run_records

from haystack_cfrag.common.text import normalize_answer
from haystack_cfrag.evaluation.statistics import oracle_em


def _same(a: str, b: str) -> bool:
    return normalize_answer(a) == normalize_answer(b)


def compare(cer: list[dict[str, Any]], cf_rag: list[dict[str, Any]], standard: list[dict[str, Any]]) -> dict[str, Any]:
    """Oracle over candidates of the default and of the CER-baseline variant, per question and in total.

    >>> std = [{"qid": "q", "answer": "Ledger", "em": 0.0}]
    >>> cf = [{"qid": "q", "answer": "Ledger", "em": 0.0, "candidates": [{"answer": "Ledger", "em": 0.0}]}]
    >>> out = compare([{"qid": "q", "answer": "Bale", "em": 1.0}], cf, std)
    >>> out["oracle_default"], out["oracle_variant"], out["differ"][0]["qid"]
    (0.0, 1.0, 'q')
    """
    by = {name: {r["qid"]: r for r in recs} for name, recs in (("cer", cer), ("cf", cf_rag), ("std", standard))}
    qids = sorted(set(by["cer"]) & set(by["cf"]) & set(by["std"]))
    default = variant = 0.0
    differ, cer_changed = [], []
    for qid in qids:
        c, f, s = by["cer"][qid], by["cf"][qid], by["std"][qid]
        candidates = f.get("candidates") or []
        challengers = [x["em"] for x in candidates if not _same(x["answer"], s["answer"])]
        o_default = oracle_em(f)
        o_variant = max([c["em"], *challengers])
        default += o_default
        variant += o_variant
        row = {"qid": qid, "standard": s["answer"], "cer": c["answer"], "cf_rag": f["answer"],
               "oracle_default": o_default, "oracle_variant": o_variant}
        if o_default != o_variant:
            differ.append(row)
        if not _same(c["answer"], s["answer"]):
            cer_changed.append(row)
    return {"questions": len(qids), "oracle_default": default, "oracle_variant": variant,
            "differ": differ, "cer_changed": cer_changed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("cer_folder", type=Path, help="a run folder with the `cer` system")
    parser.add_argument("cf_rag_folder", type=Path, help="a run folder with `cf_rag` and `standard_rag`")
    args = parser.parse_args()

    def system(folder: Path, name: str) -> list[dict[str, Any]]:
        return [r for r in read_run_records(folder) if r["system"] == name and not r.get("error")]

    out = compare(system(args.cer_folder, "cer"), system(args.cf_rag_folder, "cf_rag"),
                  system(args.cf_rag_folder, "standard_rag"))
    n = out["questions"]
    print(f"{n} questions: oracle over candidates, default cf_rag {out['oracle_default']:.0f}, "
          f"with CER's set as the baseline's evidence {out['oracle_variant']:.0f}")
    for title, rows in (("oracle differs", out["differ"]), ("CER's answer differs from standard RAG's",
                                                             out["cer_changed"])):
        print(f"\n{title}: {len(rows)}")
        for r in rows:
            print(f"  {r['qid']}: standard {r['standard']!r}, cer {r['cer']!r}, cf_rag {r['cf_rag']!r}; "
                  f"oracle {r['oracle_default']:.0f} -> {r['oracle_variant']:.0f}")


if __name__ == "__main__":
    main()
