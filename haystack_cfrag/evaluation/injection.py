"""Adversarial distractor injection (paper 6.6): per question, the passages most similar to it
from *other* questions that do not contain any of its answers."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from haystack_cfrag.common.text import normalize_answer
from haystack_cfrag.common.vectors import cosine_matrix


def contains_answer(text: str, answers: Sequence[str]) -> bool:
    """Whether a normalised answer occurs in the normalised text as a whole-token phrase."""
    padded = f" {normalize_answer(text)} "
    return any(normalize_answer(a) and f" {normalize_answer(a)} " in padded for a in answers)


def select_distractors(
    question_embedding: Sequence[float],
    answers: Sequence[str],
    passages: Sequence[str],
    passage_embeddings: np.ndarray,
    passage_owners: Sequence[str],
    owner: str,
    n_inject: int,
) -> list[int]:
    """Indices of the n_inject passages most similar to the question among other questions'
    passages that contain none of its answers (yes/no answers exclude nothing)."""
    if n_inject <= 0:
        return []
    sims = cosine_matrix(np.asarray([question_embedding]), np.asarray(passage_embeddings))[0]
    order = np.argsort(-sims, kind="stable")
    real_answers = [a for a in answers if normalize_answer(a) not in ("yes", "no")]
    picked: list[int] = []
    for i in order:
        if passage_owners[i] == owner or contains_answer(passages[i], real_answers):
            continue
        picked.append(int(i))
        if len(picked) == n_inject:
            break
    return picked
