"""The tunable parameters of the baselines and controls: how many passages they read, and in what order.

    >>> STANDARD_PARAMETERS["top_k"].describe()
    'an integer in [1, 50]'
    >>> sorted(ORDER_PARAMETERS)
    ['order', 'top_k']
"""

from __future__ import annotations

from haystack_cfrag.baseline.components.document_order import ORDERS
from haystack_cfrag.common.parameters import Parameter

TOP_K_RANGE = (1, 50)
"""Passages a baseline reads: at least one, at most what a 4,096-token prompt can hold of short passages."""

_TOP_K = {"kind": int, "low": TOP_K_RANGE[0], "high": TOP_K_RANGE[1]}

STANDARD_PARAMETERS: dict[str, Parameter] = {
    "top_k": Parameter("top_k", "retriever", "top_k", **_TOP_K, per_request=True,
                       help="passages retrieved and read"),
}
HYBRID_PARAMETERS: dict[str, Parameter] = {
    "top_k": Parameter("top_k", "joiner", "top_k", **_TOP_K, per_request=True,
                       help="passages kept of the fused BM25 + embedding list and read"),
}
ORDER_PARAMETERS: dict[str, Parameter] = {
    **STANDARD_PARAMETERS,
    "order": Parameter("order", "orderer", "order", str, choices=ORDERS, per_request=True,
                       help="the fixed order the passages are read in"),
}

__all__ = ["HYBRID_PARAMETERS", "ORDER_PARAMETERS", "STANDARD_PARAMETERS", "TOP_K_RANGE"]
