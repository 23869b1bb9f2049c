"""Causal arbitration scores (paper 4.2.2–4.2.3, Eq. 9–11, Algorithm 1).

Notation: R is the relevance matrix with R[0, i] = s(q, e_i) for the original query and
R[1:, i] = s(q'_k, e_i) for the counterfactuals; a draft's evidence is a list of column
indices of R (duplicates allowed: Lemma 2 says they must not change the scores).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from haystack_cfrag.common.text import agreement_matrix, keyword_distribution

CRITERIA = ("coherence", "causal", "confidence", "specificity")


def causal_margins(relevance: np.ndarray) -> np.ndarray | None:
    """Per document: s(q, e) − max_{q'} s(q', e); None when there is no counterfactual row."""
    r = np.asarray(relevance, dtype=float)
    if r.ndim != 2 or r.shape[0] < 2:
        return None
    return r[0] - r[1:].max(axis=0)


def phi_causal(margins: np.ndarray, evidence: Sequence[int]) -> float:
    """φ_causal (Eq. 11) = mean over e ∈ E_j of the causal margin; 0 for empty evidence."""
    idx = np.unique(np.asarray(evidence, dtype=int))
    if idx.size == 0:
        return 0.0
    return float(np.asarray(margins, dtype=float)[idx].mean())


def reader_phi_causal(margin: float | None) -> float | None:
    """φ_causal from the reader's counterfactual test: tanh of support(a | q, E) − max_j support(a | q'_j, E).

    The margin is in nats per answer token (`haystack_cfrag.support.math.counterfactual_margin`);
    tanh keeps its sign and order and bounds it to (−1, 1), the scale of the bi-encoder's margins
    and of φ_coh, so that λ weighs the two criteria as it does with the bi-encoder's φ_causal.

    >>> reader_phi_causal(0.0), round(reader_phi_causal(1.0), 3), round(reader_phi_causal(-3.0), 3)
    (0.0, 0.762, -0.995)
    >>> reader_phi_causal(None) is None
    True
    """
    if margin is None or not math.isfinite(margin):
        return None
    return float(math.tanh(margin))


def phi_coherence(
    answer_doc_cosine: np.ndarray,
    query_relevance: np.ndarray,
    mentions: np.ndarray,
    evidence: Sequence[int],
    *,
    lambda1: float = 0.5,
    lambda2: float = 0.5,
) -> float:
    """φ_coh (Eq. 9–10) = mean over e ∈ E_j of λ1·cos(Enc(a), Enc(e)) + λ2·s(q, e)·Mention(a, e).

    The vectors are over all documents (one draft's row); `evidence` picks the columns.
    Evidence is taken as a set, like φ_causal, so that duplicated evidence changes nothing.
    """
    idx = np.unique(np.asarray(evidence, dtype=int))
    if idx.size == 0:
        return 0.0
    per_doc = lambda1 * np.asarray(answer_doc_cosine, dtype=float)[idx] + lambda2 * (
        np.asarray(query_relevance, dtype=float)[idx] * np.asarray(mentions, dtype=float)[idx]
    )
    return float(per_doc.mean())


def phi_confidence(token_logprobs: Sequence[float] | None) -> float | None:
    """φ_conf = exp(mean token log-probability); None when the generator gave none."""
    if not token_logprobs:
        return None
    vals = np.asarray(list(token_logprobs), dtype=float)
    vals = vals[np.isfinite(vals)]
    if vals.size == 0:
        return None
    return float(math.exp(min(0.0, float(vals.mean()))))


def phi_specificity(answer: str) -> float:
    """φ_spec = 1 − H(keyword distribution of a) / log |keywords of a|; 0 for ≤ 1 keyword."""
    p = keyword_distribution(answer)
    if p.size <= 1:
        return 0.0
    entropy = float(-(p * np.log(p)).sum())
    return min(1.0, max(0.0, 1.0 - entropy / math.log(p.size)))  # clipped against round-off


def default_weights(causal_weight: float) -> dict[str, float]:
    """Algorithm 1's weights: (1 − λ, λ, 0, 0) over coherence, causal, confidence, specificity."""
    return {"coherence": 1.0 - causal_weight, "causal": causal_weight, "confidence": 0.0, "specificity": 0.0}


def effective_weights(weights: dict[str, float], available: dict[str, bool]) -> dict[str, float]:
    """Weights with missing criteria removed and the rest renormalised to their original sum.

    If every weighted criterion is missing, all weights are 0 (Ψ = 0 for every draft).
    """
    total = sum(weights.values())
    kept = {k: (w if available.get(k, False) else 0.0) for k, w in weights.items()}
    kept_total = sum(kept.values())
    if kept_total <= 0:
        return {k: 0.0 for k in weights}
    return {k: w * total / kept_total for k, w in kept.items()}


def psi(scores: dict[str, float | None], weights: dict[str, float]) -> float:
    """Ψ = Σ_k w_k φ_k over the criteria present (weights already renormalised)."""
    return float(sum(w * (scores.get(k) or 0.0) for k, w in weights.items()))


def agreement(answers: list[str], best: int, threshold: float = 0.8) -> float:
    """Share of drafts whose answer agrees with draft `best` (itself included)."""
    if not answers:
        return 0.0
    return float(agreement_matrix(answers, threshold)[best].mean())


def summed_relevance(query_relevance: np.ndarray, groups: dict[str, Sequence[int]]) -> dict[str, float]:
    """Σ s(q, e) of each answer's supporting documents: how a volume-driven reader votes."""
    rel = np.asarray(query_relevance, dtype=float)
    return {name: float(rel[np.asarray(idx, dtype=int)].sum()) for name, idx in groups.items()}


def critical_causal_weight(coh_true: float, coh_spur: float, causal_true: float, causal_spur: float) -> float:
    """λ* at which Ψ_true = Ψ_spurious (Theorem 1); above it the causal answer wins.

    Ψ = (1 − λ)·φ_coh + λ·φ_causal. Returns 0 when the true draft already wins on coherence
    and 1 (never) when it does not win on causal discrimination either.
    """
    d_coh = coh_spur - coh_true
    d_causal = causal_true - causal_spur
    if d_coh <= 0:
        return 0.0
    if d_causal <= 0:
        return 1.0
    return d_coh / (d_coh + d_causal)


def mention_evidence(mentions: np.ndarray, fallback: Sequence[int], threshold: float = 0.5) -> list[int]:
    """E_j from where the answer is mentioned: columns with Mention(a_j, e) ≥ `threshold`, else `fallback`.

    App. G's key evidence without asking the model: the passages that name the answer.

    >>> mention_evidence(np.array([0.0, 1.0, 0.5]), [0])
    [1, 2]
    >>> mention_evidence(np.array([0.0, 0.2]), [0])
    [0]
    """
    picked = [int(i) for i in np.flatnonzero(np.asarray(mentions, dtype=float) >= threshold)]
    return picked or [int(i) for i in fallback]


def override_decision(
    psis: Sequence[float],
    causal: Sequence[float | None],
    agrees_with_baseline: Sequence[bool],
    baseline: int,
    margin: float,
) -> tuple[int, str, float | None]:
    """(winner, decision, Ψ gap) of the conservative override.

    The baseline draft (standard RAG's reading) keeps its answer unless the best-scoring
    draft that disagrees with it has Ψ at least `margin` above the baseline's *and* a higher
    φ_causal: then that challenger wins ("override"). Without φ_causal (no counterfactual
    survived) nothing can verify a challenger and the baseline stands. Agreement among
    challengers counts for nothing. The gap is Ψ(best challenger) − Ψ(baseline), None when
    every draft agrees with the baseline.

    >>> override_decision([0.50, 0.62, 0.40], [0.0, 0.1, 0.2], [True, False, False], baseline=0, margin=0.1)
    (1, 'override', 0.12)
    >>> override_decision([0.50, 0.62, 0.40], [0.2, 0.1, 0.2], [True, False, False], baseline=0, margin=0.1)
    (0, 'baseline', 0.12)
    >>> override_decision([0.50, 0.62], [None, None], [True, False], baseline=0, margin=0.1)
    (0, 'baseline', 0.12)
    """
    rivals = [j for j, agree in enumerate(agrees_with_baseline) if not agree and j != baseline]
    if not rivals:
        return baseline, "baseline", None
    best = max(rivals, key=lambda j: (psis[j], -j))
    gap = round(float(psis[best] - psis[baseline]), 12)
    base_causal, best_causal = causal[baseline], causal[best]
    stronger = base_causal is not None and best_causal is not None and best_causal > base_causal
    return (best, "override", gap) if gap >= margin and stronger else (baseline, "baseline", gap)


def duel_passages(
    candidates: Sequence[int],
    mentions: np.ndarray,
    relevance: np.ndarray,
    order_key: np.ndarray | None = None,
    threshold: float = 0.5,
    dating: np.ndarray | None = None,
) -> list[tuple[int, int]]:
    """One passage per candidate answer, for a volume-free re-reading: [(candidate, column)], decisive-first.

    For each candidate (a row of `mentions`, in the order given), the most relevant column
    (s(q, e)) that mentions its answer and was not taken by an earlier candidate. Candidates
    whose answer no free passage mentions get none. The pairs are ordered by descending
    `order_key` (the causal margin), else by relevance. However many passages name the trap
    answer, the duel shows one of them, so volume cannot outvote the decisive passage.
    With `dating` (how well each passage dates the question's period, or describes its namesake:
    `qualifiers.qualifying`; or a row per candidate answer, `qualifiers.answer_dating`), the
    passage that best dates the answer to that period is chosen first and leads the order:
    the factor that decides a time-qualified question is its period, not the topic's words.

    >>> m = np.array([[1, 1, 1, 0], [0, 0, 0, 1]])     # candidate 0 (the trap) is named 3 times
    >>> duel_passages([0, 1], m, np.array([0.9, 0.8, 0.7, 0.6]), np.array([-0.1, -0.2, -0.1, 0.2]))
    [(1, 3), (0, 0)]
    >>> duel_passages([0, 1], m, np.array([0.9, 0.8, 0.7, 0.6]), dating=np.array([0.0, 0.5, 0.0, 1.0]))
    [(1, 3), (0, 1)]
    """
    rel = np.asarray(relevance, dtype=float)
    date = per_answer(np.zeros(len(rel)) if dating is None else dating, np.shape(mentions))
    taken: set[int] = set()
    pairs: list[tuple[int, int]] = []
    for j in candidates:
        free = [i for i in np.flatnonzero(np.asarray(mentions[j], dtype=float) >= threshold) if int(i) not in taken]
        if free:
            best = int(max(free, key=lambda i: (date[j, i], rel[i], -i)))
            taken.add(best)
            pairs.append((int(j), best))
    key = rel if order_key is None else np.asarray(order_key, dtype=float)
    return sorted(pairs, key=lambda p: (-date[p[0], p[1]], -key[p[1]], p[1]))


def per_answer(dating: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """A dating as one row per answer (`shape`, that of the mention matrix): a row per document is every answer's.

    >>> per_answer(np.array([0.0, 1.0]), (2, 2)).tolist()
    [[0.0, 1.0], [0.0, 1.0]]
    """
    return np.broadcast_to(np.asarray(dating, dtype=float), shape)
