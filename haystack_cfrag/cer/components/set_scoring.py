"""F̂ of a set of pool passages from the support scorer (what `EvidenceSetSelector`'s search calls): one per run,
memoised, counted, with F̂'s free upper bound (`bound`)."""

from __future__ import annotations

from typing import Any

from haystack import Document

from haystack_cfrag.cer.math.quality import coverage, pmi_probability, quality_score, support_probability
from haystack_cfrag.cer.math.settings import CerSettings

VERIFY_QUESTION = '{query}\nIs "{answer}" the answer the evidence gives? Reply yes or no.'
"""The question whose "no" / "yes" support gives p_contra with `contradiction="yes_no"`."""


class SetScoring:
    """F̂ over tuples of pool indices, from the support scorer (one run's answer and pool)."""

    def __init__(
        self,
        support_scorer: Any,
        query: str,
        answer: str,
        pool: list[Document],
        *,
        settings: CerSettings,
        entailment: str,
        pmi_scale: float,
        contradiction: str,
    ) -> None:
        """:param support_scorer: anything with `score(query, answer, documents) -> float`.
        :param settings: F̂'s weights and K_max. :param entailment, pmi_scale, contradiction: as
        `EvidenceSetSelector`'s init parameters of the same names."""
        self.support_scorer = support_scorer
        self.query, self.answer, self.pool = query, answer, pool
        self.settings = settings
        self.entailment, self.pmi_scale, self.contradiction = entailment, pmi_scale, contradiction
        self.calls = 0
        self.sets = 0
        self._support: dict[tuple[int, ...], float] = {}

    def _score(self, query: str, answer: str, docs: list[Document]) -> float:
        self.calls += 1
        return float(self.support_scorer.score(query, answer, docs))

    def support(self, idx: tuple[int, ...]) -> float:
        if idx not in self._support:
            self._support[idx] = self._score(self.query, self.answer, [self.pool[i] for i in idx])
        return self._support[idx]

    def quality(self, idx: tuple[int, ...]) -> float:
        self.sets += 1
        docs = [self.pool[i] for i in idx]
        if self.entailment == "pmi":
            p_entail = pmi_probability(self.support(idx) - self.support(()), self.pmi_scale)
        else:
            p_entail = support_probability(self.support(idx))
        p_cov = coverage(self.answer, [d.content or "" for d in docs])
        p_contra = self._contradiction(docs) if self.contradiction == "yes_no" else 0.0
        return quality_score(p_entail, p_cov, p_contra, len(idx), self.settings)

    def bound(self, idx: tuple[int, ...]) -> float:
        """F̂'s upper bound without a scoring: p_entail = 1, p_contra = 0 (p_cov and |S| are free)."""
        p_cov = coverage(self.answer, [self.pool[i].content or "" for i in idx])
        return quality_score(1.0, p_cov, 0.0, len(idx), self.settings)

    def _contradiction(self, docs: list[Document]) -> float:
        question = VERIFY_QUESTION.format(query=self.query, answer=self.answer)
        p_yes = support_probability(self._score(question, "yes", docs))
        p_no = support_probability(self._score(question, "no", docs))
        return p_no / (p_yes + p_no) if p_yes + p_no > 0 else 0.0


__all__ = ["VERIFY_QUESTION", "SetScoring"]
