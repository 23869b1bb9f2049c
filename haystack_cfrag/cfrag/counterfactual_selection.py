"""Choosing N counterfactual questions from candidates: V(q, q') then Info(q, q') (paper 4.1.1).

The reader's candidates are validated against the query (on topic, not a paraphrase, another expected answer)
and the N most informative distinct ones kept, as the expander's outputs.

>>> out = select_counterfactuals("Who directed Kong?", "", [{"question": "Who produced Kong?", "type": "role",
...     "answer_hint": ""}], None, 1, similarity_threshold=0.2, paraphrase_threshold=0.97,
...     info_weights=(1 / 3, 1 / 3, 1 / 3), component="Example")
>>> out["queries"], out["degradations"]
(['Who directed Kong?', 'Who produced Kong?'], [])
"""

from __future__ import annotations

from typing import Any

import numpy as np
from haystack import logging

from haystack_cfrag.cfrag import ranges
from haystack_cfrag.cfrag.math.counterfactuals import (
    answer_divergence,
    domain_similarity,
    info_scores,
    select_top,
    validate_counterfactuals,
)
from haystack_cfrag.common.plumbing import degradation
from haystack_cfrag.common.text import bag_of_words_matrix, normalize_answer
from haystack_cfrag.common.vectors import cosine_matrix

logger = logging.getLogger(__name__)


def check_selection(
    n_counterfactuals: int, similarity_threshold: float, paraphrase_threshold: float, info_weights: Any
) -> tuple[float, float, float]:
    """Check the parameters every counterfactual writer shares, in one line each; returns (α, β, γ) as floats.

    >>> check_selection(3, 0.5, 0.9, [1, 0, 0])
    (1.0, 0.0, 0.0)
    >>> check_selection(3, 0.5, 0.9, [0, 0, 0])
    Traceback (most recent call last):
    ...
    ValueError: 'info_weights' must be three non-negative numbers, not all zero, got [0, 0, 0].
    """
    ranges.check("n_counterfactuals", n_counterfactuals)
    ranges.check("similarity_threshold", similarity_threshold)
    ranges.check("paraphrase_threshold", paraphrase_threshold)
    weights = [float(w) for w in info_weights]
    if len(weights) != 3 or any(w < 0 for w in weights) or sum(weights) == 0:
        raise ValueError(f"'info_weights' must be three non-negative numbers, not all zero, got {info_weights!r}.")
    alpha, beta, gamma = weights
    return alpha, beta, gamma


def select_counterfactuals(
    query: str,
    hint: str,
    candidates: list[dict[str, str]],
    embeddings: np.ndarray | None,
    n: int,
    *,
    similarity_threshold: float,
    paraphrase_threshold: float,
    info_weights: tuple[float, float, float],
    component: str,
    empty_reason: str = "reply held no usable counterfactual",
) -> dict[str, Any]:
    """The component outputs for the N best valid candidates (a degradation when fewer are kept).

    :param hint: the query's expected-answer hint ("" when unknown: every candidate then diverges).
    :param candidates: dicts with "question", "type", "answer_hint".
    :param embeddings: the query's then each candidate's embedding (None = bag-of-words vectors).
    :param empty_reason: the degradation's reason when there is no candidate at all.
    """
    if not candidates:
        logger.warning("{component}: {reason}; continuing with the original query only", component=component,
                       reason=empty_reason)
        return output(query, [], [degradation("counterfactuals", empty_reason)])
    texts = [query] + [c["question"] for c in candidates]
    if embeddings is None:
        embeddings = bag_of_words_matrix(texts)
    sims = cosine_matrix(embeddings[:1], embeddings[1:])[0]
    same_text = np.array([normalize_answer(c["question"]) == normalize_answer(query) for c in candidates])
    div = np.array([answer_divergence(hint, c["answer_hint"]) for c in candidates])
    dom = np.array([domain_similarity(query, c["question"]) for c in candidates])
    valid = validate_counterfactuals(sims, same_text, div, similarity_threshold=similarity_threshold,
                                     paraphrase_threshold=paraphrase_threshold)
    info = info_scores(sims, div, dom, info_weights)
    chosen = distinct(select_top(info, valid, len(candidates)), embeddings[1:], same_as_earlier(candidates),
                      paraphrase_threshold)[:n]
    degradations = []
    if len(chosen) < n:
        degradations.append(degradation("counterfactuals", "too few candidates passed validation", kept=len(chosen),
                                        asked=n, candidates=len(candidates)))
        logger.warning("{component}: {kept} of {n} counterfactuals passed validation ({total} candidates)",
                       component=component, kept=len(chosen), n=n, total=len(candidates))
    counterfactuals = [
        {"text": candidates[i]["question"], "type": candidates[i]["type"], "answer_hint": candidates[i]["answer_hint"],
         "similarity": float(sims[i]), "info": float(info[i])}
        for i in chosen
    ]
    return output(query, counterfactuals, degradations)


def same_as_earlier(candidates: list[dict[str, str]]) -> list[bool]:
    """Per candidate: whether an earlier candidate has the same normalised text."""
    seen: set[str] = set()
    out = []
    for c in candidates:
        key = normalize_answer(c["question"])
        out.append(key in seen)
        seen.add(key)
    return out


def distinct(order: list[int], embeddings: np.ndarray, repeated: list[bool], threshold: float) -> list[int]:
    """`order` without repeated texts and without candidates whose cosine to a kept one is ≥ `threshold`."""
    sims = cosine_matrix(embeddings, embeddings)
    kept: list[int] = []
    for i in order:
        if not repeated[i] and all(sims[i, j] < threshold for j in kept):
            kept.append(i)
    return kept


def output(query: str, counterfactuals: list[dict[str, Any]], degradations: list[dict[str, Any]]) -> dict[str, Any]:
    """The expander's outputs: `queries` (the original first), `counterfactuals`, `degradations`."""
    return {
        "queries": [query] + [c["text"] for c in counterfactuals],
        "counterfactuals": counterfactuals,
        "degradations": degradations,
    }


__all__ = ["check_selection", "distinct", "output", "same_as_earlier", "select_counterfactuals"]
