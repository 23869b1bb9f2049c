"""The support score's equations on hand-computed cases (haystack_cfrag.support.math)."""

import ast
import math
from pathlib import Path

import numpy as np
import pytest

from haystack_cfrag.adapters.llama_cpp_states import prefix_reuse
from haystack_cfrag.support import math as sm


def _imported(path):
    tree = ast.parse(Path(path).read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    return imported | {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}


def test_math_imports_no_haystack():
    from haystack_cfrag.common import logits  # noqa: PLC0415  (the logits' reading, pure too)

    pure = {"__future__", "math", "collections", "numpy"}
    assert {m.split(".")[0] for m in _imported(sm.__file__) - {"haystack_cfrag.common.logits"}} <= pure
    assert {m.split(".")[0] for m in _imported(logits.__file__)} <= pure


def test_shifted_logprobs_read_row_i_minus_1():
    """Token i's log-prob comes from the row after token i − 1: a one-row shift changes it."""
    logits = np.log(np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6], [0.5, 0.25, 0.25]]))
    ids = [0, 2, 1]
    got = sm.shifted_token_logprobs(logits, ids)
    assert np.allclose(np.exp(got), [0.1, 0.3])  # P(2 | 0) = row 0[2]; P(1 | 0, 2) = row 1[1]
    unshifted = [logits[1, 2], logits[2, 1]]  # the off-by-one an echo API can make
    assert not np.allclose(got, unshifted)


def test_shifted_logprobs_checks_shapes():
    with pytest.raises(ValueError, match="n × V"):
        sm.shifted_token_logprobs(np.zeros((2, 3)), [0, 1, 2])
    assert sm.shifted_token_logprobs(np.zeros((1, 3)), [0]).size == 0


def test_log_softmax_is_stable_and_normalised():
    out = sm.log_softmax(np.array([[1000.0, 1000.0, 999.0]]))
    assert np.isfinite(out).all() and math.isclose(np.exp(out).sum(), 1.0)
    assert math.isclose(out[0, 0], -math.log(2 + math.exp(-1)))


def test_answer_span_by_characters():
    text = "Q: who?\nA: Christian Bale"
    #        tokens: "Q:" " who?" "\n" "A:" " " "Christian" " Bale"
    offsets = [(0, 2), (2, 7), (7, 8), (8, 10), (10, 11), (11, 20), (20, 25)]
    assert "".join(text[s:e] for s, e in offsets) == text
    assert sm.answer_token_span(offsets, text.index("Christian"), len(text)) == (5, 7)
    assert sm.answer_token_span(offsets, text.index("Bale"), len(text)) == (6, 7)  # straddling " Bale" counts
    with pytest.raises(ValueError, match="no token overlaps"):
        sm.answer_token_span(offsets, 30, 35)
    with pytest.raises(ValueError, match="empty answer range"):
        sm.answer_token_span(offsets, 5, 5)


def test_answer_span_keeps_zero_width_tokens_inside():
    assert sm.answer_token_span([(0, 3), (3, 3), (3, 6)], 3, 6) == (1, 3)


def test_offsets_from_text_offsets():
    assert sm.offsets_from_text_offsets([0, 4, 4, 9], 12) == [(0, 4), (4, 4), (4, 9), (9, 12)]


def test_mean_logprob_is_per_token():
    assert math.isclose(sm.mean_logprob([math.log(0.5)] * 4), math.log(0.5))
    assert math.isclose(sm.mean_logprob([-1.0, -2.0, -6.0]), -3.0)
    with pytest.raises(ValueError, match="no answer tokens"):
        sm.mean_logprob([])
    with pytest.raises(ValueError, match="non-finite"):
        sm.mean_logprob([-1.0, float("nan")])


def test_margin_and_pmi():
    assert sm.counterfactual_margin(-0.4, [-1.0, -0.9, -3.0]) == pytest.approx(0.5)
    assert sm.counterfactual_margin(-2.0, [-0.5]) == pytest.approx(-1.5)  # evidence answers q' better
    assert sm.counterfactual_margin(-1.0, []) is None
    assert sm.evidence_pmi(-0.3, -2.3) == pytest.approx(2.0)


def test_calibrate_is_a_monotone_sigmoid():
    xs = [-50.0, -2.0, 0.0, 0.5, 3.0, 800.0]
    ys = [sm.calibrate(x) for x in xs]
    assert ys == sorted(ys) and 0.0 <= ys[0] and ys[-1] <= 1.0
    assert sm.calibrate(0.0) == 0.5
    assert sm.calibrate(1.0, scale=2.0, bias=-2.0) == 0.5
    assert math.isclose(sm.calibrate(math.log(3.0)), 0.75)


def test_option_orders_put_every_candidate_in_every_position():
    orders = sm.option_orders(4)
    assert len(orders) == 4
    for position in range(4):
        assert sorted(o[position] for o in orders) == [0, 1, 2, 3]
    assert sm.option_orders(4, max_orders=2) == orders[:2]
    assert sm.option_orders(0) == []
    with pytest.raises(ValueError):
        sm.option_orders(27)


def test_option_scores_cancel_a_position_bias():
    """Letter log-prob = bias[position] + preference[candidate]: the averaged scores keep only
    the preference differences, for any bias."""
    preference = np.array([0.0, 1.5, -0.7])
    bias = np.array([2.0, 0.3, -1.0])  # a strong pull towards option A
    orders = sm.option_orders(3)
    rows = [[bias[p] + preference[c] for p, c in enumerate(order)] for order in orders]
    scores = np.array(sm.option_scores(orders, rows))
    assert np.allclose(scores - scores[0], preference - preference[0])
    # one order alone is biased: candidate 0 in position A beats candidate 1
    single = sm.option_scores([orders[0]], [rows[0]])
    assert single[0] > single[1]


def test_option_scores_check_inputs():
    with pytest.raises(ValueError, match="orders but"):
        sm.option_scores([(0, 1)], [])
    with pytest.raises(ValueError, match="letter log-probs"):
        sm.option_scores([(0, 1)], [[0.0]])
    with pytest.raises(ValueError, match="at least one order"):
        sm.option_scores([(0, 2)], [[0.0, 0.0]])


def test_prefix_reuse():
    assert prefix_reuse([], [1, 2]) == 0
    assert prefix_reuse([1, 2, 3], [1, 2, 3, 4, 5]) == 3
    assert prefix_reuse([1, 2, 3], [1, 2, 3]) == 2
    assert prefix_reuse([1, 2, 3], [1, 2, 3], keep_last=0) == 3
    assert prefix_reuse([9, 2, 3], [1, 2, 3]) == 0
