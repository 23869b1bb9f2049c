"""EmbeddingDeduplicator: near-duplicate, quality and relevance filtering (Eq. 4–5)."""

from __future__ import annotations

from typing import Any

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict, logging

from haystack_cfrag.cfrag.math.dedup import greedy_dedup, quality_score
from haystack_cfrag.common.plumbing import (
    InjectedParts,
    embed_texts,
    embed_texts_async,
    ensure_embeddings,
    ensure_embeddings_async,
    split_by_embedding,
)
from haystack_cfrag.common.protocols import DocumentEmbedder, TextEmbedder
from haystack_cfrag.common.serialization import deserialize_init_components, serialize_component
from haystack_cfrag.common.validation import check_int, check_range
from haystack_cfrag.common.vectors import as_matrix, cosine_matrix, cosine_to_relevance

logger = logging.getLogger(__name__)


@component
class EmbeddingDeduplicator(InjectedParts):
    """
    Removes near-duplicates, low-quality text and (optionally) irrelevant documents.

    Documents without an embedding are embedded (copies). In input (relevance) order, a document whose cosine
    to a kept one exceeds θ_dedup is dropped; so is text with Q(e) ≤ `quality_threshold`, and with the relevance
    filter (off by default; `queries` and a `text_embedder`) one whose best s(q', e) ≤ θ_rel. Documents without
    content or a usable embedding are skipped with a warning.

    ### Usage example
    ```python
    from haystack import Document
    from haystack_cfrag import EmbeddingDeduplicator

    docs = [Document(content="Christian Bale plays Bruce Wayne in The Dark Knight.", embedding=[1.0, 0.0]),
            Document(content="In The Dark Knight, Christian Bale plays Bruce Wayne.", embedding=[0.99, 0.01]),
            Document(content="Heath Ledger plays the Joker in The Dark Knight.", embedding=[0.0, 1.0])]
    print(len(EmbeddingDeduplicator().run(documents=docs)["documents"]))  # 2
    ```
    """

    _INJECTED = ("document_embedder", "text_embedder")

    def __init__(
        self,
        *,
        document_embedder: DocumentEmbedder | None = None,
        text_embedder: TextEmbedder | None = None,
        threshold: float = 0.95,
        quality_threshold: float = 0.5,
        min_words: int = 5,
        relevance_threshold: float | None = None,
    ) -> None:
        """
        :param document_embedder: embeds documents that arrive without an embedding.
        :param text_embedder: embeds the queries for the relevance filter.
        :param threshold: θ_dedup in (0, 1]: cosine above which a document is a near-duplicate.
        :param quality_threshold: θ_quality in [0, 1): documents with Q(e) ≤ it are dropped (0 keeps all text).
        :param min_words: documents with fewer words get Q(e) = 0.
        :param relevance_threshold: θ_rel in [0, 1), or None (default) to switch the relevance filter off.
        """
        check_range("threshold", threshold, 0.0, 1.0, low_open=True)
        check_range("quality_threshold", quality_threshold, 0.0, 1.0, high_open=True)
        check_int("min_words", min_words, 0)
        if relevance_threshold is not None:
            check_range("relevance_threshold", relevance_threshold, 0.0, 1.0, high_open=True)
            if text_embedder is None:
                raise ValueError("EmbeddingDeduplicator: 'relevance_threshold' needs a 'text_embedder'.")
        self.document_embedder = document_embedder
        self.text_embedder = text_embedder
        self.threshold = threshold
        self.quality_threshold = quality_threshold
        self.min_words = min_words
        self.relevance_threshold = relevance_threshold


    def to_dict(self) -> dict[str, Any]:
        """Serialise, including the injected components."""
        return default_to_dict(self, document_embedder=serialize_component(self.document_embedder),
                               text_embedder=serialize_component(self.text_embedder),
                               threshold=self.threshold, quality_threshold=self.quality_threshold,
                               min_words=self.min_words, relevance_threshold=self.relevance_threshold)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EmbeddingDeduplicator:
        """Deserialise, including the injected components."""
        return default_from_dict(cls, deserialize_init_components(data, cls._INJECTED))

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document], queries: list[str] | None = None) -> dict[str, list[Document]]:
        """
        :param documents: candidates, most relevant first.
        :param queries: the query and its counterfactuals, for the relevance filter.
        :returns: `documents`, the distinct documents that pass the filters, in input order.
        """
        docs = ensure_embeddings(self._with_content(documents), self.document_embedder)
        q_emb = embed_texts(self.text_embedder, queries) if self._relevance_on(queries) else None
        return {"documents": self._filter(docs, q_emb)}

    @component.output_types(documents=list[Document])
    async def run_async(
        self, documents: list[Document], queries: list[str] | None = None
    ) -> dict[str, list[Document]]:
        """Async twin of `run`, with the same sockets."""
        docs = await ensure_embeddings_async(self._with_content(documents), self.document_embedder)
        q_emb = await embed_texts_async(self.text_embedder, queries) if self._relevance_on(queries) else None
        return {"documents": self._filter(docs, q_emb)}

    # ------------------------------------------------------------------ steps
    def _relevance_on(self, queries: list[str] | None) -> bool:
        return self.relevance_threshold is not None and bool(queries)

    @staticmethod
    def _with_content(documents: list[Document]) -> list[Document]:
        kept = []
        for doc in documents:
            if doc.content and doc.content.strip():
                kept.append(doc)
            else:
                logger.warning("EmbeddingDeduplicator: skipping document {doc_id}: it has no text", doc_id=doc.id)
        return kept

    def _filter(self, documents: list[Document], query_embeddings: np.ndarray | None) -> list[Document]:
        usable, _ = split_by_embedding(documents, "EmbeddingDeduplicator")
        if not usable:
            return []
        emb = as_matrix([d.embedding for d in usable])
        keep = np.zeros(len(usable), dtype=bool)
        keep[greedy_dedup(emb, self.threshold)] = True
        if self.quality_threshold > 0:
            quality = np.array([quality_score(d.content, min_words=self.min_words) for d in usable])
            keep &= quality > self.quality_threshold
        if query_embeddings is not None and self.relevance_threshold is not None:
            relevance = cosine_to_relevance(cosine_matrix(query_embeddings, emb)).max(axis=0)
            keep &= relevance > self.relevance_threshold
        dropped = len(usable) - int(keep.sum())
        if dropped:
            logger.debug("EmbeddingDeduplicator: dropped {n} of {total} documents", n=dropped, total=len(usable))
        return [d for d, k in zip(usable, keep, strict=True) if k]
