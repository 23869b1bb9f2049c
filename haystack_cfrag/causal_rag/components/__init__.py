"""CausalRAG's Haystack components."""

from haystack_cfrag.causal_rag.components.causal_graph_builder import CausalGraphBuilder
from haystack_cfrag.causal_rag.components.causal_graph_retriever import CausalGraphRetriever
from haystack_cfrag.causal_rag.components.causal_summarizer import CausalSummarizer

__all__ = ["CausalGraphBuilder", "CausalGraphRetriever", "CausalSummarizer"]
