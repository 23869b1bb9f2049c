"""The reader's support score, pure: support(a | q, E) = mean over a's tokens of log P(token | prompt(q, E), a's
earlier tokens). Natural logs; a span is a half-open token range; logits row i predicts token i + 1."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from haystack_cfrag.common.logits import log_softmax, token_read


def shifted_token_logprobs(logits: np.ndarray, token_ids: Sequence[int]) -> np.ndarray:
    """log P(token_i | tokens_<i) for i = 1..n-1, read from row i − 1 of the logits (n × V): n − 1 entries.

    >>> logits = np.log(np.array([[0.5, 0.25, 0.25], [0.1, 0.1, 0.8], [1/3, 1/3, 1/3]]))
    >>> np.round(np.exp(shifted_token_logprobs(logits, [0, 1, 2])), 3).tolist()   # P(1|0), P(2|0,1)
    [0.25, 0.8]
    """
    ids = np.asarray(token_ids, dtype=int)
    x = np.asarray(logits, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] != ids.size:
        raise ValueError(f"logits must be n × V with n = {ids.size} tokens, got shape {x.shape}.")
    if ids.size < 2:
        return np.zeros(0)
    lp = log_softmax(x[:-1])
    return lp[np.arange(ids.size - 1), ids[1:]]


def token_logprob(logits_row: np.ndarray, token_id: int) -> float:
    """log P(token_id) under one row of logits (the output after the previous token).

    >>> round(math.exp(token_logprob(np.log(np.array([0.2, 0.8])), 1)), 3)
    0.8
    """
    return float(log_softmax(np.asarray(logits_row, dtype=np.float64)[None, :])[0, int(token_id)])


def answer_token_span(
    offsets: Sequence[tuple[int, int]], answer_start: int, answer_end: int
) -> tuple[int, int]:
    """The half-open span (i, j) of the tokens (by their character `offsets`) that overlap [answer_start,
    answer_end); a straddling token counts as the answer's; none overlapping raises ValueError.

    >>> offsets = [(0, 9), (9, 10), (10, 19), (19, 24)]      # "Question:" " " "Christian" " Bale"
    >>> answer_token_span(offsets, 10, 24)
    (2, 4)
    >>> answer_token_span([(0, 5), (5, 12)], 8, 12)           # the answer starts inside token 1
    (1, 2)
    """
    if answer_end <= answer_start:
        raise ValueError(f"empty answer range [{answer_start}, {answer_end}).")
    hits = [
        i
        for i, (s, e) in enumerate(offsets)
        if (s < answer_end and e > answer_start) or (s == e and answer_start <= s < answer_end)
    ]
    if not hits:
        raise ValueError(f"no token overlaps the answer's characters [{answer_start}, {answer_end}).")
    return hits[0], hits[-1] + 1


def offsets_from_text_offsets(text_offsets: Sequence[int], text_length: int) -> list[tuple[int, int]]:
    """(start, end) per token from start offsets only (an echo reply's `text_offset`; the last ends at `text_length`).

    >>> offsets_from_text_offsets([0, 9, 10], 19)
    [(0, 9), (9, 10), (10, 19)]
    """
    starts = [int(s) for s in text_offsets]
    ends = starts[1:] + [int(text_length)]
    return [(s, max(s, e)) for s, e in zip(starts, ends, strict=True)]


def mean_logprob(token_logprobs: Sequence[float]) -> float:
    """The mean log-probability per answer token (support(a | q, E)); ValueError when empty or not finite.

    >>> mean_logprob([math.log(0.5), math.log(0.125)])   # (−0.693 − 2.079) / 2
    -1.3862943611198906
    """
    values = [float(v) for v in token_logprobs]
    if not values:
        raise ValueError("no answer tokens to score.")
    if not all(math.isfinite(v) for v in values):
        raise ValueError(f"non-finite token log-probability in {values}.")
    return sum(values) / len(values)


def counterfactual_margin(support_q: float, supports_cf: Sequence[float]) -> float | None:
    """support(a | q, E) − max_j support(a | q'_j, E): positive when the evidence is decisive for q; None
    without counterfactuals.

    >>> counterfactual_margin(-0.5, [-2.0, -1.0])
    0.5
    >>> counterfactual_margin(-0.5, []) is None
    True
    """
    cf = [float(v) for v in supports_cf]
    if not cf:
        return None
    return float(support_q) - max(cf)


def evidence_pmi(support_with: float, support_without: float) -> float:
    """The evidence-erased contrast (PMI): support(a | q, E) − support(a | q, ∅).

    >>> evidence_pmi(-0.25, -2.0)
    1.75
    """
    return float(support_with) - float(support_without)


def calibrate(value: float, scale: float = 1.0, bias: float = 0.0) -> float:
    """A support value mapped to [0, 1]: sigmoid(scale · value + bias) (fit both on held-out items first).

    >>> calibrate(0.0), round(calibrate(1.0), 4), round(calibrate(math.log(0.5)), 4)
    (0.5, 0.7311, 0.3333)
    """
    z = scale * float(value) + bias
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


OPTION_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def option_orders(n: int, max_orders: int | None = None) -> list[tuple[int, ...]]:
    """The n cyclic rotations of n options (each candidate at each position once: a position bias cancels);
    `max_orders` keeps the first ones.

    >>> option_orders(3)
    [(0, 1, 2), (1, 2, 0), (2, 0, 1)]
    """
    if n < 0 or n > len(OPTION_LETTERS):
        raise ValueError(f"between 0 and {len(OPTION_LETTERS)} options, got {n}.")
    base = list(range(n))
    orders = [tuple(base[k:] + base[:k]) for k in range(n)]
    return orders[:max_orders] if max_orders is not None else orders


def option_scores(orders: Sequence[Sequence[int]], letter_logprobs: Sequence[Sequence[float]]) -> list[float]:
    """Per candidate: its option letter's log-probability, log-softmaxed over each order's options and averaged
    over the orders (`orders[k][p]` is listed at p; `letter_logprobs[k][p]` its letter's): no position bias.

    >>> # a reader that favours option A by a factor 3 and candidate 1 over 0 by a factor 2
    >>> orders = [(0, 1), (1, 0)]
    >>> lp = [[math.log(3 * 1), math.log(2)], [math.log(3 * 2), math.log(1)]]
    >>> s = option_scores(orders, lp)
    >>> round(math.exp(s[1] - s[0]), 6)       # the preference, without A's factor 3
    2.0
    """
    if len(orders) != len(letter_logprobs):
        raise ValueError(f"{len(orders)} orders but {len(letter_logprobs)} rows of letter log-probs.")
    n = 1 + max((c for order in orders for c in order), default=-1)
    sums, counts = np.zeros(n), np.zeros(n)
    for order, row in zip(orders, letter_logprobs, strict=True):
        if len(order) != len(row):
            raise ValueError(f"an order of {len(order)} options has {len(row)} letter log-probs.")
        normalised = log_softmax(np.asarray(row, dtype=np.float64)[None, :])[0]
        for position, candidate in enumerate(order):
            sums[candidate] += normalised[position]
            counts[candidate] += 1
    if np.any(counts == 0):
        raise ValueError("every candidate must appear in at least one order.")
    return (sums / counts).tolist()


__all__ = ["OPTION_LETTERS", "answer_token_span", "calibrate", "counterfactual_margin", "evidence_pmi",
           "log_softmax", "mean_logprob", "offsets_from_text_offsets", "option_orders", "option_scores",
           "shifted_token_logprobs", "token_logprob", "token_read"]
