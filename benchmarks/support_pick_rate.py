"""Pick rate of CF-RAG's selection against selections by the reader's support score, offline.

For each question of a recorded `cfrag eval` run (its `records.jsonl`, system `cf_rag` by
default), CF-RAG's candidates are already there: each draft's answer and the titles of its
evidence E_a (the passages that mention it). Each distinct answer a is scored by the reader
(`haystack_cfrag.support.ReaderSupportScorer`) on each of its first `--passages` evidence
passages e, and gets the best over them of

- support  s(a | q, {e})                      (length-normalised log-probability)
- pmi      s(a | q, {e}) − s(a | q, ∅)          (evidence-erased contrast)
- margin   s(a | q, {e}) − max_j s(a | q'_j, {e}) (the run's own counterfactual questions q'_j)
- options  the multiple-choice reading: every candidate's first evidence passage shown together,
           the candidates listed as lettered options, each letter's log-probability renormalised
           over the options and averaged over the cyclic option orders (position bias cancels;
           `ReaderSupportScorer.option_support`, at most `--max-options` candidates, the
           most-drafted first)

and each selection picks the answer with the highest score. Reported: strict EM of each
selection and of the recorded default, the oracle over candidates (some candidate is right),
the pick rate (EM / oracle), and wins/losses against the default. Questions whose candidates
all agree cost nothing (every selection is the default there). One JSON line per question in
OUT/items.jsonl (a killed run resumes), the table in OUT/report.md.

    tar -xJf docs/results/trap_dev_v3/replay.tar.xz -C runs/trap_v3
    python benchmarks/support_pick_rate.py ../shared/data/trap_dev.jsonl runs/trap_v3 --out runs/pick_trap
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

SELECTIONS = ("support", "pmi", "margin", "options")
PER_PASSAGE = ("support", "pmi", "margin")


def distinct_candidates(record: dict, max_passages: int) -> list[dict]:
    """The record's candidates merged by normalised answer: answer, evidence titles (first `max_passages`), em."""
    from haystack_cfrag.evaluation.metrics import normalize_answer

    merged: dict[str, dict] = {}
    for c in record.get("candidates") or []:
        key = normalize_answer(c.get("answer") or "")
        if not key:
            continue
        entry = merged.setdefault(key, {"answer": c["answer"], "evidence": [], "em": c.get("em", 0.0), "drafts": 0})
        entry["drafts"] += 1
        for title in c.get("evidence") or []:
            if title not in entry["evidence"]:
                entry["evidence"].append(title)
    for entry in merged.values():
        entry["evidence"] = entry["evidence"][:max_passages]
    return list(merged.values())


def score_question(record: dict, cands: list[dict], texts: dict[str, str], scorer, max_options: int = 4) -> dict:
    from haystack import Document

    cfs = [c if isinstance(c, str) else c.get("text") or c.get("question") or ""
           for c in record.get("counterfactuals") or []]
    cfs = [c for c in cfs if c]
    calls = 0
    for cand in cands:
        best = {name: None for name in PER_PASSAGE}
        for title in cand["evidence"]:
            if title not in texts:
                continue
            out = scorer.run(query=record["question"], answers=[cand["answer"]],
                             documents=[Document(content=texts[title], meta={"title": title})],
                             counterfactual_queries=cfs or None)
            calls += out["trace"].get("calls") or 0
            values = {"support": out["support"][0], "pmi": (out["pmi"] or [None])[0],
                      "margin": out["margin"][0] if cfs else None}
            for name, v in values.items():
                if v is not None and (best[name] is None or v > best[name]):
                    best[name] = v
        cand["scores"] = best
    calls += option_reading(record["question"], cands, texts, scorer, max_options)
    picks = {}
    for name in SELECTIONS:
        scored = [c for c in cands if c["scores"][name] is not None]
        picks[name] = max(scored, key=lambda c: c["scores"][name])["answer"] if scored else record["answer"]
    return {"picks": picks, "calls": calls}


def option_reading(question: str, cands: list[dict], texts: dict[str, str], scorer, max_options: int) -> int:
    """Score the `max_options` most-drafted candidates as lettered options over their first passages
    (stored in each candidate's scores["options"]; None for the others); returns the calls made."""
    from haystack import Document

    shown = sorted(range(len(cands)), key=lambda i: -cands[i].get("drafts", 1))[:max_options]
    titles = []
    for i in shown:
        first = next((t for t in cands[i]["evidence"] if t in texts), None)
        if first is not None and first not in titles:
            titles.append(first)
    for cand in cands:
        cand["scores"]["options"] = None
    if len(shown) < 2 or not titles:
        return 0
    docs = [Document(content=texts[t], meta={"title": t}) for t in titles]
    values = scorer.option_support(question, [cands[i]["answer"] for i in shown], docs)
    for i, v in zip(shown, values, strict=True):
        cands[i]["scores"]["options"] = v
    return len(shown) * len(shown)


def report(done: list[dict], default_name: str, rounds: int = 1000) -> str:
    from haystack_cfrag.evaluation.metrics import exact_match

    rng = np.random.default_rng(0)
    n = len(done)
    if n == 0:
        return "No question scored yet.\n"
    oracle = np.array([it["oracle"] for it in done])
    default = np.array([it["default_em"] for it in done])
    lines = [f"{n} questions; oracle over candidates {100 * oracle.mean():.1f}; "
             f"{sum(it['contested'] for it in done)} with candidates that disagree (the only ones scored).", "",
             "| selection | EM | pick rate (EM / oracle) | ΔEM vs default [95 % CI] | wins / losses |",
             "|---|---:|---:|---|---:|",
             f"| {default_name} (recorded) | {100 * default.mean():.1f} | "
             f"{100 * default.sum() / max(oracle.sum(), 1):.1f} | – | – |"]
    for name in SELECTIONS:
        em = np.array([exact_match(it["picks"].get(name, it["default"]), it["answers"]) for it in done])
        diff = em - default
        boots = [diff[rng.integers(0, n, n)].mean() for _ in range(rounds)]
        lo, hi = np.percentile(boots, [2.5, 97.5])
        lines.append(f"| argmax {name} | {100 * em.mean():.1f} | {100 * em.sum() / max(oracle.sum(), 1):.1f} | "
                     f"{100 * diff.mean():+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}] | "
                     f"{int((diff > 0).sum())} / {int((diff < 0).sum())} |")
    calls = [it["calls"] for it in done if it["contested"]]
    secs = [it["seconds"] for it in done if it["contested"]]
    if calls:
        lines += ["", f"Cost per contested question: {np.mean(calls):.1f} scorer calls, median {np.median(secs):.1f} s "
                      "(all selections from the same scorings)."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data", help="the data file the run answered (its passages give the evidence texts)")
    parser.add_argument("run", help="a cfrag eval run folder (records.jsonl)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--system", default="cf_rag")
    parser.add_argument("--passages", type=int, default=2, help="evidence passages scored per candidate")
    parser.add_argument("--max-options", type=int, default=4, help="candidates listed in the options reading")
    parser.add_argument("--llm", default="embedded:qwen2.5-coder-1.5b-instruct")
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()
    from haystack_cfrag.evaluation.datasets import load_items
    from haystack_cfrag.evaluation.metrics import exact_match

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "items.jsonl"
    done = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    records = [json.loads(line) for line in (Path(args.run) / "records.jsonl").read_text().splitlines()]
    records = [r for r in records if r.get("system") == args.system and r.get("inject", 0) == 0 and not r.get("error")]
    if not args.report_only:
        from haystack_cfrag.adapters import factories
        from haystack_cfrag.support import ReaderSupportScorer

        texts = {p.title: p.content for item in load_items(args.data) for p in item.passages}
        scorer = ReaderSupportScorer(chat_generator=factories.chat_generator(args.llm, n_ctx=2048),
                                     erased_contrast=True)
        scorer.warm_up()
        seen = {d["qid"] for d in done}
        for record in records:
            if record["qid"] in seen:
                continue
            cands = distinct_candidates(record, args.passages)
            row = {"qid": record["qid"], "answers": record["answers"], "default": record["answer"],
                   "default_em": exact_match(record["answer"], record["answers"]),
                   "oracle": float(any(exact_match(c["answer"], record["answers"]) for c in cands)),
                   "contested": len(cands) > 1, "failure_mode": record.get("failure_mode"),
                   "picks": {name: record["answer"] for name in SELECTIONS}, "calls": 0, "seconds": 0.0}
            if len(cands) > 1:
                start = time.perf_counter()
                row.update(score_question(record, cands, texts, scorer, args.max_options))
                row["seconds"] = time.perf_counter() - start
                row["candidates"] = cands
            with log.open("a") as f:
                f.write(json.dumps(row) + "\n")
            done.append(row)
            print(f"{record['qid']}: {'scored' if row['contested'] else 'agreed'}", flush=True)
    title = f"# Pick rate on {Path(args.data).name} ({args.system} of {Path(args.run).name})"
    text = title + "\n\n" + report(done, args.system)
    (out / "report.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
