"""`--engine ray` beside the local run: extract a slice of the scale corpus on Ray into a fresh cache, and
compare the graph put together from it with the one from the local run's cache, node for node and edge for edge.

    python benchmarks/scale/ray_slice.py CORPUS/part-000a.jsonl CORPUS/part-000b.jsonl \\
        --local-cache RUNS/cache --ray-cache /tmp/ray-cache [--workers 2] [--out F]

The passages are cut as `cfrag index` cuts them (same words, overlap and bound), so their ids and hashes
are the local run's. The extraction runs through `extraction_run.extract_passages(engine="ray")`, the code
`cfrag index --graph --engine ray` runs; no passage is embedded (embedding does not depend on the engine).
Prints one JSON line (appended to `--out`): Ray's extraction seconds, then both graphs' sizes and whether
every node (name, type, passages) and every edge (relation, cue, passages) is the same.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from output import emit  # noqa: E402  (benchmarks/scale/output.py, beside this script)

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--local-cache", type=Path, required=True)
    parser.add_argument("--ray-cache", type=Path, required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    import ray

    from haystack_cfrag.causal_rag.components.causal_graph_builder import CausalGraphBuilder
    from haystack_cfrag.causal_rag.extraction_run import extract_passages
    from haystack_cfrag.causal_rag.extractors import BUILDER_SETTINGS, make_extractor
    from haystack_cfrag.stores.sources import convert_files, cut_passages, split_documents

    passages, _ = cut_passages(split_documents(convert_files(args.files).documents, words=190, overlap=30), 20_000)
    ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
    start = time.perf_counter()
    stats = extract_passages(passages, extractor="spacy", engine="ray", cache_dir=args.ray_cache, batch_size=64)
    ray_s = time.perf_counter() - start
    ray.shutdown()

    def graph(cache: Path):
        builder = CausalGraphBuilder(extractor=make_extractor("spacy"), cache_dir=str(cache), progress_bar=False,
                                     **BUILDER_SETTINGS.get("spacy", {}))
        return builder.assemble_graph(passages)

    remote, local = graph(args.ray_cache), graph(args.local_cache)
    line = {"passages": len(passages), "workers": args.workers, "ray_extraction_s": round(ray_s, 1),
            "ray_extracted": stats.get("extracted"), "ray_cached": stats.get("cached"),
            "ray": {"nodes": len(remote), "edges": remote.n_edges},
            "local": {"nodes": len(local), "edges": local.n_edges},
            "same_nodes": remote._nodes == local._nodes, "same_edges": remote._edges == local._edges}  # noqa: SLF001
    emit(line, args.out)


if __name__ == "__main__":
    main()
