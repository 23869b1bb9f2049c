"""SpectralStratifier: cluster the evidence and draw M stratified subsets (4.2.1, Eq. 6–7)."""

from __future__ import annotations

from typing import Any

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict, logging

from haystack_cfrag.cfrag import ranges
from haystack_cfrag.cfrag.components.multi_query_retriever import PROVENANCE_KEY
from haystack_cfrag.cfrag.math.arbitration import causal_margins
from haystack_cfrag.cfrag.math.stratify import cluster_subsets, order_by, spectral_clusters, stratified_subsets
from haystack_cfrag.cfrag.settings import STRATA_QUALIFIERS
from haystack_cfrag.common.plumbing import (
    DEFAULT_MAX_QUERY_CHARS,
    InjectedParts,
    embed_texts,
    embed_texts_async,
    ensure_embeddings,
    ensure_embeddings_async,
    prepare_query,
    split_by_embedding,
    with_meta,
)
from haystack_cfrag.common.protocols import DocumentEmbedder, TextEmbedder
from haystack_cfrag.common.qualifiers import qualifying_scores
from haystack_cfrag.common.serialization import deserialize_init_components, serialize_component
from haystack_cfrag.common.validation import check_choice, check_optional_int, check_range
from haystack_cfrag.common.vectors import as_matrix, cosine_matrix, cosine_to_relevance

logger = logging.getLogger(__name__)

CLUSTER_KEY = "cfrag_cluster"
RELEVANCE_KEY = "cfrag_relevance"
MARGIN_KEY = "cfrag_causal_margin"
POOLS = ("all", "original")
SELECTIONS = ("sampled", "clusters")
ORDERS = ("relevance", "causal")


@component
class SpectralStratifier(InjectedParts):
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

    Options beyond the paper (each off by default; the shipped `cf_rag` sets them, see
    docs/method.md): `pool="original"` drafts only from documents the *original* query
    retrieved — the clusters are still computed over every document, so counterfactual-only
    documents shape the strata and reach the ranker's margins, but no subset holds them;
    `selection="clusters"` makes each subset one whole cluster (the M best clusters) instead
    of a sample; `order="causal"` puts each subset's passages decisive-first, by the causal
    margin s(q, e) − max_q' s(q', e) computed from the `queries` input (original first).

    Outputs `subsets` (M lists of documents) and `documents` (all, each a copy with
    `meta["cfrag_cluster"]` and `meta["cfrag_relevance"]`, and `meta["cfrag_causal_margin"]`
    when counterfactual `queries` were given).

    ### Usage example
    ```python
    from haystack import Document
    from haystack_cfrag import SpectralStratifier

    docs = [Document(content=f"passage {i}", embedding=[1.0, i / 10], score=1.0) for i in range(6)]
    out = SpectralStratifier(n_clusters=2, n_subsets=3, random_state=0).run(documents=docs)
    print([len(s) for s in out["subsets"]])
    ```
    """

    _INJECTED = ("text_embedder", "document_embedder")

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
        text_embedder: TextEmbedder | None = None,
        document_embedder: DocumentEmbedder | None = None,
        max_query_chars: int | None = DEFAULT_MAX_QUERY_CHARS,
        pool: str = "all",
        selection: str = "sampled",
        order: str = "relevance",
        qualifier: str = "none",
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
        :param pool: "all" (paper) or "original": subsets hold only documents the original query retrieved
            (clusters are computed over all documents).
        :param selection: "sampled" (paper, Eq. 6–7) or "clusters": each subset is a whole cluster.
        :param order: "relevance" (paper) or "causal": passages decisive-first in each subset
            (needs a `text_embedder` and counterfactual `queries`; falls back to relevance).
        :param qualifier: "none", or "period": when the query states a period ("from 1964 to 1965") and a
            pool passage dates it, the first subset is the passages that date it best (best first), the
            others as `selection` makes them (M subsets in all): a draft that reads the period's passages
            without the other periods' (`common.qualifiers`); a namesake's descriptor ("John Smith (the 1950s
            painter)") qualifies the same way (`qualifiers.qualifying`); "period_only": that subset alone (one
            challenger where the question states a qualifier and a passage meets it, M otherwise).
        """
        for name, value, allowed in (("pool", pool, POOLS), ("selection", selection, SELECTIONS),
                                     ("order", order, ORDERS), ("qualifier", qualifier, STRATA_QUALIFIERS)):
            check_choice(name, value, allowed)
        ranges.check("n_clusters", n_clusters)
        ranges.check("n_subsets", n_subsets)
        ranges.check("sampling_ratio", sampling_ratio)
        check_range("temperature", temperature, 0.0, 1e6, low_open=True)
        if sigma is not None:
            check_range("sigma", sigma, 0.0, 1e12, low_open=True)
        ranges.check("anchors", anchors)
        if random_state is not None:
            ranges.check("random_state", random_state)
        check_optional_int("max_query_chars", max_query_chars, 1)
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
        self.pool = pool
        self.selection = selection
        self.order = order
        self.qualifier = qualifier

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
            pool=self.pool,
            selection=self.selection,
            order=self.order,
            qualifier=self.qualifier,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SpectralStratifier:
        """Deserialise, including the injected components."""
        return default_from_dict(cls, deserialize_init_components(data, cls._INJECTED))

    @component.output_types(subsets=list[list[Document]], documents=list[Document])
    def run(
        self,
        documents: list[Document],
        query: str | None = None,
        n_clusters: int | None = None,
        n_subsets: int | None = None,
        queries: list[str] | None = None,
        qualifier: str | None = None,
    ) -> dict[str, Any]:
        """
        :param documents: the (deduplicated) evidence.
        :param query: the original query, for relevance.
        :param n_clusters: overrides K for this call.
        :param n_subsets: overrides M for this call.
        :param queries: the expander's `queries` (original first), for the causal margin of `order="causal"`.
        :param qualifier: overrides `qualifier` for this call (`cf_rag_auto` passes "period_only" where its gate's
            period rule escalated).
        :returns: `subsets` and the labelled `documents`.
        """
        self._check_qualifier(qualifier)
        docs, _ = split_by_embedding(ensure_embeddings(documents, self.document_embedder), "SpectralStratifier")
        texts = self._texts_to_embed(query, queries, docs)
        q_emb = embed_texts(self.text_embedder, texts) if texts else None
        return self._stratify(docs, q_emb, n_clusters, n_subsets, query, qualifier)

    @component.output_types(subsets=list[list[Document]], documents=list[Document])
    async def run_async(
        self,
        documents: list[Document],
        query: str | None = None,
        n_clusters: int | None = None,
        n_subsets: int | None = None,
        queries: list[str] | None = None,
        qualifier: str | None = None,
    ) -> dict[str, Any]:
        """Async twin of `run`, with the same sockets."""
        self._check_qualifier(qualifier)
        embedded = await ensure_embeddings_async(documents, self.document_embedder)
        docs, _ = split_by_embedding(embedded, "SpectralStratifier")
        texts = self._texts_to_embed(query, queries, docs)
        q_emb = await embed_texts_async(self.text_embedder, texts) if texts else None
        return self._stratify(docs, q_emb, n_clusters, n_subsets, query, qualifier)

    # ------------------------------------------------------------------ steps
    @staticmethod
    def _check_qualifier(qualifier: str | None) -> None:
        """A run's `qualifier` override, checked as `__init__` checks the component's (None: the component's)."""
        if qualifier is not None:
            check_choice("qualifier", qualifier, STRATA_QUALIFIERS)

    def _texts_to_embed(self, query: str | None, queries: list[str] | None, docs: list[Document]) -> list[str]:
        """The cleaned query (for relevance), then the counterfactuals when `order="causal"` needs them."""
        if self.text_embedder is None or not docs:
            return []
        text = prepare_query(query, "SpectralStratifier", self.max_query_chars, required=False)
        if text is None:
            return []
        extra = [q for q in (queries or [])[1:] if isinstance(q, str) and q.strip()] if self.order == "causal" else []
        return [text] + extra

    def _stratify(
        self,
        docs: list[Document],
        query_embeddings: np.ndarray | None,
        n_clusters: int | None,
        n_subsets: int | None,
        query: str | None = None,
        qualifier: str | None = None,
    ) -> dict[str, Any]:
        qualifier = self.qualifier if qualifier is None else qualifier
        k = self.n_clusters if n_clusters is None else n_clusters
        m = self.n_subsets if n_subsets is None else n_subsets
        ranges.check("n_clusters", k)
        ranges.check("n_subsets", m)
        if not docs:
            logger.warning("SpectralStratifier: no usable documents; every subset is empty")
            return {"subsets": [[] for _ in range(m)], "documents": []}
        emb = as_matrix([d.embedding for d in docs])
        q_emb = None if query_embeddings is None else query_embeddings[:1]
        relevance = document_relevance(docs, emb, q_emb)
        margins = None
        if query_embeddings is not None and len(query_embeddings) > 1:
            margins = causal_margins(cosine_to_relevance(cosine_matrix(query_embeddings, emb)))
        labels = spectral_clusters(emb, k, sigma=self.sigma, random_state=self.random_state)
        labelled = []
        for i, (d, lab, r) in enumerate(zip(docs, labels, relevance, strict=True)):
            extra = {MARGIN_KEY: float(margins[i])} if margins is not None else {}
            labelled.append(with_meta(d, **{CLUSTER_KEY: int(lab), RELEVANCE_KEY: float(r)}, **extra))
        pool = self._pool(docs)
        key = margins if margins is not None else relevance
        if self.selection == "clusters":
            local = cluster_subsets(labels[pool], key[pool], m)
        else:
            local = stratified_subsets(
                labels[pool],
                relevance[pool],
                n_subsets=m,
                sampling_ratio=self.sampling_ratio,
                temperature=self.temperature,
                anchors=self.anchors,
                random_state=self.random_state,
            )
            if self.order == "causal" and margins is not None:
                local = order_by(local, key[pool])
        index_subsets = [[int(pool[i]) for i in s] for s in local]
        if qualifier != "none" and query:
            dating = qualifying_scores(query, [d.content or "" for d in docs])
            index_subsets = _with_period_stratum(index_subsets, dating, pool, relevance,
                                                 1 if qualifier == "period_only" else m)
        return {"subsets": [[labelled[i] for i in s] for s in index_subsets], "documents": labelled}

    def _pool(self, docs: list[Document]) -> np.ndarray:
        """Rows that are stratified: all, or those the original query retrieved (all when none carries provenance)."""
        rows = np.arange(len(docs))
        if self.pool == "all":
            return rows
        original = [i for i, d in enumerate(docs) if _from_original(d)]
        return np.asarray(original, dtype=int) if original else rows


def _with_period_stratum(subsets: list[list[int]], dating: list[float] | None, pool: np.ndarray,
                         relevance: np.ndarray, m: int) -> list[list[int]]:
    """The pool's passages that best date the question's period first (best-dated, then most relevant), then
    the other subsets that differ from it, M in all; `subsets` unchanged when no pool passage dates the period.

    >>> _with_period_stratum([[0, 1], [2, 3]], [0.0, 0.5, 1.0, 1.0], np.arange(4), np.array([.9, .8, .6, .7]), 2)
    [[3, 2], [0, 1]]
    >>> _with_period_stratum([[0, 1], [2, 3]], None, np.arange(4), np.ones(4), 2)
    [[0, 1], [2, 3]]
    """
    if dating is None:
        return subsets
    best = max((dating[int(i)] for i in pool), default=0.0)
    if best <= 0:
        return subsets
    stratum = sorted((int(i) for i in pool if dating[int(i)] >= best), key=lambda i: (-relevance[i], i))
    rest = [s for s in subsets if set(s) != set(stratum)]
    return [stratum, *rest][:m]


def _from_original(doc: Document) -> bool:
    """Retrieved by the original query, or without provenance (documents passed in by the caller)."""
    prov = doc.meta.get(PROVENANCE_KEY)
    return not isinstance(prov, list) or any(isinstance(p, dict) and p.get("query_index") == 0 for p in prov)


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
