"""`cfrag index --graph`: CausalRAG's expensive step ahead of time, with progress and its cost per passage.

Every passage's extraction (one LLM call per 1,000-character chunk) lands in the cache that
`cfrag ask/compare/eval/serve --pipeline causal_rag` read (`Runtime.graph_cache`): the graph is
then put together from the cache, without an LLM call, the first time a question needs it. An
interrupted run resumes: passages already in the cache cost nothing, and the summary says what
they cost when they were extracted (the cache keeps each passage's seconds).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from haystack import Document

from haystack_cfrag.causal_rag.components.causal_graph_builder import CausalGraphBuilder
from haystack_cfrag.causal_rag.math.extraction import per_extracted_passage

COUNTED = ("chunks", "extracted", "cached", "parse_failures", "failed_calls", "llm_calls", "prompt_tokens",
           "completion_tokens", "nodes", "edges")


def extract_passages(
    passages: list[Document],
    *,
    chat_generator: Any,
    cache_dir: str | Path,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Extract (or find in the cache) every passage's triples; the summed stats, with seconds.

    >>> from haystack_cfrag.testing import MockChatGenerator
    >>> import tempfile
    >>> stats = extract_passages([Document(content="Rain causes floods.")], chat_generator=MockChatGenerator(),
    ...                          cache_dir=tempfile.mkdtemp())
    >>> stats["passages"], stats["llm_calls"]
    (1, 1)
    """
    builder = CausalGraphBuilder(chat_generator=chat_generator, cache_dir=str(cache_dir),
                                 progress_bar=False)  # one passage a run: `progress` says where it is
    builder.warm_up()
    total: dict[str, Any] = {key: 0 for key in COUNTED} | {"cached_priced": 0, "cached_seconds": 0.0}
    start = time.perf_counter()
    for k, passage in enumerate(passages, 1):
        if progress is not None:
            progress(f"graph: passage {k}/{len(passages)}, {total['cached']} cached, {total['llm_calls']} calls")
        out = builder.run(documents=[passage])
        for key in COUNTED:
            total[key] += int(out["stats"].get(key, 0) or 0)
        for cost in out["costs"]:  # a passage found in the cache, with what its extraction cost when made
            if cost["how"] == "cached" and cost["seconds"] is not None:
                total["cached_priced"] += 1
                total["cached_seconds"] += cost["seconds"]
    total["passages"] = len(passages)
    total["seconds"] = time.perf_counter() - start
    return total


def summary_line(stats: dict[str, Any]) -> str:
    """One line: what was extracted and what it cost per extracted passage.

    >>> summary_line({"passages": 4, "extracted": 3, "cached": 1, "llm_calls": 3, "parse_failures": 1,
    ...               "prompt_tokens": 900, "completion_tokens": 300, "nodes": 9, "edges": 7, "seconds": 30.0})
    'graph: 4 passages (1 cached), 3 LLM calls, 1 unparsed, 9 nodes / 7 edges found; 10.0 s and 400 tokens per extracted passage'
    >>> summary_line({"passages": 2, "extracted": 0, "cached": 2, "seconds": 0.5}).split("; ")[1]
    'no extraction (every passage from the cache)'
    >>> summary_line({"passages": 2, "extracted": 0, "cached": 2, "cached_priced": 2, "cached_seconds": 19.0}).split("; ", 1)[1]
    'no extraction (every passage from the cache; 9.5 s each when it was extracted)'
    """
    cost = per_extracted_passage(stats)
    priced = int(stats.get("cached_priced", 0) or 0)
    then = f"{float(stats.get('cached_seconds', 0.0)) / priced:.1f} s each when it was extracted" if priced else ""
    tail = (f"no extraction (every passage from the cache{'; ' + then if then else ''})" if cost is None
            else f"{cost[0]:.1f} s and {cost[1]:.0f} tokens per extracted passage"
            + (f" (the cached ones: {then})" if then else ""))
    return (f"graph: {stats.get('passages', 0)} passages ({stats.get('cached', 0)} cached), "
            f"{stats.get('llm_calls', 0)} LLM calls, {stats.get('parse_failures', 0)} unparsed, "
            f"{stats.get('nodes', 0)} nodes / {stats.get('edges', 0)} edges found; {tail}")


__all__ = ["extract_passages", "summary_line"]
