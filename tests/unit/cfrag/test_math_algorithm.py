"""Algorithm 1 as a pure function (`haystack_cfrag.cfrag.math.algorithm`): decisions over small matrices."""

from dataclasses import FrozenInstanceError, replace

import numpy as np
import pytest

from haystack_cfrag.cfrag.math import arbitration as arb
from haystack_cfrag.cfrag.math.algorithm import Rules, arbitrate, settle_duel

# three documents: e0 names Bale and answers the question; e1, e2 name Ledger and answer the counterfactual
R = np.array([[0.9, 0.8, 0.7], [0.2, 0.9, 0.8]])
COSINE = np.array([[0.6, 0.1, 0.1], [0.1, 0.7, 0.7]])
MENTIONS = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]])
ANSWERS = ["Christian Bale", "Heath Ledger"]
EVIDENCE = [[0], [1, 2]]
PAPER = Rules(weights=arb.default_weights(0.4))


def test_scores_are_the_core_criteria_and_psi_their_weighted_sum():
    a = arbitrate(ANSWERS, R, COSINE, MENTIONS, EVIDENCE, PAPER)
    for j, scores in enumerate(a.scores):
        assert scores["coherence"] == arb.phi_coherence(COSINE[j], R[0], MENTIONS[j], EVIDENCE[j])
        assert scores["causal"] == arb.phi_causal(arb.causal_margins(R), EVIDENCE[j])
        assert scores["confidence"] is None and scores["specificity"] == arb.phi_specificity(ANSWERS[j])
        assert a.psi[j] == arb.psi(scores, a.weights)
    assert a.agreements == (0.5, 0.5) and a.best == 0 and a.override is None
    with pytest.raises(FrozenInstanceError):
        a.decision = "consensus"


def test_equal_psi_puts_the_lower_draft_number_first():
    inputs = (["A", "B"], R[:, :1], np.full((2, 1), 0.5), np.zeros((2, 1)), [[0], [0]], PAPER)
    same = arbitrate(*inputs)
    assert same.psi[0] == same.psi[1] and same.order == (0, 1)
    assert arbitrate(*inputs, indices=[7, 3]).order == (1, 0)


def test_missing_criteria_are_renormalised_away():
    a = arbitrate(ANSWERS, R[:1], COSINE, MENTIONS, EVIDENCE, PAPER, token_logprobs=[[-0.1], None])
    assert a.margins is None and all(s["causal"] is None for s in a.scores)
    assert a.weights["causal"] == 0.0 and a.weights["coherence"] == pytest.approx(1.0)
    assert a.scores[0]["confidence"] == pytest.approx(np.exp(-0.1)) and a.scores[1]["confidence"] is None


def test_consensus_synthesis_and_best_score():
    agreeing = ["Christian Bale", "christian bale"]
    assert arbitrate(agreeing, R, COSINE, MENTIONS, EVIDENCE, PAPER).decision == "consensus"
    # a consensus on causally weak evidence does not end arbitration when consensus_min_causal asks more
    strict = replace(PAPER, consensus_min_causal=0.9)
    assert arbitrate(agreeing, R, COSINE, MENTIONS, EVIDENCE, strict).decision == "best_score"
    assert arbitrate(agreeing, R, COSINE, MENTIONS, EVIDENCE, replace(strict, synthesis=True)).decision == "synthesis"
    assert arbitrate(ANSWERS, R, COSINE, MENTIONS, EVIDENCE, replace(PAPER, synthesis=True)).decision == "synthesis"


def test_the_override_puts_its_winner_first():
    rules = replace(PAPER, override_margin=0.1)
    a = arbitrate(ANSWERS, R, COSINE, MENTIONS, EVIDENCE, rules, baseline=1)
    assert (a.decision, a.order, a.override.winner, a.override.baseline) == ("override", (0, 1), 0, 1)
    assert a.override.gap == pytest.approx(a.psi[0] - a.psi[1]) and a.override.duel == ()
    kept = arbitrate(ANSWERS, R, COSINE, MENTIONS, EVIDENCE, replace(rules, override_margin=0.5), baseline=1)
    assert (kept.decision, kept.order) == ("baseline", (1, 0))
    # without a baseline the margin is not used: the paper's path
    assert arbitrate(ANSWERS, R, COSINE, MENTIONS, EVIDENCE, rules).override is None


def test_no_duel_against_a_louder_challenger():
    rules = replace(PAPER, override_margin=1.0, duel=True)
    a = arbitrate(ANSWERS, R, COSINE, MENTIONS, EVIDENCE, rules, baseline=0)   # Ledger is named twice, Bale once
    assert a.decision == "baseline" and a.override.duel == ()


def test_a_duel_is_settled_by_the_answer_it_names():
    rules = replace(PAPER, override_margin=1.0, duel=True)
    evidence = [list(e) for e in EVIDENCE]
    duel = arbitrate(ANSWERS, R, COSINE, MENTIONS, evidence, rules, baseline=1)
    assert evidence == EVIDENCE   # inputs are left alone
    assert duel.decision == "duel" and duel.order == (1, 0) and duel.override.duel == ((0, 0), (1, 1))
    won = settle_duel(duel, "Bale", ANSWERS, threshold=0.5)
    assert (won.decision, won.order) == ("override", (0, 1))
    assert (won.override.duel_pick, won.override.duel_answer) == (0, "Bale")
    stood = settle_duel(duel, "Heath Ledger", ANSWERS)
    assert (stood.decision, stood.order, stood.override.duel_winner) == ("baseline", (1, 0), 1)
    for named in ("", "Gary Oldman"):   # names no candidate: the margin rule decides
        none = settle_duel(duel, named, ANSWERS)
        assert (none.decision, none.order, none.override.duel_pick, none.override.duel_winner) == ("baseline", (1, 0),
                                                                                                 None, 1)
    assert duel.decision == "duel"   # settling returns a new arbitration
    with pytest.raises(ValueError, match="duel"):
        settle_duel(won, "Bale", ANSWERS)
