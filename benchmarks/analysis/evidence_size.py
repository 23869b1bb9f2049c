"""How much evidence a selecting system (CER) gave its reader, against standard RAG's top 5 in the same run.

Reads an evaluation run folder (`run_folder.read_run_records`). Per system whose records hold a
selection with a `kept` list (CER's selector; a YAML of your own with it): the mean number of
passages kept and of those in the pool, how many questions kept one passage, how often θ was
reached and why the forward phase stopped, the gold (supporting-fact) recall of the kept set
against standard RAG's top 5, and the tokens of the answer's own prompt against standard RAG's
prompt. CER makes two calls (a draft over the pool, which is standard RAG's prompt, then the
answer over the kept set), so the answer's prompt is its prompt tokens minus standard RAG's on the
same question: it needs `standard_rag` in the same folder (questions without it are left out of
that column).

    python benchmarks/analysis/evidence_size.py runs/hotpot_a_reader
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from statistics import mean
from typing import Any

from run_folder import group_by_system, read_run_records

BASELINE = "standard_rag"


def summarize(records: list[dict[str, Any]], baseline: str = BASELINE) -> dict[str, dict[str, Any]]:
    """{system: summary} for every system whose records carry a kept set ("system (condition)" when
    the folder holds several conditions; the baseline is matched within the same condition).

    >>> recs = [
    ...     {"system": "standard_rag", "qid": "q", "support_recall": 1.0, "llm": {"prompt_tokens": 500}},
    ...     {"system": "cer", "qid": "q", "support_recall": 0.5, "llm": {"prompt_tokens": 650},
    ...      "selection": {"pool": list("abcde"), "kept": ["a"], "reached": True, "stop": "delta"}}]
    >>> s = summarize(recs)["cer"]
    >>> s["kept"], s["one_passage"], s["answer_prompt"], s["baseline_prompt"], s["gold_recall"], s["baseline_recall"]
    (1, 1, 150, 500, 50.0, 100.0)
    """
    base = {(r.get("condition"), r["qid"]): r for r in records if r["system"] == baseline}
    out = {}
    for system, recs in group_by_system(records).items():
        recs = [r for r in recs if isinstance((r.get("selection") or {}).get("kept"), list)]
        if not recs:
            continue
        kept = [len(r["selection"]["kept"]) for r in recs]
        pool = [len(r["selection"].get("pool") or []) for r in recs]
        paired = [(r, base[(r.get("condition"), r["qid"])]) for r in recs if (r.get("condition"), r["qid"]) in base]
        answer_prompt = [r["llm"]["prompt_tokens"] - b["llm"]["prompt_tokens"] for r, b in paired]
        both = [(r["support_recall"], b["support_recall"]) for r, b in paired
                if r.get("support_recall") is not None and b.get("support_recall") is not None]
        recall, base_recall = [x for x, _ in both], [y for _, y in both]
        out[system] = {
            "questions": len(recs),
            "kept": round(mean(kept), 3),
            "pool": round(mean(pool), 3),
            "one_passage": sum(k == 1 for k in kept),
            "reached": sum(bool(r["selection"].get("reached")) for r in recs),
            "stops": Counter(str(r["selection"].get("stop")) for r in recs),
            "answer_prompt": round(mean(answer_prompt), 1) if answer_prompt else None,
            "baseline_prompt": round(mean(b["llm"]["prompt_tokens"] for _, b in paired), 1) if paired else None,
            "gold_recall": round(100 * mean(recall), 1) if recall else None,
            "baseline_recall": round(100 * mean(base_recall), 1) if base_recall else None,
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--baseline", default=BASELINE, help="the system read as the top-k baseline")
    args = parser.parse_args()
    table = summarize([r for r in read_run_records(args.folder) if not r.get("error")], args.baseline)
    print(f"| system | questions | passages kept (of pool) | one passage | θ reached | stops | gold recall, kept "
          f"(top k: {args.baseline}) | answer prompt tok (top k) | fewer passages | less context |")
    print("|---|---:|---|---:|---:|---|---|---|---:|---:|")
    for system, s in table.items():
        stops = ", ".join(f"{k} {n}" for k, n in s["stops"].most_common())
        fewer = f"{100 * (1 - s['kept'] / s['pool']):.0f} %" if s["pool"] else "–"
        less = (f"{100 * (1 - s['answer_prompt'] / s['baseline_prompt']):.0f} %"
                if s["answer_prompt"] is not None and s["baseline_prompt"] else "–")
        print(f"| {system} | {s['questions']} | {s['kept']:.2f} ({s['pool']:.1f}) | {s['one_passage']} "
              f"| {s['reached']} | {stops} | {s['gold_recall']} ({s['baseline_recall']}) "
              f"| {s['answer_prompt']} ({s['baseline_prompt']}) | {fewer} | {less} |")


if __name__ == "__main__":
    main()
