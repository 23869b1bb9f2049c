"""CDF-RAG, "Causal Dynamic Feedback for Adaptive Retrieval-Augmented Generation" (paper 002), zero-shot.

Refine the question (expand, simplify or decompose), retrieve on two paths, generate, then
check the answer against the retrieved causal edges (S_causal, a stricter regeneration below
τ) and against the evidence claim by claim (S_hall, a rewrite above δ), in a bounded loop.
`cdf_rag.math` holds the pure checks, reply parsing and the dual-path merge; see docs/cdf_rag.md.
The components are exported here and imported on first use.
"""

from __future__ import annotations

from typing import Any

# Imported on first use (PEP 562): importing `haystack_cfrag.cdf_rag.math` loads no Haystack.
_HOMES = {
    "CausalConsistencyChecker": "haystack_cfrag.cdf_rag.components.causal_consistency_checker",
    "DualPathRetriever": "haystack_cfrag.cdf_rag.components.dual_path_retriever",
    "HallucinationChecker": "haystack_cfrag.cdf_rag.components.hallucination_checker",
    "QueryRefiner": "haystack_cfrag.cdf_rag.components.query_refiner",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        import importlib  # noqa: PLC0415

        value = getattr(importlib.import_module(_HOMES[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
