"""CF-RAG's micro-benchmark of its non-generative stages (`cfrag bench`): dedup, stratifier, arbitration scoring,
on seeded random unit vectors, each also as a share of one draft generation."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from haystack import Document, component

from haystack_cfrag import CausalArbitrationRanker, Draft, EmbeddingDeduplicator, SpectralStratifier


@component
class _LookupEmbedder:
    """Returns a seeded random unit vector per text (no model)."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension

    @component.output_types(embedding=list[float])
    def run(self, text: str) -> dict[str, Any]:
        rng = np.random.default_rng(abs(hash(text)) % (2**32))
        v = rng.normal(size=self.dimension)
        return {"embedding": (v / np.linalg.norm(v)).tolist()}


def _documents(n: int, dimension: int, seed: int) -> list[Document]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(6, dimension))
    docs = []
    for i in range(n):
        v = centres[i % 6] + 0.6 * rng.normal(size=dimension)
        docs.append(Document(id=f"d{i}", content=f"passage {i} " + "word " * 40,
                             embedding=(v / np.linalg.norm(v)).tolist(),
                             score=float(rng.uniform())))
    return docs


def run_benchmark(
    sizes: tuple[int, ...] = (20, 60, 200), dimension: int = 384, repeats: int = 5, seed: int = 0
) -> list[dict[str, float]]:
    """Median seconds per stage for each candidate count."""
    embedder = _LookupEmbedder(dimension)
    dedup = EmbeddingDeduplicator()
    stratifier = SpectralStratifier(random_state=seed, text_embedder=embedder)
    ranker = CausalArbitrationRanker(text_embedder=embedder)
    queries = ["q", "q1", "q2", "q3"]
    rows = []
    for n in sizes:
        docs = _documents(n, dimension, seed)
        times: dict[str, list[float]] = {"dedup": [], "stratifier": [], "arbitration": []}
        for _ in range(repeats):
            t = time.perf_counter()
            kept = dedup.run(documents=docs)["documents"]
            times["dedup"].append(time.perf_counter() - t)
            t = time.perf_counter()
            subsets = stratifier.run(documents=kept, query="q")["subsets"]
            times["stratifier"].append(time.perf_counter() - t)
            drafts = [Draft(index=j, answer=f"answer {j % 2}", documents=s) for j, s in enumerate(subsets)]
            t = time.perf_counter()
            ranker.run(query="q", drafts=drafts, queries=queries)
            times["arbitration"].append(time.perf_counter() - t)
        rows.append({"documents": n, **{k: float(np.median(v)) for k, v in times.items()}})
    return rows


def format_rows(rows: list[dict[str, float]], draft_seconds: float) -> str:
    """A table of seconds and shares of one draft generation."""
    head = f"{'docs':>5} {'dedup':>10} {'stratifier':>12} {'arbitration':>12}"
    lines = [f"{head}   share of one draft ({draft_seconds:.1f} s)"]
    for r in rows:
        shares = "  ".join(f"{k} {100 * r[k] / draft_seconds:.2f}%" for k in ("dedup", "stratifier", "arbitration"))
        lines.append(f"{r['documents']:>5} {r['dedup'] * 1000:>8.1f}ms {r['stratifier'] * 1000:>10.1f}ms "
                     f"{r['arbitration'] * 1000:>10.1f}ms   {shares}")
    return "\n".join(lines)


def time_one_draft(llm: str) -> float:
    """Seconds of one real draft call (App. G prompt over 8 demo passages) with the chat model `llm`."""
    from haystack.dataclasses import ChatMessage  # noqa: PLC0415

    from haystack_cfrag.adapters import factories  # noqa: PLC0415
    from haystack_cfrag.cfrag.prompts import DRAFT_PROMPT, render_evidence  # noqa: PLC0415
    from haystack_cfrag.common import interrupts  # noqa: PLC0415
    from haystack_cfrag.stores import DEMO_CORPUS  # noqa: PLC0415
    from haystack_cfrag.stores.sources import read_jsonl  # noqa: PLC0415

    generator = factories.chat_generator(llm, max_tokens=96)
    interrupts.warm_up(generator)
    prompt = DRAFT_PROMPT.format(query="Who is the lead actor in The Dark Knight?",
                                 evidence=render_evidence(read_jsonl(DEMO_CORPUS)[:8], 2000))
    start = time.perf_counter()
    generator.run(messages=[ChatMessage.from_user(prompt)])
    return time.perf_counter() - start


def bench(counts: tuple[int, ...], draft_seconds: float | None, llm: str) -> str:
    """The stages' table at each candidate count, as shares of one draft (timed with `llm` when not given)."""
    rows = run_benchmark(counts)
    return format_rows(rows, time_one_draft(llm) if draft_seconds is None else draft_seconds)

