"""The CF-RAG components, one module each, imported on first use (as Haystack's own component packages do)."""

from typing import TYPE_CHECKING, Any

_import_structure = {
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
    from .causal_arbitration_ranker import CausalArbitrationRanker
    from .counterfactual_query_expander import CounterfactualQueryExpander
    from .counterfactual_rag import CounterfactualRAG
    from .embedding_deduplicator import EmbeddingDeduplicator
    from .multi_query_retriever import MultiQueryRetriever
    from .parallel_draft_generator import ParallelDraftGenerator
    from .spectral_stratifier import SpectralStratifier


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        import importlib  # noqa: PLC0415

        value = getattr(importlib.import_module(_HOMES[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
