"""CDF-RAG's checks on hand-built cases: claims, S_hall, S_causal, the τ/δ decisions, the loop bound."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from haystack_cfrag.cdf_rag.math.causal_check import (
    NEUTRAL,
    RESPECTED,
    TAU,
    VIOLATED,
    CausalStatement,
    causal_consistency,
    causal_statements,
    edge_verdict,
    names,
    question_statements,
    should_regenerate,
)
from haystack_cfrag.cdf_rag.math.claims import (
    DELTA,
    hallucination_score,
    should_rewrite,
    split_claims,
    supported_claims,
)
from haystack_cfrag.cdf_rag.math.feedback_loop import ACCEPT, REGENERATE, REWRITE, STOP, LoopState, next_step

# ---------------------------------------------------------------- claims


def test_a_short_entity_answer_is_one_claim():
    assert split_claims("Christian Bale") == ["Christian Bale"]
    assert split_claims("Answer: J. K. Rowling") == ["J. K. Rowling"]
    assert split_claims("14 July 1789.") == ["14 July 1789."]


def test_sentences_lines_and_semicolons_split_abbreviations_and_initials_do_not():
    text = "Heavy rain fell in May. Dr. Smith saw the river rise; the U.S. Army came.\n- Crops were lost."
    assert split_claims(text) == [
        "Heavy rain fell in May.",
        "Dr. Smith saw the river rise",
        "the U.S. Army came.",
        "Crops were lost.",
    ]
    # "and" joins a clause, it does not split one (Tom and Jerry are one claim's subject)
    assert split_claims("Tom and Jerry chase each other in every short film they appear in.") == [
        "Tom and Jerry chase each other in every short film they appear in."
    ]


def test_empty_and_punctuation_only_answers_have_no_claim():
    assert split_claims("") == []
    assert split_claims("  \n ") == []
    assert split_claims("...") == []
    assert split_claims(None) == []


def test_claims_past_the_cap_are_joined_into_the_last():
    text = " ".join(f"Fact number {i} holds here." for i in range(20))
    claims = split_claims(text, max_claims=5)
    assert len(claims) == 5
    assert claims[:4] == [f"Fact number {i} holds here." for i in range(4)]
    assert claims[4].startswith("Fact number 4") and claims[4].endswith("Fact number 19 holds here.")
    with pytest.raises(ValueError, match="max_claims"):
        split_claims("x", max_claims=0)


# ---------------------------------------------------------------- S_hall


def test_s_hall_is_the_share_of_claims_below_the_support_threshold():
    assert hallucination_score([-0.1, -0.2], -1.0) == 0.0
    assert hallucination_score([-0.1, -3.0, -0.5, -2.0], -1.0) == 0.5
    assert hallucination_score([-5.0, -math.inf], -1.0) == 1.0
    assert hallucination_score([-1.0], -1.0) == 0.0  # at the threshold a claim is supported
    assert hallucination_score([], -1.0) is None  # no claim: nothing measured
    assert supported_claims([-0.5, -1.5], -1.0) == [True, False]


def test_a_nan_support_is_refused_not_counted():
    with pytest.raises(ValueError, match="log-probability"):
        hallucination_score([-0.1, float("nan")])
    with pytest.raises(ValueError, match="log-probability"):
        hallucination_score([None])


def test_rewrite_fires_strictly_above_delta():
    assert not should_rewrite(0.5, 0.5)  # exactly δ: no rewrite
    assert should_rewrite(0.5 + 1e-9, 0.5)
    assert not should_rewrite(0.0, 0.0)
    assert should_rewrite(1.0, 0.99)
    assert not should_rewrite(None, 0.0)
    # through the score: 2 of 4 unsupported is exactly 0.5
    assert not should_rewrite(hallucination_score([-0.1, -3.0, -0.5, -2.0], -1.0), DELTA)
    assert should_rewrite(hallucination_score([-0.1, -3.0, -2.5, -2.0], -1.0), DELTA)


# ---------------------------------------------------------------- S_causal


def test_statements_read_forward_backward_and_negated_connectives():
    assert causal_statements("Smoking causes lung cancer.") == [CausalStatement("Smoking", "lung cancer")]
    assert causal_statements("The flood was caused by heavy rain.") == [CausalStatement("heavy rain", "The flood")]
    assert causal_statements("Crop loss results from the flood") == [CausalStatement("the flood", "Crop loss")]
    assert causal_statements("The river rose because of the storm") == [CausalStatement("the storm", "The river rose")]
    assert causal_statements("Vaccines do not cause autism") == [CausalStatement("Vaccines", "autism", True)]
    assert causal_statements("It rained, so the river rose.") == [CausalStatement("It rained", "the river rose")]
    assert causal_statements("Paris is the capital of France.") == []


def test_question_statements_give_a_short_answer_a_direction():
    assert question_statements("What causes acid rain?", "Sulfur dioxide") == [
        CausalStatement("Sulfur dioxide", "acid rain")
    ]
    assert question_statements("What did the drought lead to?", "famine") == [CausalStatement("the drought", "famine")]
    assert question_statements("What is the effect of smoking?", "lung cancer") == [
        CausalStatement("smoking", "lung cancer")
    ]
    assert question_statements("Who wrote Emma?", "Jane Austen") == []
    assert question_statements("What causes acid rain?", "") == []


def test_a_node_is_named_when_all_its_content_words_appear():
    assert names("heart disease", "chronic heart disease in the elderly")
    assert not names("heart disease", "heart attack")
    assert names("The Flood", "flood")
    assert not names("", "anything")


@pytest.mark.parametrize(
    ("answer", "verdict"),
    [
        ("Heavy rain caused the flood.", RESPECTED),
        ("The flood was caused by heavy rain.", RESPECTED),
        ("The flood caused heavy rain.", VIOLATED),  # reversed
        ("Heavy rain is caused by the flood.", VIOLATED),  # reversed, passive
        ("Heavy rain did not cause the flood.", VIOLATED),  # denied
        ("The flood did not cause heavy rain.", NEUTRAL),  # true of C -> E, says nothing of it
        ("There was heavy rain and a flood.", NEUTRAL),  # both named, no direction stated
        ("The flood destroyed the crops.", NEUTRAL),  # one end named
        ("Heavy rain caused the flood. The flood caused heavy rain.", VIOLATED),  # a contradiction counts
        ("A dam failure caused the flood.", NEUTRAL),  # another cause of E does not contradict C -> E
    ],
)
def test_edge_verdicts(answer, verdict):
    assert edge_verdict("heavy rain", "flood", causal_statements(answer)) == verdict


def test_s_causal_is_respected_over_judged_edges():
    edges = [("heavy rain", "flood"), ("flood", "crop loss"), ("wind", "fire"), ("drought", "famine")]
    answer = "Heavy rain caused the flood. The crop loss led to the flood. Drought leads to famine."
    check = causal_consistency(edges, answer)
    assert check.verdicts == (RESPECTED, VIOLATED, NEUTRAL, RESPECTED)
    assert check.score == pytest.approx(2 / 3)
    assert (check.respected, check.violated) == (2, 1)


def test_s_causal_is_undefined_when_the_answer_speaks_to_no_edge():
    check = causal_consistency([("heavy rain", "flood")], "Christian Bale")
    assert check.score is None and check.verdicts == (NEUTRAL,)
    assert causal_consistency([], "Heavy rain caused the flood.").score is None
    assert not should_regenerate(check.score, 1.0)  # undefined decides nothing


def test_a_short_answer_is_judged_through_its_causal_question():
    edges = [("sulfur dioxide", "acid rain")]
    assert causal_consistency(edges, "Sulfur dioxide", question="What causes acid rain?").score == 1.0
    assert causal_consistency(edges, "Acid rain", question="What does sulfur dioxide cause?").score == 1.0
    assert causal_consistency([("acid rain", "sulfur dioxide")], "Sulfur dioxide",
                              question="What causes acid rain?").score == 0.0
    assert causal_consistency(edges, "Sulfur dioxide").score is None  # without the question: no statement


def test_regeneration_fires_strictly_below_tau():
    assert not should_regenerate(0.5, 0.5)  # exactly τ: no regeneration
    assert should_regenerate(0.5 - 1e-9, 0.5)
    assert should_regenerate(0.0, TAU)
    assert not should_regenerate(1.0, 1.0)
    edges = [("heavy rain", "flood"), ("flood", "crop loss")]
    half = causal_consistency(edges, "Heavy rain caused the flood. Crop loss caused the flood.").score
    assert half == 0.5
    assert not should_regenerate(half, 0.5) and should_regenerate(half, 0.51)


# ---------------------------------------------------------------- the loop


def test_the_loop_follows_the_papers_order_and_budgets():
    state = LoopState()
    action, state = next_step(state, 0.0, 1.0)  # both fire: the causal check first
    assert action == REGENERATE and state.regenerations == 1
    action, state = next_step(state, 0.0, 1.0)  # regeneration spent: the rewrite gets its turn
    assert action == REWRITE and state.rewrites == 1
    action, state = next_step(state, 0.0, 1.0)  # both spent: stop, keep the answer
    assert action == STOP and state.done and state.rounds == 2
    assert next_step(state, 1.0, 0.0) == (STOP, state)  # after the end nothing changes
    assert state.history == (REGENERATE, REWRITE, STOP)


def test_the_loop_accepts_a_passing_answer_and_undefined_scores():
    assert next_step(LoopState(), 1.0, 0.0)[0] == ACCEPT
    assert next_step(LoopState(), None, None)[0] == ACCEPT
    assert next_step(LoopState(), TAU, DELTA)[0] == ACCEPT  # exactly at both thresholds
    assert next_step(LoopState(max_rounds=0), 0.0, 1.0)[0] == STOP


def test_loop_state_refuses_bad_bounds():
    with pytest.raises(ValueError, match="max_rounds"):
        LoopState(max_rounds=-1)
    with pytest.raises(ValueError, match="max_rewrites"):
        LoopState(max_rewrites=True)


_score = st.one_of(st.none(), st.floats(min_value=0.0, max_value=1.0))


@settings(max_examples=300, deadline=None)
@given(
    max_rounds=st.integers(0, 10),
    max_regenerations=st.integers(0, 10),
    max_rewrites=st.integers(0, 10),
    tau=st.floats(0.0, 1.0),
    delta=st.floats(0.0, 1.0),
    scores=st.lists(st.tuples(_score, _score), min_size=1, max_size=40),
)
def test_the_loop_never_exceeds_its_bounds_and_always_ends(
    max_rounds, max_regenerations, max_rewrites, tau, delta, scores
):
    state = LoopState(max_rounds=max_rounds, max_regenerations=max_regenerations, max_rewrites=max_rewrites)
    actions = []
    for s_causal, s_hall in scores:
        action, state = next_step(state, s_causal, s_hall, tau=tau, delta=delta)
        actions.append(action)
        assert state.rounds <= max_rounds
        assert state.regenerations <= max_regenerations and state.rewrites <= max_rewrites
        if state.done:
            break
    corrective = [a for a in actions if a in (REGENERATE, REWRITE)]
    assert len(corrective) == state.rounds
    # every step either spends a round or ends the loop: it ends within max_rounds + 1 steps
    assert len(actions) <= max_rounds + 1
    if len(actions) < len(scores):
        assert actions[-1] in (ACCEPT, STOP)


