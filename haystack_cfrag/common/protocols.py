"""The Haystack protocols that type the injected components: `ChatGenerator`, `TextEmbedder`, `DocumentEmbedder`,
`Retriever` (an `EmbeddingRetriever` or `TextRetriever`) and our `SupportScorer`; a scorer (ranker) stays `Any`.

A protocol only types the call; nothing is checked at run time. On a Haystack older than a protocol (2.20) it is `Any`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from haystack import Document
from haystack.components.embedders.types import TextEmbedder
from haystack.components.generators.chat.types import ChatGenerator

if TYPE_CHECKING:
    from haystack.components.embedders.types import DocumentEmbedder
    from haystack.components.retrievers.types import EmbeddingRetriever, TextRetriever
else:
    try:
        from haystack.components.embedders.types import DocumentEmbedder
    except ImportError:  # haystack-ai older than the DocumentEmbedder protocol
        DocumentEmbedder = Any
    try:
        from haystack.components.retrievers.types import EmbeddingRetriever, TextRetriever
    except ImportError:  # haystack-ai older than the retriever protocols
        EmbeddingRetriever = TextRetriever = Any

Retriever: TypeAlias = EmbeddingRetriever | TextRetriever
"""What `MultiQueryRetriever` (and `CounterfactualRAG`) run per query: an embedding or a text retriever."""



class SupportScorer(Protocol):
    """Length-normalised log P(answer | query, documents), for CER's selector and CDF-RAG's hallucination checker
    (`support.ReaderSupportScorer` fits). One that also has `score_reply(messages, answer, reply_prefix)` lets the
    hallucination check read the answer under the generator's own prompt."""

    def score(self, query: str, answer: str, documents: list[Document]) -> float:
        """Length-normalised log-probability of `answer` to `query` after the reader reads `documents`."""
        ...


__all__ = ["ChatGenerator", "SupportScorer", "DocumentEmbedder", "EmbeddingRetriever", "Retriever", "TextEmbedder",
           "TextRetriever"]
