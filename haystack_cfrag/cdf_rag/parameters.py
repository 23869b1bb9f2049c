"""The tunable parameters of the `cdf_rag` pipeline: the refinement's action and the two checks' thresholds.

The action is a run-time input of the refiner (per request); τ, δ and the merge build the pipeline once.

    >>> PARAMETERS["refinement"].describe()
    "one of 'auto', 'rule', 'expand', 'simplify', 'decompose', 'none'"
    >>> sorted(GROUNDED_PARAMETERS)
    ['delta', 'graph_top_k', 'rewrite_mode', 'support_threshold', 'tau']
    >>> sorted(GROUNDED_LITE_PARAMETERS)
    ['delta', 'rewrite_mode', 'support_threshold']
"""

from __future__ import annotations

from haystack_cfrag.causal_rag.math.graph import MAX_TOP_K, MIN_TOP_K
from haystack_cfrag.cdf_rag.components.query_refiner import CHOICES
from haystack_cfrag.cdf_rag.math.checks import REWRITE_MODES, SUPPORT_RANGE
from haystack_cfrag.cdf_rag.math.merge import MERGE_MODES
from haystack_cfrag.common.parameters import Parameter

PARAMETERS: dict[str, Parameter] = {
    p.name: p
    for p in (
        Parameter("refinement", "refiner", "action", str, choices=CHOICES, per_request=True,
                  help="the refiner's action: the reader's choice, the rule's, a fixed one, or none"),
        Parameter("tau", "causal_checker", "tau", float, low=0.0, high=1.0,
                  help="regenerate when S_causal is below it"),
        Parameter("delta", "hallucination_checker", "delta", float, low=0.0, high=1.0,
                  help="rewrite when S_hall is above it"),
        Parameter("support_threshold", "hallucination_checker", "support_threshold", float,
                  low=SUPPORT_RANGE[0], high=SUPPORT_RANGE[1],
                  help="a claim is supported when the reader's support (nats per token) reaches it"),
        Parameter("rewrite_mode", "hallucination_checker", "rewrite_mode", str, choices=REWRITE_MODES,
                  help="the rewrite: correct the unsupported statements, or answer again naming the flagged one"),
        Parameter("graph_top_k", "graph_retriever", "top_k", int, low=MIN_TOP_K, high=MAX_TOP_K, per_request=True,
                  help="k: graph nodes nearest the (refined) question"),
        Parameter("merge_mode", "merger", "merge_mode", str, choices=MERGE_MODES,
                  help="the dual-path merge: reciprocal rank fusion or dense/graph interleaving"),
    )
}

GROUNDED_PARAMETERS: dict[str, Parameter] = {
    name: PARAMETERS[name] for name in ("tau", "delta", "support_threshold", "rewrite_mode", "graph_top_k")
}
"""The `grounded_rag` pipeline's: standard RAG then the two checks (no refiner)."""

GROUNDED_LITE_PARAMETERS: dict[str, Parameter] = {
    name: PARAMETERS[name] for name in ("delta", "support_threshold", "rewrite_mode")
}
"""The `grounded_rag_lite` pipeline's: standard RAG then the hallucination check alone (no graph)."""

__all__ = ["GROUNDED_LITE_PARAMETERS", "GROUNDED_PARAMETERS", "PARAMETERS"]
