"""Order TimeQA's trap rows for `cfrag eval`: spurious_correlation first, mislabelled rows dropped.

Writes `runs/data/timeqa_train_trap_sc_first.jsonl` (not committed: it is shared/'s data in
another order) and prints what it dropped. A row is dropped as mislabelled when its gold
paragraph states neither the answer nor an alias (normalised whole-phrase mention): the
reader cannot answer it from the evidence the row calls decisive. Rows whose gold paragraph
states the answer but no year of the question's period are kept and counted (TimeQA's
annotation noise: the period is in a paragraph before it).

    python benchmarks/data/timeqa_order.py ../shared/data/timeqa_train_trap.jsonl
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from haystack_cfrag.common.qualifiers import passage_periods, period_overlap, question_period
from haystack_cfrag.common.text import normalize_answer

OUT = Path("runs/data/timeqa_train_trap_sc_first.jsonl")


def states(passage: str, answers: list[str]) -> bool:
    """Whether the passage names one of the answers (normalised, whole words)."""
    text = f" {normalize_answer(passage)} "
    return any(n and f" {n} " in text for n in map(normalize_answer, answers))


def main(path: str) -> None:
    rows = [json.loads(line) for line in Path(path).open(encoding="utf-8")]
    kept, dropped, undated = [], [], 0
    for row in rows:
        gold = " ".join(d["content"] for d in row["gold_docs"])
        if not states(gold, [row["answer"], *row.get("aliases", [])]):
            dropped.append(row["id"])
            continue
        period = question_period(row["question"])
        if period is None or not any(period_overlap(period, p) > 0 for p in passage_periods(gold)):
            undated += 1
        kept.append(row)
    kept.sort(key=lambda r: r["failure_mode"] != "spurious_correlation")  # stable: file order within a mode
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in kept)
    n_sc = sum(r["failure_mode"] == "spurious_correlation" for r in kept)
    print(f"{OUT}: {len(kept)} rows ({n_sc} spurious_correlation first), {undated} whose gold paragraph "
          f"dates no year of the question's period; dropped {len(dropped)} whose gold paragraph states no answer:")
    print("\n".join(dropped))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/timeqa_train_trap.jsonl")
