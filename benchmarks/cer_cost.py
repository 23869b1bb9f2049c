"""CER's cost against standard RAG's, uncached, with the real embedded models (issue 46.4).

Runs `standard_rag` and `cer` on the first N questions of a data file through `cfrag eval`'s
runner with the reply cache off (a latency run: every call is made, each system on its own
model instance), over the same pooled store as an archived CER run (its `limit`: the store
holds that many questions' passages, so retrieval, the draft and the pool are the archived
run's), then prints per question and in total:

- the latency ratio CER / standard RAG (sum over the questions, and the median per question),
- CER's support scorings per question now and in the archived run (its `selection.scorer_calls`),
  and the scoring tokens evaluated,
- whether each kept set is the archived one (`selection.kept`, the documents' ids in order).

    nice -n 10 python benchmarks/cer_cost.py ../shared/data/trap_dev.jsonl docs/results/cer_trap_dev \\
        --limit 8 --out runs/cer_cost_trap

A killed run resumes from OUT/records.jsonl (the runner skips what is there). Timings are a
ratio measured in one run on one machine, never an assert.
"""

from __future__ import annotations

import argparse
import json
import lzma
import statistics
import tarfile
from pathlib import Path


def archived_records(run: Path) -> tuple[dict, dict[str, dict]]:
    """(the archived run's config, its `cer` main-condition records by question id) from `replay.tar.xz`."""
    with tarfile.open(fileobj=lzma.open(run / "replay.tar.xz")) as tar:
        def read(name: str) -> bytes:
            member = next(m for m in tar.getmembers() if Path(m.name).name == name)
            return tar.extractfile(member).read()

        meta = json.loads(read("metadata.json"))
        lines = read("records.jsonl").decode("utf-8").splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    cer = {r["qid"]: r for r in records
           if r.get("system") == "cer" and not r.get("inject") and not r.get("error")}
    return meta.get("config") or {}, cer


def rows(records: list[dict], archived: dict[str, dict]) -> list[dict]:
    """One row per question answered by both systems: seconds, scorings, kept set, same as archived."""
    by = {(r["system"], r["qid"]): r for r in records if not r.get("inject") and not r.get("error")}
    out = []
    for (system, qid), cer in by.items():
        std = by.get(("standard_rag", qid))
        if system != "cer" or std is None:
            continue
        old = archived.get(qid, {}).get("selection") or {}
        sel = cer.get("selection") or {}
        llm = cer.get("llm") or {}
        out.append({
            "qid": qid,
            "standard_s": std["seconds"],
            "cer_s": cer["seconds"],
            "ratio": cer["seconds"] / std["seconds"] if std["seconds"] > 0 else float("nan"),
            "scorings": sel.get("scorer_calls"),
            "archived_scorings": old.get("scorer_calls"),
            "scoring_tokens": llm.get("scoring_tokens"),
            "scoring_s": llm.get("scoring_seconds"),
            "kept": sel.get("kept"),
            "same": (sel.get("kept") == old.get("kept")) if old else None,
            "same_answer": (cer.get("answer") == archived[qid].get("answer")) if qid in archived else None,
        })
    return out


def table(found: list[dict]) -> str:
    lines = ["| question | standard s | CER s | ratio | scorings (archived) | scoring tokens "
             "| kept = archived |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for r in found:
        lines.append(f"| {r['qid']} | {r['standard_s']:.1f} | {r['cer_s']:.1f} | {r['ratio']:.2f} | "
                     f"{r['scorings']} ({r['archived_scorings']}) | {r['scoring_tokens']} | {r['same']} |")
    n = len(found)
    if n:
        std, cer = sum(r["standard_s"] for r in found), sum(r["cer_s"] for r in found)
        now = [r["scorings"] for r in found if r["scorings"] is not None]
        old = [r["archived_scorings"] for r in found if r["archived_scorings"] is not None]
        same = sum(1 for r in found if r["same"])
        lines += [
            "",
            f"{n} questions: CER {cer:.1f} s against standard RAG's {std:.1f} s: ratio {cer / std:.2f}× "
            f"(median per question {statistics.median(r['ratio'] for r in found):.2f}×).",
            f"Support scorings per question: {statistics.mean(now):.1f} (archived run: "
            f"{statistics.mean(old) if old else float('nan'):.1f}).",
            f"Kept set equal to the archived one: {same} of {n}; answer equal: "
            f"{sum(1 for r in found if r['same_answer'])} of {n}.",
            f"Target CER ≤ 2× standard RAG: {'met' if cer / std <= 2.0 else 'missed'}.",
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data", help="the JSONL file the archived run answered")
    parser.add_argument("archived", help="an archived CER run folder (docs/results/cer_*, replay.tar.xz)")
    parser.add_argument("--limit", type=int, default=8, help="questions timed (the first N of the file)")
    parser.add_argument("--out", required=True, help="the run folder (records.jsonl, report.md)")
    parser.add_argument("--report-only", action="store_true", help="read OUT's records, run nothing")
    args = parser.parse_args()
    config, archived = archived_records(Path(args.archived))
    out = Path(args.out)
    if not args.report_only:
        from haystack_cfrag.evaluation.runner import EvalConfig, run_eval

        pooled = config.get("limit") or args.limit
        run_eval(EvalConfig(data=args.data, limit=max(pooled, args.limit), main_limit=args.limit,
                            corpus=config.get("corpus") or "pooled", systems=["standard_rag", "cer"],
                            llm=config.get("llm") or "embedded:qwen2.5-coder-1.5b-instruct",
                            max_tokens=config.get("max_tokens") or 256, out=str(out), cache=False,
                            progress=False))
    from haystack_cfrag.evaluation.summary import read_records

    text = f"# CER's cost on {Path(args.data).name} (archived: {Path(args.archived).name})\n\n"
    text += table(rows(read_records(out), archived))
    (out / "report.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
