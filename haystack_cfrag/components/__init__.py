"""The six CF-RAG components, one module each."""

from haystack_cfrag.components.causal_arbitration_ranker import CausalArbitrationRanker
from haystack_cfrag.components.counterfactual_query_expander import CounterfactualQueryExpander
from haystack_cfrag.components.counterfactual_rag import CounterfactualRAG
from haystack_cfrag.components.embedding_deduplicator import EmbeddingDeduplicator
from haystack_cfrag.components.multi_query_retriever import MultiQueryRetriever
from haystack_cfrag.components.parallel_draft_generator import ParallelDraftGenerator
from haystack_cfrag.components.spectral_stratifier import SpectralStratifier

__all__ = [
    "CausalArbitrationRanker",
    "CounterfactualQueryExpander",
    "CounterfactualRAG",
    "EmbeddingDeduplicator",
    "MultiQueryRetriever",
    "ParallelDraftGenerator",
    "SpectralStratifier",
]
