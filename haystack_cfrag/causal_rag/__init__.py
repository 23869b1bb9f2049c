"""CausalRAG, "Integrating Causal Graphs into Retrieval-Augmented Generation" (paper 004; docs/causal_rag.md).

`CausalGraphBuilder` extracts the graph at index time; `CausalGraphRetriever` takes the k nodes nearest the
query, expands s hops and fetches the source passages; `CausalSummarizer` writes the causal summary for the
answer prompt. `causal_rag.math` holds the pure parts; components are imported on first use."""

from typing import TYPE_CHECKING

from haystack_cfrag.common.lazy import lazy_exports

__all__ = ["CausalGraphBuilder", "CausalGraphRetriever", "CausalSummarizer", "LLMGraphExtractor",
           "SpacyGraphExtractor"]

_HOMES = {"CausalGraphBuilder": "haystack_cfrag.causal_rag.components.causal_graph_builder",
          "CausalGraphRetriever": "haystack_cfrag.causal_rag.components.causal_graph_retriever",
          "CausalSummarizer": "haystack_cfrag.causal_rag.components.causal_summarizer",
          "LLMGraphExtractor": "haystack_cfrag.causal_rag.components.llm_graph_extractor",
          "SpacyGraphExtractor": "haystack_cfrag.causal_rag.components.spacy_graph_extractor"}

if TYPE_CHECKING:
    from haystack_cfrag.causal_rag.components.causal_graph_builder import CausalGraphBuilder
    from haystack_cfrag.causal_rag.components.causal_graph_retriever import CausalGraphRetriever
    from haystack_cfrag.causal_rag.components.causal_summarizer import CausalSummarizer
    from haystack_cfrag.causal_rag.components.llm_graph_extractor import LLMGraphExtractor
    from haystack_cfrag.causal_rag.components.spacy_graph_extractor import SpacyGraphExtractor


__getattr__ = lazy_exports(__name__, _HOMES)
