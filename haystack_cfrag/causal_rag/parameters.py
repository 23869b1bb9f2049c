"""The tunable parameters of `causal_rag`: k seed nodes and s hops (ranges from `math.expansion`), and the
summary's recipe (`RANGES`): `summary_calls` 1 (one prompt, at most `summary_max_tokens`) or 2 (the official
code's two calls). k, s and `summary_calls` change per request; `summary_max_tokens` builds the pipeline.

    >>> PARAMETERS["graph_top_k"].describe(), PARAMETERS["hops"].per_request
    ('an integer in [1, 10]', True)
    >>> PARAMETERS["summary_calls"].describe(), PARAMETERS["summary_calls"].per_request
    ('an integer in [1, 2]', True)
"""

from __future__ import annotations

from haystack_cfrag.causal_rag.math.expansion import MAX_HOPS, MAX_TOP_K, MIN_HOPS, MIN_TOP_K
from haystack_cfrag.common.parameters import Parameter, Range
from haystack_cfrag.models import AUXILIARY_MODELS

RANGES: dict[str, Range] = {
    "summary_calls": Range(int, 1, 2),
    "summary_max_tokens": Range(int, 8, 1024),
    "summary_max_edges": Range(int, 1, 1000),
}
"""The one home of the summary settings' ranges (`CausalSummarizer` checks its arguments against them)."""

DEFAULT_SUMMARY_CALLS = 1
DEFAULT_SUMMARY_MAX_TOKENS = 64
"""The one-call summary's token budget: it is the reader's context, not the answer (docs/causal_rag.md)."""

PARAMETERS: dict[str, Parameter] = {
    p.name: p
    for p in (
        Parameter("graph_top_k", "graph_retriever", "top_k", int, low=MIN_TOP_K, high=MAX_TOP_K, per_request=True,
                  help="k: graph nodes nearest the question"),
        Parameter("hops", "graph_retriever", "hops", int, low=MIN_HOPS, high=MAX_HOPS, per_request=True,
                  help="s: hops along the causal edges from those nodes"),
        Parameter("summary_calls", "summarizer", "summary_calls", per_request=True,
                  help="1: causal paths and summary in one call (default); 2: the official code's report, "
                       "then summary, and the archived runs' answer prompt", **RANGES["summary_calls"].fields()),
        Parameter("summary_max_tokens", "summarizer", "summary_max_tokens",
                  help="the one-call summary's token budget (summary_calls=1 only)",
                  **RANGES["summary_max_tokens"].fields()),
        Parameter("summary_max_edges", "summarizer", "summary_max_edges",
                  help="the summary reads the subgraph's first this many relations (nearest the seeds) "
                       "and the entities they name (unset: all)", **RANGES["summary_max_edges"].fields()),
        Parameter("summarizer_model", "summarizer", "chat_generator.model", str, choices=AUXILIARY_MODELS,
                  help="the model that writes the summary: the reader, or the small auxiliary model"),
    )
}

__all__ = ["DEFAULT_SUMMARY_CALLS", "DEFAULT_SUMMARY_MAX_TOKENS", "PARAMETERS", "RANGES"]
