"""CF-RAG's duels read other ways, offline: which reading picks the decisive passage's answer.

For each duel a recorded `cfrag eval` run held (system `cf_rag` by default; `override.duel` in its
records: one passage per candidate), where some candidate is right (only there can a reading change
EM), the reader scores each candidate

- support  s(a | q, {its own duel passage})                (`ReaderSupportScorer`, length-normalised)
- pmi      s(a | q, {its passage}) − s(a | q, ∅)          (the evidence-erased contrast)
- joint    s("Answer: a" | the duel's own prompt over both passages), averaged over both passage orders
           (the generated reading's likelihood, without its order bias)
- options  the candidates as lettered options over both passages, averaged over the option orders and
           both passage orders

and each reading picks the best-scored candidate (the baseline's draft on a tie). Reported per
reading: the duels whose pick is right, wins (a right challenger the recorded duel did not pick) and
losses (a right answer the recorded duel kept or chose and the reading does not), against the
recorded reading (generated, confirmed in reverse order). One JSON line per duel in OUT/duels.jsonl
(a killed run resumes), the table in OUT/report.md.

    python benchmarks/analysis/duel_readings.py runs/arch/final/trap_tune ../shared/data/trap_tune.jsonl \
        --out runs/duels/tune
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from run_folder import read_run_records

READINGS = ("support", "pmi", "joint", "options")


def duels(records: list[dict], system: str) -> list[dict]:
    """The recorded duels with a right candidate: question, candidates (answer, passage id, em), the baseline's."""
    out = []
    for r in records:
        if r.get("system") != system or r.get("inject", 0) or r.get("error"):
            continue
        override = r.get("override") or {}
        duel = override.get("duel")
        if not duel:
            continue
        by_index = {c["index"]: c for c in r.get("candidates") or []}
        cands = [{"index": i, "answer": by_index[i]["answer"], "passage": p, "em": float(by_index[i].get("em", 0.0))}
                 for i, p in zip(duel["candidates"], duel["passages"], strict=True)]
        if not any(c["em"] for c in cands):
            continue
        out.append({"qid": r["qid"], "question": r["question"], "baseline": override.get("baseline_draft"),
                    "recorded": r["answer"], "recorded_em": float(r.get("em", 0.0)), "candidates": cands,
                    "failure_mode": r.get("failure_mode")})
    return out


def score_duel(duel: dict, texts: dict[str, str], scorer) -> dict[str, list[float]]:
    """Each reading's score of each candidate (in the duel's candidate order)."""
    from haystack import Document
    from haystack.dataclasses import ChatMessage

    from haystack_cfrag.common.prompting import SHORT_DRAFT_PROMPT, render_plain_evidence

    q, cands = duel["question"], duel["candidates"]
    docs = [Document(content=texts[c["passage"]]) for c in cands]
    scores: dict[str, list[float]] = {name: [] for name in READINGS}
    for c, doc in zip(cands, docs, strict=True):
        out = scorer.run(query=q, answers=[c["answer"]], documents=[doc])
        scores["support"].append(out["support"][0])
        scores["pmi"].append(out["pmi"][0])
    orders = [docs, docs[::-1]]
    joint = [0.0] * len(cands)
    for shown in orders:
        prompt = [ChatMessage.from_user(SHORT_DRAFT_PROMPT.format(query=q, evidence=render_plain_evidence(shown)))]
        for k, c in enumerate(cands):
            joint[k] += scorer.score_reply(prompt, c["answer"], reply_prefix="Answer: ") / len(orders)
    scores["joint"] = joint
    options = [0.0] * len(cands)
    for shown in orders:
        values = scorer.option_support(q, [c["answer"] for c in cands], shown)
        options = [a + v / len(orders) for a, v in zip(options, values, strict=True)]
    scores["options"] = options
    return scores


def pick(duel: dict, values: list[float]) -> int:
    """The best-scored candidate's position; the baseline's on a tie."""
    cands = duel["candidates"]
    base = next((k for k, c in enumerate(cands) if c["index"] == duel["baseline"]), 0)
    best = max(range(len(cands)), key=lambda k: (values[k], k == base))
    return best


def report(done: list[dict]) -> str:
    lines = [f"{len(done)} duels with a right candidate; the recorded reading is right on "
             f"{sum(d['recorded_em'] for d in done):.0f}.", "",
             "| reading | right | wins vs recorded | losses vs recorded | won | lost |", "|---|---:|---:|---:|---|---|"]
    for name in READINGS:
        right = [d["candidates"][pick(d, d["scores"][name])]["em"] for d in done]
        won = [d["qid"] for d, r in zip(done, right, strict=True) if r > d["recorded_em"]]
        lost = [d["qid"] for d, r in zip(done, right, strict=True) if r < d["recorded_em"]]
        lines.append(f"| {name} | {sum(right):.0f} | {len(won)} | {len(lost)} | {', '.join(won)} | {', '.join(lost)} |")
    secs = [d["seconds"] for d in done]
    if secs:
        lines += ["", f"Scoring cost: {sum(secs) / len(secs):.1f} s a duel (all four readings)."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run", help="a cfrag eval run folder (records.jsonl, or a committed replay.tar.xz)")
    parser.add_argument("data", nargs="+", help="the data file(s) the run answered (their passages)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--system", default="cf_rag")
    parser.add_argument("--format", default="auto")
    parser.add_argument("--llm", default="embedded:qwen2.5-coder-1.5b-instruct")
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()
    from haystack_cfrag.evaluation.datasets import load_items

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log, todo = out / "duels.jsonl", duels(read_run_records(Path(args.run)), args.system)
    done = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []  # resumes
    if not args.report_only:
        from haystack_cfrag.adapters import factories
        from haystack_cfrag.support import ReaderSupportScorer

        texts = {p.id: p.content for path in args.data for item in load_items(path, args.format) for p in item.passages}
        scorer = ReaderSupportScorer(chat_generator=factories.chat_generator(args.llm, n_ctx=4096),
                                     erased_contrast=True, max_evidence_chars=None)
        scorer.warm_up()
        seen = {(d["qid"], tuple(c["answer"] for c in d["candidates"])) for d in done}
        for duel in todo:
            if (duel["qid"], tuple(c["answer"] for c in duel["candidates"])) in seen:
                continue
            if not all(c["passage"] in texts for c in duel["candidates"]):
                print(f"{duel['qid']}: a duel passage is not in the data; skipped", flush=True)
                continue
            start = time.perf_counter()
            duel["scores"] = score_duel(duel, texts, scorer)
            duel["seconds"] = time.perf_counter() - start
            with log.open("a") as f:
                f.write(json.dumps(duel) + "\n")
            done.append(duel)
            print(f"{duel['qid']}: {duel['seconds']:.0f} s", flush=True)
    text = f"# CF-RAG's duels read other ways ({Path(args.run).name})\n\n" + report(done)
    (out / "report.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
