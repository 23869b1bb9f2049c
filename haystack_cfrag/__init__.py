"""haystack-cfrag: Counterfactual RAG (CF-RAG) as Haystack components.

Generate counterfactual questions, retrieve for all of them, keep evidence that supports the
original question more than its counterfactuals, draft answers from separate evidence strata
and arbitrate them on coherence and causal discrimination.
"""

from haystack_cfrag.components import (
    CausalArbitrationRanker,
    CounterfactualQueryExpander,
    CounterfactualRAG,
    EmbeddingDeduplicator,
    MultiQueryRetriever,
    ParallelDraftGenerator,
    SpectralStratifier,
)
from haystack_cfrag.dataclasses import Draft
from haystack_cfrag.loading import load_pipeline

__version__ = "0.1.0"

__all__ = [
    "CausalArbitrationRanker",
    "CounterfactualQueryExpander",
    "CounterfactualRAG",
    "Draft",
    "EmbeddingDeduplicator",
    "MultiQueryRetriever",
    "ParallelDraftGenerator",
    "SpectralStratifier",
    "load_pipeline",
]
