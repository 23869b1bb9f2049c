"""Separation of decisive from correlated passages: the reader's margin against the bi-encoder's and relevance.

For every passage e of an item — a Correlation-Trap item (gold vs spurious) or a HotpotQA
item (supporting paragraphs vs the others) — with the gold answer a, the question q and
counterfactual questions q'_j (the trap item's written ones; for HotpotQA those CF-RAG's
expander writes with the same reader, N=3, as the default pipeline does):

- reader margin   support(a | q, {e}) − max_j support(a | q'_j, {e})   (haystack_cfrag.support)
- reader PMI      support(a | q, {e}) − support(a | q, ∅)
- reader support  support(a | q, {e})
- bi-encoder margin  s(q, e) − max_j s(q'_j, e), s = (cos + 1) / 2 with the embedder (CF-RAG's φ_causal)
- relevance       s(q, e)

and the AUC of each score for gold against spurious passages (ties count one half), with a 95 %
bootstrap interval over items. One JSON line per item in OUT/items.jsonl (a killed run resumes),
the table in OUT/report.md.

    python benchmarks/support_separation.py ../shared/data/trap_dev.jsonl --out runs/separation_trap
    python benchmarks/support_separation.py ../shared/data/hotpotqa_distractor_dev_a.jsonl --limit 30 \
        --out runs/separation_hotpot
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from haystack_cfrag.evaluation.metrics import auc

SCORES = ("reader_margin", "reader_pmi", "reader_support", "biencoder_margin", "relevance")


def item_rows(item, cfs: list[str], scorer, text_embedder, doc_embedder) -> list[dict]:
    """One row per passage of `item` (a `haystack_cfrag.evaluation.datasets.EvalItem`)."""
    from haystack import Document

    q, a = item.question, item.answers[0]
    gold = set(item.gold_titles)
    passages = [({"title": p.title, "content": p.content}, int(p.title in gold)) for p in item.passages]
    docs = [Document(content=d["content"], meta={"title": d["title"]}) for d, _ in passages]
    qvecs = np.array([text_embedder.run(text=t)["embedding"] for t in [q, *cfs]])
    dvecs = np.array([d.embedding for d in doc_embedder.run(documents=docs)["documents"]])
    qn = qvecs / np.linalg.norm(qvecs, axis=1, keepdims=True)
    dn = dvecs / np.linalg.norm(dvecs, axis=1, keepdims=True)
    rel = (qn @ dn.T + 1.0) / 2.0  # rows: q, q'_1.. ; columns: passages
    rows = []
    for k, ((d, gold), doc) in enumerate(zip(passages, docs, strict=True)):
        start = time.perf_counter()
        out = scorer.run(query=q, answers=[a], documents=[doc], counterfactual_queries=cfs or None)
        rows.append({
            "title": d["title"], "gold": gold,
            "reader_support": out["support"][0],
            "reader_margin": out["margin"][0],
            "reader_pmi": (out["pmi"] or [None])[0],
            "biencoder_margin": float(rel[0, k] - rel[1:, k].max()) if len(cfs) else None,
            "relevance": float(rel[0, k]),
            "calls": out["trace"].get("calls"),
            "tokens_evaluated": out["trace"].get("tokens_evaluated"),
            "tokens_reused": out["trace"].get("tokens_reused"),
            "seconds": time.perf_counter() - start,
        })
    return rows


def gold_kinds(items) -> dict[tuple[str, str], str]:
    """Each gold passage's kind: "answer" when it states a gold answer (normalised containment), else "bridge".

    HotpotQA's two supporting paragraphs are often one that states the answer and one that only
    leads to it; a score that conditions on the answer can only see the first.
    """
    from haystack_cfrag.common.text import normalize_answer

    kinds = {}
    for item in items:
        answers = [a for a in map(normalize_answer, item.answers) if a]
        gold = set(item.gold_titles)
        for p in item.passages:
            if p.title in gold:
                text = normalize_answer(p.content)
                kinds[(item.id, p.title)] = "answer" if any(a in text for a in answers) else "bridge"
    return kinds


def rows_auc(pos_rows: list[dict], neg_rows: list[dict], name: str) -> float:
    """AUC of score `name` for the positive rows against the negative ones (rows without the score left out)."""
    return auc([r[name] for r in pos_rows if r[name] is not None], [r[name] for r in neg_rows if r[name] is not None])


def _gold_and_other(items: list[dict]) -> tuple[list[dict], list[dict]]:
    rows = [r for it in items for r in it["rows"]]
    return [r for r in rows if r["gold"]], [r for r in rows if not r["gold"]]


def report(done: list[dict], rng_seed: int = 0, rounds: int = 1000, kinds: dict | None = None) -> str:
    rng = np.random.default_rng(rng_seed)
    lines = ["| score | AUC (gold vs spurious) | 95 % interval (bootstrap over items) |", "|---|---|---|"]
    for name in SCORES:
        def value(items: list[dict], name: str = name) -> float:
            return rows_auc(*_gold_and_other(items), name)
        point = value(done)
        boots = [value([done[i] for i in rng.integers(0, len(done), len(done))]) for _ in range(rounds)]
        lo, hi = np.nanpercentile(boots, [2.5, 97.5])
        lines.append(f"| {name} | {point:.3f} | [{lo:.3f}, {hi:.3f}] |")
    modes = sorted({it.get("failure_mode") for it in done if it.get("failure_mode")})
    if modes:
        lines += ["", "By failure mode (AUC, gold vs spurious):", "",
                  "| failure mode | items | " + " | ".join(SCORES) + " |", "|---|---:|" + "---:|" * len(SCORES)]
        for mode in modes:
            part = [it for it in done if it.get("failure_mode") == mode]
            aucs = [f"{rows_auc(*_gold_and_other(part), name):.3f}" for name in SCORES]
            lines.append(f"| {mode} | {len(part)} | " + " | ".join(aucs) + " |")
    if kinds and not modes:
        negatives = _gold_and_other(done)[1]
        lines += ["", "By kind of gold passage (AUC against the same non-gold passages): *answer*, it states a gold "
                  "answer; *bridge*, it does not (the hop that leads to the answer's passage):", "",
                  "| gold passages | n | " + " | ".join(SCORES) + " |", "|---|---:|" + "---:|" * len(SCORES)]
        for kind in ("answer", "bridge"):
            part = [r for it in done for r in it["rows"] if r["gold"] and kinds.get((it["id"], r["title"])) == kind]
            aucs = [f"{rows_auc(part, negatives, name):.3f}" for name in SCORES]
            lines.append(f"| {kind} | {len(part)} | " + " | ".join(aucs) + " |")
    with_cfs = sum(1 for it in done if it.get("counterfactuals"))
    lines += ["", f"The two margins need counterfactual questions: {with_cfs} of {len(done)} items had some "
              "(the others' margins are left out, not counted as ties)."]
    rows = [r for it in done for r in it["rows"]]
    cost = (f"\n{len(done)} items, {len(rows)} passages ({sum(r['gold'] for r in rows)} gold); per passage: "
            f"{np.mean([r['calls'] or 0 for r in rows]):.1f} scorer calls, "
            f"{np.mean([r['tokens_evaluated'] or 0 for r in rows]):.0f} tokens evaluated, "
            f"{np.mean([r['tokens_reused'] or 0 for r in rows]):.0f} reused, "
            f"median {np.median([r['seconds'] for r in rows]):.2f} s.\n")
    return "\n".join(lines) + "\n" + cost


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data")
    parser.add_argument("--out", required=True)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--llm", default="embedded:qwen2.5-coder-1.5b-instruct")
    parser.add_argument("--report-only", action="store_true", help="rewrite OUT/report.md from OUT/items.jsonl")
    args = parser.parse_args()
    from haystack_cfrag.evaluation.datasets import load_items

    items = load_items(args.data, limit=args.limit)
    kinds = gold_kinds(items)
    if args.report_only:
        done = [json.loads(line) for line in (Path(args.out) / "items.jsonl").read_text().splitlines()]
        text = f"# Separation on {Path(args.data).name}\n\n" + report(done, kinds=kinds)
        (Path(args.out) / "report.md").write_text(text)
        print(text)
        return
    from haystack_cfrag.adapters import factories
    from haystack_cfrag.cfrag.components.counterfactual_query_expander import CounterfactualQueryExpander
    from haystack_cfrag.support import ReaderSupportScorer

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "items.jsonl"
    done = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    seen = {d["id"] for d in done}
    written = {}  # the trap files' own counterfactual questions
    for line in Path(args.data).read_text().splitlines():
        row = json.loads(line) if line.strip() else {}
        if row.get("counterfactual_questions"):
            written[str(row["id"])] = list(row["counterfactual_questions"])
    reader = factories.chat_generator(args.llm, n_ctx=2048)
    scorer = ReaderSupportScorer(chat_generator=reader, erased_contrast=True)
    expander = CounterfactualQueryExpander(chat_generator=reader)
    text_embedder, doc_embedder = factories.text_embedder(), factories.document_embedder()
    for comp in (scorer, expander, text_embedder, doc_embedder):
        comp.warm_up()
    for item in items:
        if item.id in seen:
            continue
        cfs = written.get(item.id)
        source = "written"
        if cfs is None:
            cfs, source = list(expander.run(query=item.question)["queries"])[1:], "expander"
        rows = item_rows(item, cfs, scorer, text_embedder, doc_embedder)
        record = {"id": item.id, "failure_mode": item.failure_mode, "counterfactuals": cfs,
                  "counterfactual_source": source, "rows": rows}
        with log.open("a") as f:
            f.write(json.dumps(record) + "\n")
        done.append(record)
        print(f"{item.id}: {len(rows)} passages", flush=True)
    text = f"# Separation on {Path(args.data).name}\n\n" + report(done, kinds=kinds)
    (out / "report.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
