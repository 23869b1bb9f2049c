"""The tunable parameters of the `causal_rag` pipeline: k seed nodes and s hops (the paper sweeps both over 1–5).

Ranges come from `haystack_cfrag.causal_rag.math.graph` (their one home). Both are run-time
inputs of the graph retriever, so they change per request without rebuilding the pipeline.

    >>> PARAMETERS["graph_top_k"].describe(), PARAMETERS["hops"].per_request
    ('an integer in [1, 10]', True)
"""

from __future__ import annotations

from haystack_cfrag.causal_rag.math.graph import MAX_HOPS, MAX_TOP_K, MIN_HOPS, MIN_TOP_K
from haystack_cfrag.common.parameters import Parameter

PARAMETERS: dict[str, Parameter] = {
    p.name: p
    for p in (
        Parameter("graph_top_k", "graph_retriever", "top_k", int, low=MIN_TOP_K, high=MAX_TOP_K, per_request=True,
                  help="k: graph nodes nearest the question"),
        Parameter("hops", "graph_retriever", "hops", int, low=MIN_HOPS, high=MAX_HOPS, per_request=True,
                  help="s: hops along the causal edges from those nodes"),
    )
}

__all__ = ["PARAMETERS"]
