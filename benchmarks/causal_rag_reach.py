"""What CausalRAG's subgraph reaches, for k seed nodes and s hops: the retrieval half of the k, s sweep.

No LLM call per question: the pooled store's graph comes from the extraction cache that
`cfrag eval … --systems causal_rag` (or `cfrag index --graph`) filled, and each (k, s) runs
only `CausalGraphRetriever` over it. Per setting, averaged over the questions:

- nodes, edges and source passages the subgraph reaches (before the pipeline's caps), and
  whether the 60-edge cap cut the expansion;
- gold reach: a gold passage among the passages the subgraph reaches; gold@3: among the 3
  source passages the pipeline adds to the prompt (`max_documents`);
- answer in graph: the gold answer (or an alias) is a node of the subgraph; for Correlation-Trap
  items, trap in graph: the trap answer is.

    python benchmarks/causal_rag_reach.py ../shared/data/trap_dev.jsonl --limit 24 --out runs/reach_trap

The answer-level sweep (the two summary calls and the answer per setting) costs about 15 min
per setting on 2 cores; this table says which settings could change what the reader sees.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

RANGE = (1, 2, 3, 4, 5)


def names_match(answer: str, names: set[str]) -> bool:
    """Whether a normalised answer is a normalised node name (or contained in one, as a whole phrase).

    >>> names_match("Heath Ledger", {"heath ledger", "nolan"}), names_match("Bale", {"christian bale"})
    (True, True)
    >>> names_match("Ale", {"christian bale"})
    False
    """
    from haystack_cfrag.common.text import normalize_answer

    a = normalize_answer(answer)
    return bool(a) and any(a == n or f" {a} " in f" {n} " for n in names)


def retrievers(store, nodes, k: int, s: int) -> tuple:
    """The pipeline's retriever for (k, s) (60 edges, 3 passages) and an uncapped one (what the subgraph reaches)."""
    from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever

    from haystack_cfrag.causal_rag.components.causal_graph_retriever import CausalGraphRetriever

    return tuple(CausalGraphRetriever(node_retriever=InMemoryEmbeddingRetriever(document_store=nodes, top_k=k),
                                      document_store=store, top_k=k, hops=s, max_edges=edges, max_documents=docs)
                 for edges, docs in ((60, 3), (2000, 200)))


def setting_rows(item, query_embedding: list[float], retriever, wide) -> dict:
    from haystack_cfrag.common.text import normalize_answer

    capped, full = retriever.run(query_embedding=query_embedding), wide.run(query_embedding=query_embedding)
    gold_ids = {p.id for p in item.passages if p.title in set(item.gold_titles)}
    names = {normalize_answer(str(e.get(side, ""))) for e in full["causal_edges"] for side in ("source", "target")}
    names |= {normalize_answer(str(d.meta.get("node_id") or d.content or "")) for d in full["nodes"]}
    return {
        "nodes": len(full["nodes"]), "edges": len(full["causal_edges"]), "passages": len(full["trace"]["passage_ids"]),
        "truncated60": bool(capped["trace"]["truncated"]),
        "gold_reach": bool(gold_ids & set(full["trace"]["passage_ids"])),
        "gold_at3": bool(gold_ids & {d.id for d in capped["documents"]}),
        "answer_in_graph": any(names_match(a, names) for a in item.answers),
        "trap_in_graph": names_match(item.trap_answer, names) if getattr(item, "trap_answer", None) else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data")
    parser.add_argument("--limit", type=int, default=24)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    from haystack_cfrag import models
    from haystack_cfrag.adapters import factories
    from haystack_cfrag.causal_rag.node_store import build_node_store
    from haystack_cfrag.evaluation.corpus import Corpus
    from haystack_cfrag.evaluation.datasets import load_items

    items = load_items(args.data, limit=args.limit)
    te, de = factories.text_embedder(), factories.document_embedder()
    te.warm_up(), de.warm_up()
    corpus = Corpus(items, lambda docs: de.run(documents=docs)["documents"], lambda t: te.run(text=t)["embedding"])
    store = corpus.pooled_store()
    passages = [d for d in store.filter_documents() if d.content]
    nodes, stats = build_node_store(passages, chat_generator=factories.chat_generator(), text_embedder=te,
                                    cache_dir=models.graph_cache_dir())
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for k in RANGE:
        for s in RANGE:
            capped, wide = retrievers(store, nodes, k, s)
            per_item = [setting_rows(item, corpus.question_embeddings[item.id], capped, wide) for item in items]
            row = {"k": k, "s": s}
            for key in per_item[0]:
                values = [r[key] for r in per_item if r[key] is not None]
                row[key] = float(np.mean(values)) if values else None
            rows.append(row)
            print(json.dumps(row), flush=True)
    (out / "settings.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    pct = ("truncated60", "gold_reach", "gold_at3", "answer_in_graph", "trap_in_graph")
    lines = [f"# CausalRAG's subgraph by k and s: {args.data} (first {len(items)}, pooled)", "",
             f"Graph: {stats.get('passages')} passages, {nodes.count_documents()} node Documents; extraction calls "
             f"this run: {stats.get('llm_calls', 0)} (the rest from the cache).", "",
             "| k | s | nodes | edges | passages reached | 60-edge cap hit % | gold reached % | gold in the 3 given % "
             "| answer in graph % | trap answer in graph % |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        cells = [f"{r[c]:.1f}" for c in ("nodes", "edges", "passages")]
        cells += ["–" if r[c] is None else f"{100 * r[c]:.0f}" for c in pct]
        lines.append(f"| {r['k']} | {r['s']} | " + " | ".join(cells) + " |")
    (out / "report.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
