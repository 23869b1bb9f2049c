"""The tunable parameters of `cdf_rag`: the refinement's action (per request) and the checks' thresholds and the
merge (build time); `graph_top_k` is borrowed from CausalRAG (`cdf_rag.family`).

    >>> PARAMETERS["refinement"].describe()
    "one of 'auto', 'rule', 'expand', 'simplify', 'decompose', 'none'"
"""

from __future__ import annotations

from haystack_cfrag.cdf_rag.components.query_refiner import CHOICES
from haystack_cfrag.cdf_rag.math.claims import REWRITE_MODES, SUPPORT_RANGE
from haystack_cfrag.cdf_rag.math.merge import MERGE_MODES
from haystack_cfrag.common.parameters import Parameter
from haystack_cfrag.models import AUXILIARY_MODELS

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
        Parameter("merge_mode", "merger", "merge_mode", str, choices=MERGE_MODES,
                  help="the dual-path merge: reciprocal rank fusion, dense/graph interleaving, or the dense "
                       "passages alone (ablation)"),
        Parameter("refiner_model", "refiner", "chat_generator.model", str, choices=AUXILIARY_MODELS,
                  help="the model that refines the question: the reader, or the small auxiliary model"),
    )
}

__all__ = ["PARAMETERS"]
