"""The Haystack protocols that type the components injected into ours.

| role | protocol |
|---|---|
| chat generator (counterfactuals, drafts, synthesis, duel) | `ChatGenerator` |
| text embedder (query, counterfactuals, answers) | `TextEmbedder` |
| document embedder (documents that arrive without an embedding) | `DocumentEmbedder` |
| retriever | `Retriever`: Haystack's `EmbeddingRetriever` or `TextRetriever` |
| scorer (a ranker of query–passage pairs, e.g. a cross-encoder) | none: Haystack declares no ranker protocol, so it stays `Any` |
| support scorer (the reader's log P(answer given query, documents)) | `SupportScorer` (ours) |

A protocol only types the call (`run(messages=…)`, `run(text=…)`, …): any component with that
`run` fits, and nothing is checked at run time. `DocumentEmbedder` and the retriever protocols
are newer than the oldest Haystack this package supports (haystack-ai 2.20 has neither): with
such a Haystack they stand for `Any`.
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
    """What CER's selector and CDF-RAG's hallucination checker need of a support scorer: length-normalised
    log P(answer | query, documents).

    `haystack_cfrag.support.ReaderSupportScorer` fits; so does any object with this method. A scorer
    that also has `score_reply(messages, answer, reply_prefix) -> float` (the answer's support as the
    reader's reply to the chat messages it answered) lets CDF-RAG's hallucination check read the answer
    under the generator's own prompt (`HallucinationChecker(prompt=…)`); without it the check uses `score`.
    """

    def score(self, query: str, answer: str, documents: list[Document]) -> float:
        """Length-normalised log-probability of `answer` to `query` after the reader reads `documents`."""
        ...


__all__ = ["ChatGenerator", "SupportScorer", "DocumentEmbedder", "EmbeddingRetriever", "Retriever", "TextEmbedder", "TextRetriever"]
