"""Counterfactual validation V(q, q') and selection by Info(q, q') (paper 4.1.1, App. E): sim is the encoder's
cosine, Div_ans 1 − token-IoU of the answer hints, sim_domain the token-IoU of the content words (not sim, or
Info's first and last terms would cancel)."""

from __future__ import annotations

import numpy as np

from haystack_cfrag.common.text import answers_agree, content_words, normalize_answer, token_iou

TRANSFORMATION_TYPES = ("role", "temporal", "entity", "categorical", "scope")


def domain_similarity(query: str, candidate: str) -> float:
    """Jaccard overlap of the content words of two questions, in [0, 1]."""
    a, b = set(content_words(query)), set(content_words(candidate))
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def answer_divergence(hint: str, other_hint: str) -> float:
    """Div_ans = 1 − token-IoU of two answer hints; 1.0 when either is missing, 0 when they agree as answers."""
    if not normalize_answer(hint) or not normalize_answer(other_hint):
        return 1.0
    if answers_agree(hint, other_hint):
        return 0.0
    return 1.0 - token_iou(hint, other_hint)


def validate_counterfactuals(
    similarities: np.ndarray,
    is_paraphrase_text: np.ndarray,
    answer_divergences: np.ndarray,
    *,
    similarity_threshold: float = 0.7,
    paraphrase_threshold: float = 0.97,
) -> np.ndarray:
    """V(q, q') as a mask over the candidates: on topic (sim > θ_sim), not a paraphrase, another answer."""
    sims = np.asarray(similarities, dtype=float)
    return (
        (sims > similarity_threshold)
        & (sims < paraphrase_threshold)
        & ~np.asarray(is_paraphrase_text, dtype=bool)
        & (np.asarray(answer_divergences, dtype=float) > 0.0)
    )


def info_scores(
    similarities: np.ndarray,
    answer_divergences: np.ndarray,
    domain_similarities: np.ndarray,
    weights: tuple[float, float, float] = (1 / 3, 1 / 3, 1 / 3),
) -> np.ndarray:
    """Info(q, q') = α(1 − sim) + β·Div_ans + γ·sim_domain, vectorised over candidates."""
    alpha, beta, gamma = weights
    return (
        alpha * (1.0 - np.asarray(similarities, dtype=float))
        + beta * np.asarray(answer_divergences, dtype=float)
        + gamma * np.asarray(domain_similarities, dtype=float)
    )


def select_top(scores: np.ndarray, valid: np.ndarray, n: int) -> list[int]:
    """Indices of the n highest-scoring valid candidates, best first (stable on ties)."""
    scores = np.asarray(scores, dtype=float)
    idx = np.flatnonzero(np.asarray(valid, dtype=bool))
    order = idx[np.argsort(-scores[idx], kind="stable")]
    return [int(i) for i in order[: max(0, n)]]
