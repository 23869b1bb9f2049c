"""The reader's support score, pure: token alignment, length normalisation, margins, PMI, options.

support(a | q, E) = mean over a's tokens of log P(token | prompt(q, E), previous tokens of a):
the generator's own log-probability of a *given* answer a, read after a prompt that shows the
evidence E and the question q, divided by the number of a's tokens. Everything here is numpy
and the standard library (no Haystack): the backends (`support.backends`) read the numbers
from a model, the scorer (`support.scorer`) calls these functions.

Conventions: log-probabilities are natural logs; a "span" is a half-open token index range
(start, end); row i of a logits matrix is the model's output *after* reading token i, so it
predicts token i + 1 (the off-by-one every echo/prompt-log-prob API must get right).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise log-softmax in float64 (stable: the row maximum is subtracted first).

    >>> np.round(log_softmax(np.array([[0.0, 0.0]])), 4).tolist()
    [[-0.6931, -0.6931]]
    """
    x = np.asarray(logits, dtype=np.float64)
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def shifted_token_logprobs(logits: np.ndarray, token_ids: Sequence[int]) -> np.ndarray:
    """log P(token_i | tokens_<i) for i = 1..n-1, read from row i − 1 of the logits (n × V).

    Token 0 has no prediction, so the result has n − 1 entries: entry k is token k + 1's
    log-probability. This is the alignment an echo API must reproduce (llama-cpp-python #1983
    reports an off-by-one in `echo=True` log-probs).

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


def token_read(logits_row: np.ndarray, token_id: int) -> tuple[float, float, int]:
    """One answer position read off the reader's logits: (log P(token), top-1 − top-2 margin, rank).

    The margin is the gap between the reader's two most probable next tokens in nats, whatever the
    answer's token is (TARG's reading of a reader's indecision); the rank counts the tokens the reader
    found more probable than the answer's (0: the answer's token is its first choice).

    >>> lp, margin, rank = token_read(np.log(np.array([0.2, 0.5, 0.3])), 2)
    >>> round(math.exp(lp), 3), round(margin, 3), rank
    (0.3, 0.511, 1)
    """
    row = log_softmax(np.asarray(logits_row, dtype=np.float64)[None, :])[0]
    top2 = np.partition(row, -2)[-2:] if row.size > 1 else np.array([row[0], -np.inf])
    value = row[int(token_id)]
    return float(value), float(top2.max() - top2.min()), int((row > value).sum())


def answer_token_span(
    offsets: Sequence[tuple[int, int]], answer_start: int, answer_end: int
) -> tuple[int, int]:
    """The half-open token span (i, j) of the tokens that overlap characters [answer_start, answer_end).

    `offsets` are each token's (start, end) characters in the scored text (a tokenizer's offset
    mapping, or an echo API's `text_offset` with each token's length). A token that straddles
    the boundary (part prompt, part answer) counts as the answer's: its log-probability is the
    nearest one to the answer's first characters. Zero-width tokens (special tokens) inside
    the answer's range are kept; none overlapping raises ValueError.

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
    """(start, end) per token from start offsets only (an OpenAI echo reply's `text_offset`).

    Each token ends where the next starts; the last ends at `text_length`.

    >>> offsets_from_text_offsets([0, 9, 10], 19)
    [(0, 9), (9, 10), (10, 19)]
    """
    starts = [int(s) for s in text_offsets]
    ends = starts[1:] + [int(text_length)]
    return [(s, max(s, e)) for s, e in zip(starts, ends, strict=True)]


def mean_logprob(token_logprobs: Sequence[float]) -> float:
    """Length normalisation: the mean log-probability per answer token (support(a | q, E)).

    Raises ValueError on an empty answer or a non-finite value (a backend that gave nothing
    must not read as a certain answer, log-prob 0).

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
    """The reader's counterfactual test: support(a | q, E) − max_j support(a | q'_j, E).

    Positive: the evidence makes a more likely for q than for any counterfactual (decisive);
    near zero or negative: the evidence makes a as likely for some q' (correlated). None when
    there is no counterfactual to contrast with.

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

    How much the evidence, rather than the reader's prior, makes a the answer to q.

    >>> evidence_pmi(-0.25, -2.0)
    1.75
    """
    return float(support_with) - float(support_without)


def calibrate(value: float, scale: float = 1.0, bias: float = 0.0) -> float:
    """A support value mapped to [0, 1]: sigmoid(scale · value + bias).

    With the defaults on a PMI: 0.5 when the evidence changes nothing, above 0.5 when it makes
    the answer more likely (sigmoid(1) ≈ 0.73 for e times more likely per token). On a mean
    log-prob (≤ 0) it reads as an odds: sigmoid(log p) = p / (1 + p). Uncalibrated against
    labels: fit `scale` and `bias` on held-out items (Platt scaling) before trusting it as a
    probability.

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
    """Orders in which to list n candidates as options: the n cyclic rotations.

    Each candidate takes every position exactly once over the n rotations, so a bias towards a
    position (the first option, the letter A) adds the same to every candidate and cancels in
    the average. `max_orders` keeps the first rotations only (then the cancellation is partial).

    >>> option_orders(3)
    [(0, 1, 2), (1, 2, 0), (2, 0, 1)]
    """
    if n < 0 or n > len(OPTION_LETTERS):
        raise ValueError(f"between 0 and {len(OPTION_LETTERS)} options, got {n}.")
    base = list(range(n))
    orders = [tuple(base[k:] + base[:k]) for k in range(n)]
    return orders[:max_orders] if max_orders is not None else orders


def option_scores(orders: Sequence[Sequence[int]], letter_logprobs: Sequence[Sequence[float]]) -> list[float]:
    """Per candidate: its option letter's log-probability, renormalised over the options shown
    and averaged over the orders (a multiple-choice reading that cancels position bias).

    `orders[k][p]` is the candidate listed at position p in order k; `letter_logprobs[k][p]` is
    log P(letter p | the prompt listing order k). Each order's letters are renormalised with a
    log-softmax (the reader's choice among the options shown), then each candidate's value is
    averaged over the orders where it appears.

    Each order's normaliser is shared by all candidates and each candidate appears once per
    rotation, so the differences between candidates are free of any position bias:

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


def prefix_reuse(cached: Sequence[int], tokens: Sequence[int], keep_last: int = 1) -> int:
    """Tokens of `tokens` whose state a model can keep from `cached` (the longest common prefix),
    leaving at least `keep_last` tokens to evaluate so that fresh logits exist for them.

    llama.cpp keeps its KV cache for the longest common prefix of consecutive evaluations; the
    scorer puts the evidence first so that consecutive scorings share it.

    >>> prefix_reuse([1, 2, 3, 4], [1, 2, 3, 9, 9])
    3
    >>> prefix_reuse([1, 2, 3], [1, 2, 3])       # all cached: the last token is evaluated again
    2
    """
    n = 0
    for a, b in zip(cached, tokens):
        if a != b:
            break
        n += 1
    return max(0, min(n, len(tokens) - keep_last))


__all__ = [
    "OPTION_LETTERS",
    "answer_token_span",
    "calibrate",
    "counterfactual_margin",
    "evidence_pmi",
    "log_softmax",
    "mean_logprob",
    "offsets_from_text_offsets",
    "option_orders",
    "option_scores",
    "prefix_reuse",
    "shifted_token_logprobs",
    "token_logprob",
]
