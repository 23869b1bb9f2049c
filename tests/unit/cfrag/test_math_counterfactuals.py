import numpy as np
import pytest

from haystack_cfrag.cfrag.math import counterfactuals as cf


def test_info_score_hand_computed():
    # α = β = γ = 1/3; sim 0.8, Div 1.0, sim_domain 0.5 → (0.2 + 1.0 + 0.5)/3
    got = cf.info_scores(np.array([0.8]), np.array([1.0]), np.array([0.5]))
    assert got[0] == pytest.approx(1.7 / 3)


def test_validation_rules():
    sims = np.array([0.8, 0.6, 0.98, 0.8, 0.8])
    same_text = np.array([False, False, False, True, False])
    div = np.array([1.0, 1.0, 1.0, 1.0, 0.0])
    assert cf.validate_counterfactuals(sims, same_text, div).tolist() == [True, False, False, False, False]


def test_answer_divergence_and_domain_similarity():
    assert cf.answer_divergence("Christian Bale", "Heath Ledger") == 1.0
    assert cf.answer_divergence("Christian Bale", "Bale") == pytest.approx(0.5)
    assert cf.answer_divergence("", "Bale") == 1.0
    # content words {lead, actor, dark, knight} vs {played, villain, dark, knight}: 2/6
    assert cf.domain_similarity(
        "Who is the lead actor in The Dark Knight?", "Who played the villain in The Dark Knight?"
    ) == pytest.approx(2 / 6)


def test_select_top_keeps_only_valid_best_first():
    assert cf.select_top(np.array([0.1, 0.9, 0.5, 0.7]), np.array([True, False, True, True]), 2) == [3, 2]
    assert cf.select_top(np.array([0.1]), np.array([True]), 0) == []


def test_truncated_reply_keeps_complete_candidates():
    from haystack_cfrag.cfrag.math.replies import parse_counterfactual_reply

    reply = ('```json\n{"original_answer_hint": "Bale", "counterfactuals": [\n'
             '{"question": "Who played the villain?", "type": "role", "answer_hint": "Ledger"},\n'
             '{"question": "Who directed it?", "type": "categorical", "answer_hint": "Nol')
    hint, items = parse_counterfactual_reply(reply)
    assert hint == "Bale"
    assert [i["question"] for i in items] == ["Who played the villain?"]


def test_same_answer_hint_fails_validation():
    assert cf.answer_divergence("The lead actor is Christian Bale", "the lead actor is christian bale.") == 0.0
