"""The escalation gate: its rule (pure), the component (inputs, failures, serialisation), its sockets."""

import asyncio

import pytest
from haystack import Document
from haystack.dataclasses import ChatMessage

from haystack_cfrag.cascade.components import EscalationGate
from haystack_cfrag.cascade.math import decide, signals

PASSAGES = ["Mount Everest is 8,849 m above sea level.", "Mauna Kea rises 10,210 m from its base.",
            "Everest base camp lies at 5,364 m."]


class FixedScorer:
    """A stand-in for ReaderSupportScorer: one support, and a record of how it was read."""

    def __init__(self, value=-0.1):
        self.value, self.calls = value, []

    def score(self, query, answer, documents):
        self.calls.append(("score", answer))
        return self.value

    def score_reply(self, messages, answer, reply_prefix=""):
        self.calls.append(("score_reply", answer, reply_prefix))
        return self.value


def docs():
    return [Document(content=t, score=1.0 - i / 10) for i, t in enumerate(PASSAGES)]


def run(gate, reply="Answer: Mount Everest", prompt=True, **kwargs):
    return gate.run(query="Tallest mountain from base to summit?", replies=[ChatMessage.from_assistant(reply)],
                    documents=docs(), prompt=[ChatMessage.from_user("the prompt")] if prompt else None, **kwargs)


@pytest.mark.parametrize(("answer", "support", "passages", "escalate", "because"), [
    ("Mount Everest", -0.05, PASSAGES, False, "the reader is sure"),
    ("Mount Everest", -0.9, PASSAGES, True, "unsure of its answer (support -0.90 < -0.30)"),
    ("", -0.05, PASSAGES, True, "no answer"),
    ("K2", -0.05, PASSAGES, True, "no passage states the answer"),
    ("Mount Everest", None, PASSAGES, True, "could not be read"),
    ("Mount Everest", float("nan"), PASSAGES, True, "could not be read"),
])
def test_the_rule(answer, support, passages, escalate, because):
    decision = decide(signals(answer, passages, support), threshold=-0.3)
    assert decision.escalate is escalate and because in decision.because


def test_signals_count_the_passages_that_state_the_answer_and_the_score_gap():
    s = signals("Mount Everest", PASSAGES, -0.2, [0.9, 0.7, 0.6])
    assert (s["holding"], s["rivals"], s["top_holds"], s["score_gap"]) == (1, 1, True, 0.2)


def test_the_answer_is_read_under_the_prompt_it_answered_and_handed_on():
    scorer = FixedScorer(-0.1)
    out = run(EscalationGate(support_scorer=scorer))
    assert out["escalate"] is False and out["answer"] == "Mount Everest"
    assert scorer.calls == [("score_reply", " Mount Everest", "Answer:")]
    assert out["trace"]["signals"]["support"] == -0.1 and out["trace"]["escalated"] is False


def test_without_the_prompt_the_scorer_reads_the_passages():
    scorer = FixedScorer(-0.1)
    run(EscalationGate(support_scorer=scorer), prompt=False)
    assert scorer.calls == [("score", "Mount Everest")]


def test_a_request_threshold_overrides_the_component_and_is_checked():
    gate = EscalationGate(support_scorer=FixedScorer(-0.1), threshold=-0.3)
    assert run(gate)["escalate"] is False
    assert run(gate, threshold=0.0)["escalate"] is True
    with pytest.raises(ValueError, match="'threshold' must be in"):
        run(gate, threshold=0.5)


def test_a_failing_scorer_escalates_and_says_so():
    class Broken:
        def score(self, *args):
            raise RuntimeError("backend gone")

    out = run(EscalationGate(support_scorer=Broken()), prompt=False)
    assert out["escalate"] is True and "could not be read" in out["trace"]["because"]
    assert "backend gone" in out["trace"]["degradations"][0]["reason"]


def test_no_answer_escalates_without_scoring_and_hands_no_answer_on():
    scorer = FixedScorer()
    out = run(EscalationGate(support_scorer=scorer), reply="")
    assert out["escalate"] is True and "answer" not in out and scorer.calls == []


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"threshold": 0.1}, "'threshold' must be in"),
    ({"threshold": float("nan")}, "'threshold' must be in"),
    ({"answer_prefix": "x" * 201}, "'answer_prefix'"),
    ({"support_scorer": object()}, "'support_scorer' must have"),
])
def test_bad_settings_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        EscalationGate(**{"support_scorer": FixedScorer(), **kwargs})


def test_bad_inputs_are_refused_with_one_line():
    gate = EscalationGate(support_scorer=FixedScorer())
    with pytest.raises(ValueError, match="'documents' must be a list of documents"):
        gate.run(query="q", replies=[], documents=["not a document"])
    with pytest.raises(ValueError, match="'prompt' must be a non-empty list"):
        gate.run(query="q", replies=[], documents=[], prompt=[])


def test_run_async_reads_as_run_does():
    gate = EscalationGate(support_scorer=FixedScorer(-0.9))
    sync = run(gate)
    out = asyncio.run(gate.run_async(query="Tallest mountain from base to summit?",
                                     replies=[ChatMessage.from_assistant("Answer: Mount Everest")],
                                     documents=docs(), prompt=[ChatMessage.from_user("the prompt")]))
    assert out == sync


def test_inputs_are_not_mutated_and_the_gate_round_trips():
    from haystack_cfrag.support import ReaderSupportScorer
    from haystack_cfrag.testing import MockChatGenerator

    from haystack import Pipeline

    from haystack_cfrag.loading import pipeline_from_dict

    gate = EscalationGate(support_scorer=ReaderSupportScorer(chat_generator=MockChatGenerator()), threshold=-0.7)
    pipe = Pipeline()
    pipe.add_component("gate", gate)
    again = pipeline_from_dict(pipe.to_dict()).get_component("gate")  # the package's allowlist, for this call only
    assert again.to_dict() == gate.to_dict() and again.threshold == -0.7
    documents = docs()
    before = [d.to_dict() for d in documents]
    gate.run(query="q", replies=[ChatMessage.from_assistant("Answer: Mount Everest")], documents=documents)
    assert [d.to_dict() for d in documents] == before
