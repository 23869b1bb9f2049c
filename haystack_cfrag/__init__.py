"""haystack-cfrag: causal retrieval-augmented generation as Haystack components.

One subpackage per method family — `cfrag` (Counterfactual RAG), `cer` (minimal sufficient evidence sets),
`cdf_rag` (refine, check) — beside the shared primitive `support` (the reader's own support score) and the
infrastructure every family uses (`common`, `adapters`, `models`, `loading`, `runtime`, `registry`). Every public
component is exported here and imported on first use. The layout and how to add a family: docs/architecture.md.
"""

from typing import TYPE_CHECKING

from haystack_cfrag.common.lazy import lazy_exports

__version__ = "0.1.0"

__all__ = [
    "ArbitrationDuel",
    "CausalArbitrationRanker",
    "CounterfactualQueryExpander",
    "CausalConsistencyChecker",
    "CausalGraphBuilder",
    "CausalGraphRetriever",
    "CausalSummarizer",
    "CounterfactualRAG",
    "Draft",
    "DualPathRetriever",
    "EmbeddingDeduplicator",
    "EvidenceSetSelector",
    "HallucinationChecker",
    "MultiQueryRetriever",
    "ParallelDraftGenerator",
    "QueryRefiner",
    "ReaderSupportScorer",
    "SpectralStratifier",
    "load_pipeline",
]

# Imported on first use (PEP 562): `import haystack_cfrag` stays cheap, so that the `cfrag`
# command is still in its own hands when Ctrl-C comes while Haystack imports.
_HOMES = {name: "haystack_cfrag.cfrag.components" for name in __all__}
_HOMES.update({"Draft": "haystack_cfrag.cfrag.dataclasses", "load_pipeline": "haystack_cfrag.pipelines.loading",
               "EvidenceSetSelector": "haystack_cfrag.cer.components.evidence_set_selector",
               "ReaderSupportScorer": "haystack_cfrag.support.scorer",
               "QueryRefiner": "haystack_cfrag.cdf_rag.components.query_refiner",
               "HallucinationChecker": "haystack_cfrag.cdf_rag.components.hallucination_checker",
               "CausalConsistencyChecker": "haystack_cfrag.cdf_rag.components.causal_consistency_checker",
               "DualPathRetriever": "haystack_cfrag.cdf_rag.components.dual_path_retriever",
               "CausalGraphBuilder": "haystack_cfrag.causal_rag.components.causal_graph_builder",
               "CausalGraphRetriever": "haystack_cfrag.causal_rag.components.causal_graph_retriever",
               "CausalSummarizer": "haystack_cfrag.causal_rag.components.causal_summarizer"})

if TYPE_CHECKING:
    from haystack_cfrag.causal_rag.components.causal_graph_builder import CausalGraphBuilder
    from haystack_cfrag.causal_rag.components.causal_graph_retriever import CausalGraphRetriever
    from haystack_cfrag.causal_rag.components.causal_summarizer import CausalSummarizer
    from haystack_cfrag.cdf_rag.components.causal_consistency_checker import CausalConsistencyChecker
    from haystack_cfrag.cdf_rag.components.dual_path_retriever import DualPathRetriever
    from haystack_cfrag.cdf_rag.components.hallucination_checker import HallucinationChecker
    from haystack_cfrag.cdf_rag.components.query_refiner import QueryRefiner
    from haystack_cfrag.cer.components.evidence_set_selector import EvidenceSetSelector
    from haystack_cfrag.cfrag.components import (
        ArbitrationDuel,
        CausalArbitrationRanker,
        CounterfactualQueryExpander,
        CounterfactualRAG,
        EmbeddingDeduplicator,
        MultiQueryRetriever,
        ParallelDraftGenerator,
        SpectralStratifier,
    )
    from haystack_cfrag.cfrag.dataclasses import Draft
    from haystack_cfrag.pipelines.loading import load_pipeline
    from haystack_cfrag.support.scorer import ReaderSupportScorer


__getattr__ = lazy_exports(__name__, _HOMES)
