"""Near-duplicate removal (Eq. 4–5) and the cheap quality heuristic Q(e)."""

from __future__ import annotations

import re

import numpy as np

from haystack_cfrag.common.vectors import l2_normalize

_BOILERPLATE = re.compile(
    r"(cookie|all rights reserved|click here|subscribe|sign up|log ?in|terms of (use|service)|"
    r"privacy policy|javascript|404|page not found|advertisement)",
    re.IGNORECASE,
)


def greedy_dedup(embeddings: np.ndarray, threshold: float = 0.95) -> list[int]:
    """Indices kept by greedy near-duplicate removal over rows in relevance order: a row whose cosine to a kept
    row exceeds `threshold` is dropped (Eq. 4: one of a pair survives)."""
    emb = l2_normalize(np.asarray(embeddings, dtype=float))
    n = emb.shape[0] if emb.ndim == 2 else 0
    if n == 0:
        return []
    sims = emb @ emb.T
    alive = np.ones(n, dtype=bool)
    kept: list[int] = []
    for i in range(n):
        if not alive[i]:
            continue
        kept.append(i)
        alive[i + 1 :] &= ~(sims[i, i + 1 :] > threshold)
    return kept


def quality_score(text: str | None, *, min_words: int = 5) -> float:
    """Q(e) in [0, 1]: share of alphabetic words, 0 below `min_words`, halved for boilerplate."""
    if not text:
        return 0.0
    words = text.split()
    if len(words) < min_words:
        return 0.0
    alphabetic = sum(1 for w in words if any(ch.isalpha() for ch in w))
    score = alphabetic / len(words)
    if _BOILERPLATE.search(text) and len(words) < 40:
        score *= 0.5
    return score
