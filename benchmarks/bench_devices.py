"""Embedding cost on each device: the demo corpus's passages and single queries, CPU against GPU.

    python benchmarks/bench_devices.py [--embedder SPEC] [--devices cpu,cuda:0] [--repeat 3]

Indexing embeds passages in batches (`cfrag index`); a question embeds one query (every pipeline's
first stage). For each device: passages per second (best of --repeat, after one warm-up pass)
and the median milliseconds of one query embedding (30 queries); then each device's ratio to
the first. Devices that torch cannot use are left out with a line saying so.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from haystack import Document

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from haystack_cfrag import models  # noqa: E402
from haystack_cfrag.adapters import factories  # noqa: E402

CORPUS = ROOT / "haystack_cfrag" / "data" / "demo_corpus.jsonl"


def usable(device: str) -> bool:
    import torch  # noqa: PLC0415

    return not device.startswith("cuda") or torch.cuda.is_available()


def measure(spec: str, device: str, passages: list[str], repeat: int) -> dict[str, float]:
    """Passages per second (batched) and the median ms of one query embedding on `device`."""
    docs = factories.document_embedder(spec, device=device)
    docs.warm_up()
    batch = [Document(content=p) for p in passages]
    docs.run(documents=batch)  # warm-up pass (kernels, allocator)
    best = min(_timed(lambda: docs.run(documents=batch)) for _ in range(repeat))
    text = factories.text_embedder(spec, device=device)
    text.warm_up()
    text.run(text=passages[0][:200])
    query_ms = [1000 * _timed(lambda q=p: text.run(text=q[:200])) for p in passages[:30]]
    return {"passages_per_s": len(passages) / best, "query_ms": statistics.median(query_ms)}


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--embedder", default=models.EMBEDDED_EMBEDDER)
    ap.add_argument("--devices", default="cpu,cuda:0")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    passages = [json.loads(line)["content"] for line in CORPUS.read_text().splitlines() if line.strip()]
    rows = {}
    for device in args.devices.split(","):
        if not usable(device):
            print(f"{device}: skipped (torch sees no CUDA device)")
            continue
        rows[device] = measure(args.embedder, device, passages, args.repeat)
    if not rows:
        return
    first = next(iter(rows.values()))
    print(f"{len(passages)} passages of the demo corpus, embedder {args.embedder}")
    print("| device | passages/s | × first | query ms (median of 30) | first ÷ this |")
    print("|---|---:|---:|---:|---:|")
    for device, r in rows.items():
        print(f"| {device} | {r['passages_per_s']:.0f} | {r['passages_per_s'] / first['passages_per_s']:.1f} "
              f"| {r['query_ms']:.1f} | {first['query_ms'] / r['query_ms']:.1f} |")


if __name__ == "__main__":
    main()
