"""Add the gate's period readings to a run folder recorded before the gate read periods.

    python benchmarks/analysis/period_readings.py runs/timeqa_train runs/timeqa_train_periods \
        ../shared/data/timeqa_train_trap.jsonl [--folds 5]

The readings `dated` and `best_dated` (`cascade.math.signals`) are a pure function of the question, standard
RAG's answer and the passages it read; this recomputes them from each question's standard RAG evidence (its
titles, in retrieval order, looked up in the data rows' passages) exactly as the gate computes them, and writes a
copy of the folder's records and metadata with every gate reading completed — the folder `cfrag gate fit --runs`
reads for a gate with the `period` and `dating_gap` features. A question whose passages cannot all be found is
left as it was (counted). With `--folds K` the copy is K folders (`DST_1` … `DST_K`), the questions split by
their Wikipedia page (`source.page`, hashed): `cfrag gate fit` cross-validates by sample, so each fold is held
out as a sample and no page's questions are both fitted and held out.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

from run_folder import read_run_records

from haystack_cfrag.cascade.math import signals


def data_rows(paths: list[Path]) -> dict[str, dict]:
    return {row["id"]: row for p in paths for row in map(json.loads, p.open(encoding="utf-8"))}


def fold(row: dict, k: int) -> int:
    page = str((row.get("source") or {}).get("page") or row["id"])
    return int(hashlib.sha256(page.encode()).hexdigest(), 16) % k + 1


def main(src: Path, dst: Path, data: list[Path], folds: int) -> None:
    records = read_run_records(src)
    rows = data_rows(data)
    texts = {d["title"]: d["content"] for r in rows.values()
             for d in r.get("gold_docs", []) + r.get("spurious_docs", [])}
    evidence = {r["qid"]: r.get("evidence") or [] for r in records if r["system"] == "standard_rag"}
    filled = missing = 0
    for r in records:
        reading = (r.get("gate") or {}).get("signals")
        if not isinstance(reading, dict):
            continue
        titles = evidence.get(r["qid"], [])
        if not titles or any(t not in texts for t in titles):
            missing += 1
            continue
        full = signals(reading.get("answer") or "", [texts[t] for t in titles], reading.get("support"),
                       question=r["question"])
        reading.update(dated=full["dated"], best_dated=full["best_dated"])
        filled += 1
    meta = json.loads((src / "metadata.json").read_text(encoding="utf-8"))
    parts = {0: (dst, records)} if folds <= 1 else {
        k: (dst.with_name(f"{dst.name}_{k}"), [r for r in records if fold(rows.get(r["qid"], r), folds) == k])
        for k in range(1, folds + 1)}
    for k, (folder, recs) in parts.items():
        folder.mkdir(parents=True, exist_ok=False)
        data_name = Path(meta["config"]["data"])
        part = {**meta, "config": {**meta["config"], "data": str(data_name.with_stem(f"{data_name.stem}_fold{k}"))
                                   if k else str(data_name)}}
        (folder / "metadata.json").write_text(json.dumps(part, indent=1), encoding="utf-8")
        with (folder / "records.jsonl").open("w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in recs)
        print(f"{folder}: {len({r['qid'] for r in recs})} questions")
    print(f"{filled} readings completed, {missing} left as they were (passages not found)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("src", type=Path)
    parser.add_argument("dst", type=Path)
    parser.add_argument("data", type=Path, nargs="+")
    parser.add_argument("--folds", type=int, default=1)
    args = parser.parse_args()
    main(args.src, args.dst, args.data, args.folds)
