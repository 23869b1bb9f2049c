"""The causal graph's index cost per passage, by extractor, against embedding the same passages (issue 45).

Reads the passage pools of the evaluation's data files (every passage of the first --limit
questions, as `cfrag eval --corpus pooled` stores them), then on the same passages and the same
machine, each warmed up first (loading is not timed):

- embeds them with the embedded MiniLM (`embedded:all-MiniLM-L6-v2`, batch 32, as `cfrag index`),
- builds the graph with `CausalGraphBuilder(extractor=SpacyGraphExtractor())` (no cache: every
  passage parsed, the graph merged), and prints nodes, edges and causal edges,
- with --llm N, extracts N passages (taken in turn from each data file) with `LLMGraphExtractor`
  (CausalRAG's prompt), schema-constrained JSON through llama.cpp, then the same N as free text (the
  recipe of the archived runs), and says how many replies parsed and how many tokens they took,

and prints seconds per passage and the ratio graph / embedding. A ratio measured once on one
machine (with whatever else it runs), never an assert; run it niced next to an evaluation:

    nice -n 15 python benchmarks/bench_graph_extractors.py ../shared/data/hotpotqa_distractor_dev_a.jsonl \\
        ../shared/data/trap_dev.jsonl --limit 30 --llm 10 --dump runs/spacy_edges.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import time
from functools import partial
from pathlib import Path

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def pool(paths: list[str], limit: int) -> list[tuple[str, object]]:
    """(data file name, Document) for every distinct passage of the first `limit` questions of each file."""
    from haystack import Document

    from haystack_cfrag.evaluation.datasets import load_items

    out, seen = [], set()
    for path in paths:
        for item in load_items(path, "auto", limit=limit, offset=0):
            for p in item.passages:
                if p.id not in seen:
                    seen.add(p.id)
                    out.append(
                        (Path(path).name, Document(id=p.id, content=p.content, meta={"title": p.title}))
                    )
    return out


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data", nargs="+", help="evaluation data files (HotpotQA, trap)")
    parser.add_argument(
        "--limit", type=int, default=30, help="questions per file (their passages are the pool)"
    )
    parser.add_argument(
        "--llm", type=int, default=0, help="passages to extract with the constrained LLM (≤ 15)"
    )
    parser.add_argument(
        "--dump", type=Path, default=None, help="write each passage's spaCy extraction (JSONL)"
    )
    args = parser.parse_args()

    from haystack_cfrag import models
    from haystack_cfrag.adapters import factories
    from haystack_cfrag.causal_rag.components.causal_graph_builder import CausalGraphBuilder
    from haystack_cfrag.causal_rag.extractors import BUILDER_SETTINGS, make_extractor

    rows = pool(args.data, args.limit)
    docs = [d for _, d in rows]
    chars = sum(len(d.content) for d in docs)
    print(
        f"{len(docs)} passages ({', '.join(f'{n}: {sum(f == n for f, _ in rows)}' for n in dict(rows))}), "
        f"{chars / len(docs):.0f} characters each on average"
    )

    embedder = factories.document_embedder(models.EMBEDDED_EMBEDDER, progress_bar=False)
    embedder.warm_up()
    embedder.run(documents=docs[:8])  # first batch apart: torch's one-time setup
    _, embed_s = timed(lambda: embedder.run(documents=docs))

    spacy = make_extractor("spacy")
    spacy.warm_up()
    spacy.run(texts=[d.content for d in docs[:8]])
    builder = CausalGraphBuilder(extractor=spacy, progress_bar=False, **BUILDER_SETTINGS["spacy"])
    out, graph_s = timed(lambda: builder.run(documents=docs))
    stats = out["stats"]

    n = len(docs)
    print(
        f"embedding (MiniLM, batch 32):  {embed_s / n * 1000:7.2f} ms per passage "
        f"({n / embed_s:.0f} passages/s)"
    )
    print(
        f"graph (spaCy, no generation):  {graph_s / n * 1000:7.2f} ms per passage "
        f"({n / graph_s:.0f} passages/s): "
        f"{stats['nodes']} nodes, {stats['edges']} edges, {stats['causal_edges']} causal"
    )
    print(f"ratio graph / embedding:       {graph_s / embed_s:.2f}")
    archived = (9.7, 10.6)  # s per passage, the LLM recipe on HotpotQA and PopQA (docs/results.md)
    print(
        f"ratio LLM graph (archived {archived[0]}–{archived[1]} s/passage) / spaCy graph: "
        f"{archived[0] / (graph_s / n):.0f}–{archived[1] / (graph_s / n):.0f}"
    )

    if args.dump is not None:
        args.dump.parent.mkdir(parents=True, exist_ok=True)
        extractions = spacy.run(texts=[d.content for d in docs])["extractions"]
        with args.dump.open("w", encoding="utf-8") as fh:
            for (name, doc), ex in zip(rows, extractions, strict=True):
                fh.write(
                    json.dumps(
                        {
                            "file": name,
                            "id": doc.id,
                            "title": doc.meta["title"],
                            "text": doc.content,
                            "triples": [[t.head, t.relation, t.tail, t.cue] for t in ex.triples],
                        },
                        ensure_ascii=False,
                    )
                    + "\n"
                )
        print(f"spaCy extractions → {args.dump}")

    if args.llm:
        from haystack_cfrag.causal_rag.components.llm_graph_extractor import LLMGraphExtractor

        generator = factories.chat_generator(models.EMBEDDED_LLM)
        generator.warm_up()
        sample = llm_sample(rows, min(args.llm, 15))
        for constrained in (True, False):
            llm = LLMGraphExtractor(chat_generator=generator, constrained=constrained)
            result, llm_s = timed(partial(llm.run, texts=sample))
            parsed = sum(1 for m in result["meta"] if m["parsed"])
            tokens = sum(m["completion_tokens"] for m in result["meta"])
            triples = sum(len(e.triples) for e in result["extractions"])
            label = "constrained JSON" if constrained else "free text      "
            print(
                f"graph (LLM, {label}): {llm_s / len(sample):7.2f} s per passage on {len(sample)}: "
                f"{parsed}/{len(sample)} replies parsed, {triples} triples, "
                f"{tokens / len(sample):.0f} completion tokens each "
                f"({tokens / llm_s:.1f} tokens/s); ratio to embedding {llm_s / len(sample) / (embed_s / n):.0f}"
            )


def llm_sample(rows: list[tuple[str, object]], k: int) -> list[str]:
    """`k` passage texts taken in turn from each data file (the first of each, then the second, …).

    >>> from types import SimpleNamespace as D
    >>> llm_sample([("a", D(content="a1")), ("a", D(content="a2")), ("b", D(content="b1"))], 3)
    ['a1', 'b1', 'a2']
    """
    by_file: dict[str, list[str]] = {}
    for name, doc in rows:
        by_file.setdefault(name, []).append(doc.content)
    queues = list(by_file.values())
    out: list[str] = []
    while len(out) < k and any(queues):
        for queue in queues:
            if queue and len(out) < k:
                out.append(queue.pop(0))
    return out

if __name__ == "__main__":
    main()
