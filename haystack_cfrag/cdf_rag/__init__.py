"""CDF-RAG, "Causal Dynamic Feedback for Adaptive Retrieval-Augmented Generation" (paper 002), zero-shot
(docs/cdf_rag.md): refine the question, retrieve on two paths, generate, then check the answer against the causal
edges (S_causal < τ: regenerate) and claim by claim (S_hall > δ: rewrite), in a bounded loop. Components lazy.
"""

from __future__ import annotations

from haystack_cfrag.common.lazy import lazy_exports

# Imported on first use (PEP 562): importing `haystack_cfrag.cdf_rag.math` loads no Haystack.
_HOMES = {"CausalConsistencyChecker": "haystack_cfrag.cdf_rag.components.causal_consistency_checker",
          "DualPathRetriever": "haystack_cfrag.cdf_rag.components.dual_path_retriever",
          "HallucinationChecker": "haystack_cfrag.cdf_rag.components.hallucination_checker",
          "QueryRefiner": "haystack_cfrag.cdf_rag.components.query_refiner"}

__all__ = sorted(_HOMES)


__getattr__ = lazy_exports(__name__, _HOMES)
