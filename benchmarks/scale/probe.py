"""The scale run's read side: opening a store with its stored graph, and the graph retrieval per query.

    python benchmarks/scale/probe.py 'faiss:/work/scale/faiss/store#HNSW32' QUESTIONS.jsonl [--n 40] [--out F]

Opens the passage store and its stored graph (`stored_graph.open_stored_graph`: no rebuild) and times it,
then runs `CausalGraphRetriever` (k = 3 seeds, s = 3 hops, the defaults) over the first `--n` questions'
embeddings (embedded before the clock starts): seconds per query (median, p90, max), store calls, rows read.
Prints one JSON line (and appends it to `--out`): passages, nodes, edges, open seconds, peak memory, files on disk.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import time
from pathlib import Path

from output import emit  # noqa: E402  (benchmarks/scale/output.py, beside this script)

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec")
    parser.add_argument("questions", type=Path)
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    from haystack_cfrag.adapters import factories
    from haystack_cfrag.causal_rag import CausalGraphRetriever
    from haystack_cfrag.causal_rag.stored_graph import graph_home, open_stored_graph
    from haystack_cfrag.stores import embedding_retriever, open_document_store, parse_store_spec

    questions = [json.loads(x)["question"] for x in args.questions.read_text().splitlines()[: args.n]]
    embedder = factories.text_embedder()
    embedder.warm_up()
    vectors = [embedder.run(text=q)["embedding"] for q in questions]
    start = time.perf_counter()
    store = open_document_store(args.spec)
    opened_store = time.perf_counter() - start
    stored = open_stored_graph(args.spec)
    opened = time.perf_counter() - start
    assert stored is not None, "no stored graph: run cfrag index --graph"
    retriever = CausalGraphRetriever(node_retriever=embedding_retriever(stored.nodes, top_k=3), document_store=store)
    retriever.graph_tables = stored.tables
    seconds, calls, nodes, passages = [], [], [], []
    for v in vectors:
        t = time.perf_counter()
        out = retriever.run(query_embedding=v)
        seconds.append(time.perf_counter() - t)
        calls.append(out["trace"]["store_calls"])
        nodes.append(out["trace"]["nodes"])
        passages.append(len(out["documents"]))
    s = parse_store_spec(args.spec)
    home = graph_home(s)
    files = [Path(s.location).with_suffix(x) for x in (".faiss", ".json")] if s.kind == "faiss" else [Path(s.location)]
    disk = {"passages_bytes": sum(f.stat().st_size for f in files if f.exists())}
    if s.kind == "pgvector":  # the passages' table and the graph's (vectors, meta, nodes, edges, passages), indexes too
        from haystack_cfrag.stores.kinds.pgvector import connect
        with connect(s) as conn:
            size = lambda t: conn.execute("SELECT COALESCE(pg_total_relation_size(to_regclass(%s)), 0)",  # noqa: E731
                                          (f"public.{t}",)).fetchone()[0]
            disk = {"passages_bytes": size(s.name),
                    "graph_bytes": sum(size(f"{s.name}_graph{x}") for x in ("_vectors", "_meta", "_nodes", "_edges",
                                                                                 "_passages"))}
    if home.sqlite is not None:
        disk["graph_bytes"] = int(subprocess.run(["du", "-sb", str(home.sqlite.parent)], capture_output=True,
                                                 text=True).stdout.split()[0])
    counts = stored.tables.counts()
    line = {"spec_kind": s.kind, "index": s.name, "passages": store.count_documents(), **counts,
            "open_store_s": round(opened_store, 2), "open_store_and_graph_s": round(opened, 2),
            "queries": len(vectors),
            "graph_retrieval_s": {"median": round(statistics.median(seconds), 4),
                                  "p90": round(sorted(seconds)[int(0.9 * (len(seconds) - 1))], 4),
                                  "max": round(max(seconds), 4)},
            "store_calls_mean": round(statistics.mean(calls), 1), "nodes_mean": round(statistics.mean(nodes), 1),
            "passages_mean": round(statistics.mean(passages), 1),
            "peak_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 / 1024, 3), **disk}
    emit(line, args.out)


if __name__ == "__main__":
    main()
