"""haystack-cfrag: Counterfactual RAG (CF-RAG) as Haystack components.

Generate counterfactual questions, retrieve for all of them, keep evidence that supports the
original question more than its counterfactuals, draft answers from separate evidence strata
and arbitrate them on coherence and causal discrimination.
"""

from typing import TYPE_CHECKING, Any

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

# Imported on first use (PEP 562): `import haystack_cfrag` stays cheap, so that the `cfrag`
# command is still in its own hands when Ctrl-C comes while Haystack imports.
_HOMES = {name: "haystack_cfrag.components" for name in __all__}
_HOMES.update({"Draft": "haystack_cfrag.dataclasses", "load_pipeline": "haystack_cfrag.loading"})

if TYPE_CHECKING:
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


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        import importlib  # noqa: PLC0415

        value = getattr(importlib.import_module(_HOMES[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
