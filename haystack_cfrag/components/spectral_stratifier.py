"""SpectralStratifier: cluster the evidence and draw M stratified subsets (4.2.1, Eq. 6–7)."""

from __future__ import annotations

from typing import Any

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict, logging

from haystack_cfrag.components._common import (
    DEFAULT_MAX_QUERY_CHARS,
    check_int,
    check_range,
    deserialize_init_components,
    embed_texts,
    embed_texts_async,
    ensure_embeddings,
    ensure_embeddings_async,
    prepare_query,
    serialize_component,
    split_by_embedding,
    warm_up_all,
    with_meta,
)
from haystack_cfrag.core.stratify import spectral_clusters, stratified_subsets
from haystack_cfrag.core.vectors import as_matrix, cosine_matrix, cosine_to_relevance

logger = logging.getLogger(__name__)

CLUSTER_KEY = "cfrag_cluster"
RELEVANCE_KEY = "cfrag_relevance"


@component
class SpectralStratifier:
    """
    Splits the evidence into K spectral clusters and draws M subsets, one per draft.

    Affinity W = exp(−‖e_i − e_j‖²/2σ²) (σ = median distance unless given), normalised
    Laplacian, the K smallest eigenvectors row-normalised, k-means. K is capped by the
    number of documents. Each subset takes n_m = max(1, ⌊|C_m|·ρ·w_m⌋) documents from every
    cluster m, w_m = K·softmax((log U_m + μ_m)/τ), μ_m the cluster's mean relevance to the
    query, sampled without replacement in proportion to relevance. Relevance is the query
    cosine rescaled to [0, 1] when a `text_embedder` and `query` are given, else the
    documents' scores min-max scaled, else uniform. `anchors` > 0 puts the most relevant
    documents in every subset (off by default: the paper's sampler). Same input and
    `random_state` give the same subsets.

    Outputs `subsets` (M lists of documents) and `documents` (all, each a copy with
    `meta["cfrag_cluster"]` and `meta["cfrag_relevance"]`).

    ### Usage example
    ```python
    from haystack import Document
    from haystack_cfrag import SpectralStratifier

    docs = [Document(content=f"passage {i}", embedding=[1.0, i / 10], score=1.0) for i in range(6)]
    out = SpectralStratifier(n_clusters=2, n_subsets=3, random_state=0).run(documents=docs)
    print([len(s) for s in out["subsets"]])
    ```
    """

    def __init__(
        self,
        *,
        n_clusters: int = 4,
        n_subsets: int = 3,
        sampling_ratio: float = 0.5,
        temperature: float = 1.0,
        sigma: float | None = None,
        anchors: int = 0,
        random_state: int | None = None,
        text_embedder: Any | None = None,
        document_embedder: Any | None = None,
        max_query_chars: int | None = DEFAULT_MAX_QUERY_CHARS,
    ) -> None:
        """
        :param n_clusters: K, evidence clusters (1–20; 1 = ablation "w/o evidence division").
        :param n_subsets: M, subsets drawn (one per draft), 1–20.
        :param sampling_ratio: ρ in (0, 1], share of a cluster a subset takes at weight 1.
        :param temperature: τ > 0 of the cluster softmax.
        :param sigma: RBF width σ > 0; None = median pairwise distance.
        :param anchors: number of most relevant documents shared by every subset (0 = paper).
        :param random_state: seed of the sampler and k-means; None = fresh randomness.
        :param text_embedder: embeds the query for relevance.
        :param document_embedder: embeds documents that arrive without an embedding.
        :param max_query_chars: longer queries are cut to this many characters before embedding (None = whole).
        """
        check_int("n_clusters", n_clusters, 1, 20)
        check_int("n_subsets", n_subsets, 1, 20)
        check_range("sampling_ratio", sampling_ratio, 0.0, 1.0, low_open=True)
        check_range("temperature", temperature, 0.0, 1e6, low_open=True)
        if sigma is not None:
            check_range("sigma", sigma, 0.0, 1e12, low_open=True)
        check_int("anchors", anchors, 0)
        if random_state is not None:
            check_int("random_state", random_state, 0)
        if max_query_chars is not None:
            check_int("max_query_chars", max_query_chars, 1)
        self.n_clusters = n_clusters
        self.n_subsets = n_subsets
        self.sampling_ratio = sampling_ratio
        self.temperature = temperature
        self.sigma = sigma
        self.anchors = anchors
        self.random_state = random_state
        self.text_embedder = text_embedder
        self.document_embedder = document_embedder
        self.max_query_chars = max_query_chars

    def warm_up(self) -> None:
        """Warm up the injected embedders."""
        warm_up_all(self.text_embedder, self.document_embedder)

    def to_dict(self) -> dict[str, Any]:
        """Serialise, including the injected components."""
        return default_to_dict(
            self,
            n_clusters=self.n_clusters,
            n_subsets=self.n_subsets,
            sampling_ratio=self.sampling_ratio,
            temperature=self.temperature,
            sigma=self.sigma,
            anchors=self.anchors,
            random_state=self.random_state,
            text_embedder=serialize_component(self.text_embedder),
            document_embedder=serialize_component(self.document_embedder),
            max_query_chars=self.max_query_chars,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SpectralStratifier:
        """Deserialise, including the injected components."""
        return default_from_dict(cls, deserialize_init_components(data, ("text_embedder", "document_embedder")))

    @component.output_types(subsets=list[list[Document]], documents=list[Document])
    def run(
        self,
        documents: list[Document],
        query: str | None = None,
        n_clusters: int | None = None,
        n_subsets: int | None = None,
    ) -> dict[str, Any]:
        """
        :param documents: the (deduplicated) evidence.
        :param query: the original query, for relevance.
        :param n_clusters: overrides K for this call.
        :param n_subsets: overrides M for this call.
        :returns: `subsets` and the labelled `documents`.
        """
        docs, _ = split_by_embedding(ensure_embeddings(documents, self.document_embedder), "SpectralStratifier")
        query = self._query_relevance(query, docs)
        q_emb = embed_texts(self.text_embedder, [query]) if query else None
        return self._stratify(docs, q_emb, n_clusters, n_subsets)

    @component.output_types(subsets=list[list[Document]], documents=list[Document])
    async def run_async(
        self,
        documents: list[Document],
        query: str | None = None,
        n_clusters: int | None = None,
        n_subsets: int | None = None,
    ) -> dict[str, Any]:
        """Async twin of `run`, with the same sockets."""
        embedded = await ensure_embeddings_async(documents, self.document_embedder)
        docs, _ = split_by_embedding(embedded, "SpectralStratifier")
        query = self._query_relevance(query, docs)
        q_emb = await embed_texts_async(self.text_embedder, [query]) if query else None
        return self._stratify(docs, q_emb, n_clusters, n_subsets)

    # ------------------------------------------------------------------ steps
    def _query_relevance(self, query: str | None, docs: list[Document]) -> str | None:
        """The cleaned query when it is to be embedded for relevance, else None."""
        if self.text_embedder is None or not docs:
            return None
        return prepare_query(query, "SpectralStratifier", self.max_query_chars, required=False)

    def _stratify(
        self,
        docs: list[Document],
        query_embedding: np.ndarray | None,
        n_clusters: int | None,
        n_subsets: int | None,
    ) -> dict[str, Any]:
        k = self.n_clusters if n_clusters is None else n_clusters
        m = self.n_subsets if n_subsets is None else n_subsets
        check_int("n_clusters", k, 1, 20)
        check_int("n_subsets", m, 1, 20)
        if not docs:
            logger.warning("SpectralStratifier: no usable documents; every subset is empty")
            return {"subsets": [[] for _ in range(m)], "documents": []}
        emb = as_matrix([d.embedding for d in docs])
        relevance = document_relevance(docs, emb, query_embedding)
        labels = spectral_clusters(emb, k, sigma=self.sigma, random_state=self.random_state)
        labelled = [
            with_meta(d, **{CLUSTER_KEY: int(lab), RELEVANCE_KEY: float(r)})
            for d, lab, r in zip(docs, labels, relevance, strict=True)
        ]
        index_subsets = stratified_subsets(
            labels,
            relevance,
            n_subsets=m,
            sampling_ratio=self.sampling_ratio,
            temperature=self.temperature,
            anchors=self.anchors,
            random_state=self.random_state,
        )
        return {"subsets": [[labelled[i] for i in s] for s in index_subsets], "documents": labelled}


def document_relevance(docs: list[Document], embeddings: np.ndarray, query_embedding: np.ndarray | None) -> np.ndarray:
    """Relevance in [0, 1]: query cosine rescaled, else min-max scaled scores, else all ones."""
    if query_embedding is not None:
        return cosine_to_relevance(cosine_matrix(query_embedding, embeddings)[0])
    scores = [d.score for d in docs]
    if all(s is not None for s in scores):
        arr = np.asarray(scores, dtype=float)
        span = arr.max() - arr.min()
        return (arr - arr.min()) / span if span > 0 else np.ones_like(arr)
    return np.ones(len(docs))
