"""A reader's logits read, pure: the log-softmax, and one token's log-probability, top-1 − top-2 gap and rank (what the
support scorer reads at each answer token, and what a reader keeps of the tokens it writes: `adapters.token_reads`)."""

from __future__ import annotations

import math  # noqa: F401  (the doctests')

import numpy as np


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise log-softmax in float64 (stable: the row maximum is subtracted first).

    >>> np.round(log_softmax(np.array([[0.0, 0.0]])), 4).tolist()
    [[-0.6931, -0.6931]]
    """
    x = np.asarray(logits, dtype=np.float64)
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def token_read(logits_row: np.ndarray, token_id: int) -> tuple[float, float, int]:
    """One answer position read off the logits: (log P(token), the top-1 − top-2 gap in nats, the token's rank:
    0 when it is the reader's first choice).

    >>> lp, margin, rank = token_read(np.log(np.array([0.2, 0.5, 0.3])), 2)
    >>> round(math.exp(lp), 3), round(margin, 3), rank
    (0.3, 0.511, 1)
    """
    row = log_softmax(np.asarray(logits_row, dtype=np.float64)[None, :])[0]
    top2 = np.partition(row, -2)[-2:] if row.size > 1 else np.array([row[0], -np.inf])
    value = row[int(token_id)]
    return float(value), float(top2.max() - top2.min()), int((row > value).sum())


__all__ = ["log_softmax", "token_read"]
