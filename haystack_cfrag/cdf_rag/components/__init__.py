"""CDF-RAG's Haystack components."""

from haystack_cfrag.cdf_rag.components.causal_consistency_checker import CausalConsistencyChecker
from haystack_cfrag.cdf_rag.components.dual_path_retriever import DualPathRetriever
from haystack_cfrag.cdf_rag.components.hallucination_checker import HallucinationChecker, SupportScorer
from haystack_cfrag.cdf_rag.components.query_refiner import QueryRefiner

__all__ = ["CausalConsistencyChecker", "DualPathRetriever", "HallucinationChecker", "QueryRefiner", "SupportScorer"]
