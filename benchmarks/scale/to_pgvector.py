"""The scale run's pgvector side: the FAISS run's passages (with their vectors) into a pgvector table, then
the graph built there by `cfrag index --graph`'s own code (`GRAPH.index`: the tables and node vectors in
the same database).

    CFRAG_CACHE_DIR=RUNS/cache python benchmarks/scale/to_pgvector.py 'faiss:STORE#HNSW32' \\
        'pgvector:postgresql://postgres@127.0.0.1:55433/scale#scale' [--out F]

What differs from `cfrag index FILES --store pgvector:… --graph`: the passages are not embedded again (the
FAISS store holds the same model's vectors; embedding does not depend on the backend and is measured in the
FAISS run), and the extraction is read from the FAISS run's cache (`CFRAG_CACHE_DIR`, by content hash), as
a second `cfrag index --graph` would. Measured here, the backend's own work: writing the passages, merging
the graph's tables, embedding and writing the node names new to them. Only the passages whose graph
the FAISS run has finished are taken (its graph tables say which), so it can run beside that run.
Incremental like `cfrag index`: passages the table holds are skipped, the graph merges only the passages it
lacks. Prints one JSON line (appended to `--out`).
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from dataclasses import replace
from pathlib import Path

from output import emit  # noqa: E402  (benchmarks/scale/output.py, beside this script)

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
BATCH = 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", help="the FAISS run's store spec")
    parser.add_argument("target", help="a pgvector:… store spec")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    from haystack.document_stores.types import DuplicatePolicy

    from haystack_cfrag import models
    from haystack_cfrag.adapters import factories
    from haystack_cfrag.causal_rag.stored_graph import graph_home
    from haystack_cfrag.registry import store_preparation
    from haystack_cfrag.stores import close_document_store, open_document_store, parse_store_spec
    from haystack_cfrag.stores.existing import stored_ids

    if parse_store_spec(args.target).kind != "pgvector":
        raise SystemExit(f"{args.target}: not a pgvector:… spec")
    t0 = time.perf_counter()
    tables = graph_home(args.source).tables()  # the passages whose graph the FAISS run finished (extraction cached)
    done = tables.passages()
    tables.close()
    source = open_document_store(args.source)
    passages = [d for d in source.filter_documents() if d.content and d.id in done]
    close_document_store(source)
    del source
    read_s = time.perf_counter() - t0
    dim = len(passages[0].embedding)
    target = open_document_store(args.target, embedding_dim=dim, create=True)
    held = stored_ids(target, [d.id for d in passages])
    new = [d for d in passages if d.id not in held]
    t1 = time.perf_counter()
    for start in range(0, len(new), BATCH):
        target.write_documents(new[start:start + BATCH], policy=DuplicatePolicy.OVERWRITE)
    write_s = time.perf_counter() - t1
    count = target.count_documents()
    close_document_store(target)
    graph = store_preparation()
    t2 = time.perf_counter()
    passages = [replace(d, embedding=None) for d in passages]  # the graph reads the passages' text and ids only
    stats = graph.index(passages, chat_generator=None, cache_dir=models.graph_cache_dir(), progress=None,
                        extractor="spacy", engine="local", ray_address=None, store_spec=parse_store_spec(args.target),
                        text_embedder=factories.text_embedder())
    graph_s = time.perf_counter() - t2
    line = {"target": str(parse_store_spec(args.target)), "passages": count, "copied": len(new),
            "already_held": len(held),
            "read_faiss_s": round(read_s, 1), "write_passages_s": round(write_s, 1),
            "write_per_1000_s": round(1000 * write_s / max(1, len(new)), 2), "graph_s": round(graph_s, 1),
            "graph": {k: (round(v, 1) if isinstance(v, float) else v) for k, v in stats.items()
                      if isinstance(v, (int, float, str, bool))},
            "peak_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 / 1024, 3)}
    emit(line, args.out)


if __name__ == "__main__":
    main()
