"""The CF-RAG components, one module each, imported on first use (as Haystack's own component packages do)."""

from typing import TYPE_CHECKING

from haystack_cfrag.common.lazy import lazy_exports

_import_structure = {
    "arbitration_duel": ["ArbitrationDuel"],
    "causal_arbitration_ranker": ["CausalArbitrationRanker"],
    "counterfactual_query_expander": ["CounterfactualQueryExpander"],
    "counterfactual_rag": ["CounterfactualRAG"],
    "embedding_deduplicator": ["EmbeddingDeduplicator"],
    "multi_query_retriever": ["MultiQueryRetriever"],
    "parallel_draft_generator": ["ParallelDraftGenerator"],
    "spectral_stratifier": ["SpectralStratifier"],
}
_HOMES = {name: f"{__name__}.{module}" for module, names in _import_structure.items() for name in names}
__all__ = sorted(_HOMES)

if TYPE_CHECKING:
    from .arbitration_duel import ArbitrationDuel as ArbitrationDuel
    from .causal_arbitration_ranker import CausalArbitrationRanker as CausalArbitrationRanker
    from .counterfactual_query_expander import CounterfactualQueryExpander as CounterfactualQueryExpander
    from .counterfactual_rag import CounterfactualRAG as CounterfactualRAG
    from .embedding_deduplicator import EmbeddingDeduplicator as EmbeddingDeduplicator
    from .multi_query_retriever import MultiQueryRetriever as MultiQueryRetriever
    from .parallel_draft_generator import ParallelDraftGenerator as ParallelDraftGenerator
    from .spectral_stratifier import SpectralStratifier as SpectralStratifier


__getattr__ = lazy_exports(__name__, _HOMES)
