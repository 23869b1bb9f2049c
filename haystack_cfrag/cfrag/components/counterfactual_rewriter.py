"""CounterfactualRewriter: counterfactual questions by rule, no model call (issue 61's cost lever)."""

from __future__ import annotations

from typing import Any

from haystack import component, default_from_dict, default_to_dict

from haystack_cfrag.cfrag import ranges
from haystack_cfrag.cfrag.counterfactual_selection import check_selection, output, select_counterfactuals
from haystack_cfrag.cfrag.math.rewrites import rewrite_candidates
from haystack_cfrag.common.plumbing import (
    DEFAULT_MAX_QUERY_CHARS,
    InjectedParts,
    embed_texts,
    embed_texts_async,
    prepare_query,
)
from haystack_cfrag.common.protocols import TextEmbedder
from haystack_cfrag.common.serialization import deserialize_init_components, serialize_component
from haystack_cfrag.common.validation import check_optional_int

NO_RULE = "no rewrite rule matched the question"


@component
class CounterfactualRewriter(InjectedParts):
    """
    Writes N counterfactual questions by rule: the query with one word swapped, no model call.

    A drop-in for `CounterfactualQueryExpander` (same inputs, same outputs, same validation and
    Info selection): the candidates are the query with an opposite ("largest" → "smallest"), a
    sibling role ("directed" → "produced", "born" → "buried") or a shifted year or ordinal
    (`haystack_cfrag.cfrag.math.rewrites`), then kept as the expander keeps the reader's — on topic
    (cosine > θ_sim), not a paraphrase, the N most informative. **What it replaces**: the paper has
    the generator write the counterfactuals (paper 4.1.1); these rules write only those three kinds,
    never another entity or another attribute, and carry no expected-answer hint (so "a different
    expected answer" is not checked, as with the expander's "lines" prompt). A question no rule
    matches gets no counterfactual (a degradation in the trace): CF-RAG then runs as with N = 0.

    ### Usage example
    ```python
    from haystack_cfrag import CounterfactualRewriter

    rewriter = CounterfactualRewriter(n_counterfactuals=2, similarity_threshold=0.3)
    print(rewriter.run(query="What is the largest desert in the world?")["queries"])
    # ['What is the largest desert in the world?', 'What is the smallest desert in the world?']
    ```
    """

    COMPONENT = "CounterfactualRewriter"
    _INJECTED = ("text_embedder",)

    def __init__(
        self,
        *,
        text_embedder: TextEmbedder | None = None,
        n_counterfactuals: int = 3,
        similarity_threshold: float = 0.7,
        paraphrase_threshold: float = 0.97,
        per_slot: int = 2,
        info_weights: tuple[float, float, float] | list[float] = (1 / 3, 1 / 3, 1 / 3),
        max_query_chars: int | None = DEFAULT_MAX_QUERY_CHARS,
    ) -> None:
        """
        :param text_embedder: a Haystack text embedder for cosine(q, q'); None = bag-of-words cosine.
        :param n_counterfactuals: N, counterfactuals kept (0–10; 0 = none).
        :param similarity_threshold: θ_sim in (0, 1]: minimum cosine for a candidate to be on topic.
        :param paraphrase_threshold: cosine at or above which a candidate is a paraphrase, in (0, 1].
        :param per_slot: rewrites tried per matched word (1–5).
        :param info_weights: (α, β, γ) of Info, non-negative, not all zero.
        :param max_query_chars: longer queries are cut to this many characters, with a warning (None = whole).
        """
        check_optional_int("per_slot", per_slot, 1, 5)
        weights = check_selection(n_counterfactuals, similarity_threshold, paraphrase_threshold, info_weights)
        check_optional_int("max_query_chars", max_query_chars, 1)
        self.text_embedder = text_embedder
        self.n_counterfactuals = n_counterfactuals
        self.similarity_threshold = similarity_threshold
        self.paraphrase_threshold = paraphrase_threshold
        self.per_slot = per_slot
        self.info_weights = weights
        self.max_query_chars = max_query_chars

    def to_dict(self) -> dict[str, Any]:
        """Serialise, including the text embedder."""
        return default_to_dict(
            self,
            text_embedder=serialize_component(self.text_embedder),
            n_counterfactuals=self.n_counterfactuals,
            similarity_threshold=self.similarity_threshold,
            paraphrase_threshold=self.paraphrase_threshold,
            per_slot=self.per_slot,
            info_weights=list(self.info_weights),
            max_query_chars=self.max_query_chars,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CounterfactualRewriter:
        """Deserialise, including the text embedder."""
        return default_from_dict(cls, deserialize_init_components(data, cls._INJECTED))

    @component.output_types(
        queries=list[str], counterfactuals=list[dict[str, Any]], degradations=list[dict[str, Any]]
    )
    def run(self, query: str, n_counterfactuals: int | None = None) -> dict[str, Any]:
        """
        :param query: the user's question.
        :param n_counterfactuals: overrides N for this call.
        :returns: `queries` (original first), `counterfactuals` and `degradations`.
        """
        query, n, candidates = self._candidates(query, n_counterfactuals)
        texts = [query] + [c["question"] for c in candidates]
        emb = embed_texts(self.text_embedder, texts) if self.text_embedder and candidates else None
        return self._select(query, candidates, emb, n)

    @component.output_types(
        queries=list[str], counterfactuals=list[dict[str, Any]], degradations=list[dict[str, Any]]
    )
    async def run_async(self, query: str, n_counterfactuals: int | None = None) -> dict[str, Any]:
        """Async twin of `run`, with the same sockets."""
        query, n, candidates = self._candidates(query, n_counterfactuals)
        texts = [query] + [c["question"] for c in candidates]
        emb = await embed_texts_async(self.text_embedder, texts) if self.text_embedder and candidates else None
        return self._select(query, candidates, emb, n)

    def _candidates(self, query: str, override: int | None) -> tuple[str, int, list[dict[str, str]]]:
        query = prepare_query(query, self.COMPONENT, self.max_query_chars)
        n = self.n_counterfactuals if override is None else override
        ranges.check("n_counterfactuals", n)
        return query, n, rewrite_candidates(query, per_slot=self.per_slot) if n else []

    def _select(self, query: str, candidates: list[dict[str, str]], emb: Any, n: int) -> dict[str, Any]:
        if n == 0:
            return output(query, [], [])
        return select_counterfactuals(
            query, "", candidates, emb, n, similarity_threshold=self.similarity_threshold,
            paraphrase_threshold=self.paraphrase_threshold, info_weights=self.info_weights,
            component=self.COMPONENT, empty_reason=NO_RULE,
        )


__all__ = ["CounterfactualRewriter"]
