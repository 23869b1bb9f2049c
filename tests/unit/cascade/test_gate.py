"""The escalation gate: its decision over a fitted model (pure), the component (inputs, failures, serialisation)."""

import asyncio

import pytest
from haystack import Document
from haystack.dataclasses import ChatMessage

from haystack_cfrag.cascade.components import EscalationGate
from haystack_cfrag.cascade.math import RULES, decide, signals
from haystack_cfrag.cascade.model import GateModel

# P(win) rises as the support falls and with the pile shape: sigmoid(-1 - 2 (support + 0.3) / 0.3 + 3 pile)
MODEL = {"features": ["support", "pile"], "means": [-0.3, 0.0], "scales": [0.3, 1.0], "weights": [-2.0, 3.0],
         "intercept": -1.0, "threshold": 0.5, "fitted_on": "a unit test"}

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


class ReadingScorer(FixedScorer):
    """A scorer that also reads the margin and rank off the same logits (ReaderSupportScorer.read_reply)."""

    def read_reply(self, messages, answer, reply_prefix=""):
        self.calls.append(("read_reply", answer, reply_prefix))
        return {"support": self.value, "margin": 2.5, "min_margin": 0.4, "rank": 0}


def gate(scorer=None, **kwargs):
    return EscalationGate(support_scorer=scorer or FixedScorer(), model=kwargs.pop("model", MODEL), **kwargs)


def docs():
    return [Document(content=t, score=1.0 - i / 10) for i, t in enumerate(PASSAGES)]


def run(gate, reply="Answer: Mount Everest", prompt=True, **kwargs):
    return gate.run(query="Tallest mountain from base to summit?", replies=[ChatMessage.from_assistant(reply)],
                    documents=docs(), prompt=[ChatMessage.from_user("the prompt")] if prompt else None, **kwargs)


@pytest.mark.parametrize(("answer", "support", "passages", "escalate", "because", "by"), [
    ("Mount Everest", -0.05, PASSAGES, False, "P(the method wins) 0.06 < 0.50: support -0.05 (-1.67)", "model"),
    ("Mount Everest", -0.9, PASSAGES, True, "P(the method wins) 0.95 ≥ 0.50: support -0.9 (+4.00)", "model"),
    ("", -0.05, PASSAGES, True, "no answer", "no_answer"),
    ("Mount Everest", None, PASSAGES, True, "could not be read", "unread"),
    ("Mount Everest", float("nan"), PASSAGES, True, "could not be read", "unread"),
])
def test_the_decision(answer, support, passages, escalate, because, by):
    decision = decide(signals(answer, passages, support), "Tallest mountain?", GateModel.from_dict(MODEL),
                      threshold=0.5)
    assert decision.escalate is escalate and because in decision.because
    assert decision.by == by and by in RULES


def test_the_pile_shape_raises_the_probability():
    pile = ["Canberra is the capital.", "Sydney is big.", "The harbour of Sydney."]
    model = GateModel.from_dict(MODEL)
    alone = decide(signals("Sydney", pile[1:], -0.3), "Capital?", model, threshold=0.5)
    piled = decide(signals("Sydney", pile, -0.3), "Capital?", model, threshold=0.5)
    assert alone.escalate is False and piled.escalate is True and piled.probability > alone.probability


def test_signals_count_the_passages_that_state_the_answer_and_the_score_gap():
    s = signals("Mount Everest", PASSAGES, -0.2, [0.9, 0.7, 0.6])
    assert (s["holding"], s["rivals"], s["top_holds"], s["score_gap"]) == (1, 1, True, 0.2)


def test_the_answer_is_read_under_the_prompt_it_answered_and_handed_on():
    scorer = FixedScorer(-0.1)
    out = run(gate(scorer))
    assert out["escalate"] is False and out["answer"] == "Mount Everest"
    assert scorer.calls == [("score_reply", " Mount Everest", "Answer:")]
    assert out["trace"]["signals"]["support"] == -0.1 and out["trace"]["escalated"] is False
    assert out["trace"]["signals"]["margin"] is None  # this scorer reads no logit rows


def test_a_scorer_that_reads_the_logits_gives_margin_and_rank_in_the_same_reading():
    scorer = ReadingScorer(-0.1)
    out = run(gate(scorer))
    assert scorer.calls == [("read_reply", " Mount Everest", "Answer:")]
    assert {k: out["trace"]["signals"][k] for k in ("support", "margin", "min_margin", "rank")} == {
        "support": -0.1, "margin": 2.5, "min_margin": 0.4, "rank": 0}
    assert 0.0 <= out["trace"]["probability"] <= 1.0


def test_without_the_prompt_the_scorer_reads_the_passages():
    scorer = FixedScorer(-0.1)
    run(gate(scorer), prompt=False)
    assert scorer.calls == [("score", "Mount Everest")]


def test_a_request_threshold_overrides_the_models_operating_point_and_is_checked():
    g = gate(FixedScorer(-0.1))
    assert run(g)["escalate"] is False and run(g)["trace"]["threshold"] == 0.5
    assert run(g, threshold=0.0)["escalate"] is True
    with pytest.raises(ValueError, match="'threshold' must be in"):
        run(g, threshold=-0.2)  # the old support threshold's units: refused in one line


def test_a_failing_scorer_escalates_and_says_so():
    class Broken:
        def score(self, *args):
            raise RuntimeError("backend gone")

    out = run(gate(Broken()), prompt=False)
    assert out["escalate"] is True and "could not be read" in out["trace"]["because"]
    assert "backend gone" in out["trace"]["degradations"][0]["reason"]


def test_no_answer_escalates_without_scoring_and_hands_no_answer_on():
    scorer = FixedScorer()
    out = run(gate(scorer), reply="")
    assert out["escalate"] is True and "answer" not in out and scorer.calls == []


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"threshold": 1.1}, "'threshold' must be in"),
    ({"threshold": float("nan")}, "'threshold' must be in"),
    ({"answer_prefix": "x" * 201}, "'answer_prefix'"),
    ({"support_scorer": object()}, "'support_scorer' must have"),
    ({"model": {**MODEL, "weights": [1.0]}}, "'weights' must be a list of 2"),
    ({"model": {**MODEL, "features": ["support", "colour"]}}, "unknown feature"),
    ({"model": {**MODEL, "intercept": float("inf")}}, "not a finite number"),
    ({"model": {**MODEL, "scales": [0.0, 1.0]}}, "every scale must be > 0"),
    ({"model": {**MODEL, "code": "import os"}}, "unknown \\['code'\\]"),
    ({"model": "!!python/object:os.system"}, "must be a mapping"),
])
def test_bad_settings_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        EscalationGate(**{"support_scorer": FixedScorer(), "model": MODEL, **kwargs})


def test_bad_inputs_are_refused_with_one_line():
    g = gate()
    with pytest.raises(ValueError, match="'documents' must be a list of documents"):
        g.run(query="q", replies=[], documents=["not a document"])
    with pytest.raises(ValueError, match="'prompt' must be a non-empty list"):
        g.run(query="q", replies=[], documents=[], prompt=[])


def test_run_async_reads_as_run_does():
    g = gate(FixedScorer(-0.9))
    sync = run(g)
    out = asyncio.run(g.run_async(query="Tallest mountain from base to summit?",
                                     replies=[ChatMessage.from_assistant("Answer: Mount Everest")],
                                     documents=docs(), prompt=[ChatMessage.from_user("the prompt")]))
    assert out == sync


def test_inputs_are_not_mutated_and_the_gate_round_trips():
    from haystack import Pipeline

    from haystack_cfrag.pipelines.loading import pipeline_from_dict
    from haystack_cfrag.support import ReaderSupportScorer
    from haystack_cfrag.testing import MockChatGenerator

    g = gate(ReaderSupportScorer(chat_generator=MockChatGenerator()), threshold=0.7)
    pipe = Pipeline()
    pipe.add_component("gate", g)
    again = pipeline_from_dict(pipe.to_dict()).get_component("gate")  # the package's allowlist, for this call only
    assert again.to_dict() == g.to_dict() and again.threshold == 0.7
    assert again.model == GateModel.from_dict(MODEL).to_dict()
    documents = docs()
    before = [d.to_dict() for d in documents]
    g.run(query="q", replies=[ChatMessage.from_assistant("Answer: Mount Everest")], documents=documents)
    assert [d.to_dict() for d in documents] == before


def test_the_period_rule_escalates_the_temporal_trap_shape_and_only_below_a_threshold_of_one():
    dated = [Document(content="George Peter lived there until 1827."),
             Document(content="- 1964-1965 - Jacqueline Kennedy lived there.")]
    g = EscalationGate(support_scorer=FixedScorer(-0.05), model=MODEL, period_gap=0.5)

    def ask(question, threshold=None):
        return g.run(query=question, replies=[ChatMessage.from_assistant("Answer: George Peter")],
                     documents=dated, threshold=threshold)

    out = ask("Who lived there from 1964 to 1965?")
    assert out["escalate"] is True and "dating_gap 1.00" in out["trace"]["because"]
    assert out["decided_by"] == "period_gap"                        # what a cascade routes on (cf_rag_auto)
    assert out["trace"]["signals"]["dated"] == 0.0 and out["trace"]["signals"]["best_dated"] == 1.0
    undated = ask("Who lived there?")
    assert undated["escalate"] is False and undated["decided_by"] == "model"  # no period: the model alone decides
    unstated = g.run(query="Who lived there from 1964 to 1965?", replies=[ChatMessage.from_assistant("Answer: Ann")],
                     documents=dated)                               # no passage states the answer: no gap to read
    assert unstated["escalate"] is False and unstated["trace"]["signals"]["holding"] == 0
    assert ask("Who lived there from 1964 to 1965?", threshold=1.0)["escalate"] is False
    first = ask("Who lived there from 1964 to 1965?", threshold=0.0)  # the rule first, where the model escalates too
    assert first["escalate"] is True and first["decided_by"] == "period_gap"
    assert EscalationGate.from_dict(g.to_dict()).period_gap == 0.5
    with pytest.raises(ValueError, match="'period_gap'"):
        EscalationGate(support_scorer=FixedScorer(), model=MODEL, period_gap=0.0)


def test_the_period_rule_reads_a_handover_year_as_half_a_date():
    """TimeQA's HMS Warrior (1948 to 1958): the passages stating Argentina date only 1958, the year she was sold."""
    passages = [Document(content="Warrior was sold to Argentina in 1958."),
                Document(content="The Royal Navy decommissioned Warrior in February 1958, offered to Argentina."),
                Document(content="Warrior was refitted at Devonport in 1952 for the United Kingdom's Royal Navy.")]
    g = EscalationGate(support_scorer=FixedScorer(-0.05), model=MODEL, period_gap=0.5)
    out = g.run(query="Which nation's registry was the carrier on from 1948 to 1958?",
                replies=[ChatMessage.from_assistant("Answer: Argentina")], documents=passages)
    assert out["trace"]["signals"]["dated"] == 0.5 and out["trace"]["signals"]["best_dated"] == 1.0
    assert out["escalate"] is True and out["decided_by"] == "period_gap"


@pytest.mark.parametrize(("question", "answer"), [("from 1926 to 1959", "London"), ("from 1959 to 1973", "New York")])
def test_the_period_rule_reads_a_passage_stating_both_handovers_as_dating_the_period(question, answer):
    """TimeQA's WUPJ (a row nobody tuned on, lost twice before): the passage that states where the headquarters
    moved at the period's first and last year frames it; a congregation's founding inside it does not date it
    better, so standard RAG's answer, stated by the framing passage, is not challenged by the period rule."""
    passages = [Document(content="The WUPJ was established in London in 1926. It moved its headquarters to New York "
                                 "in 1959 and to Jerusalem in 1973."),
                Document(content="A first congregation was formed at Jerusalem during 1958. It was incorporated in "
                                 "1971.")]
    g = EscalationGate(support_scorer=FixedScorer(-0.05), model=MODEL, period_gap=0.5)
    out = g.run(query=f"What city was the location of the WUPJ headquarters {question}?",
                replies=[ChatMessage.from_assistant(f"Answer: {answer}")], documents=passages)
    assert out["trace"]["signals"]["dated"] == 1.0 and out["trace"]["signals"]["best_dated"] == 1.0
    assert out["escalate"] is False and out["decided_by"] == "model"


RAMS = ("The club played their home games at the Los Angeles Memorial Coliseum before moving into a reconstructed "
        "Anaheim Stadium in Orange County, California in 1980.")
RAIDERS = "In 1982, the Oakland Raiders moved to Los Angeles and took up residence in the Coliseum."


@pytest.mark.parametrize(("answer", "stated", "escalate", "dated"), [
    ("Anaheim Stadium", RAMS, False, 1.0),                                        # it begins in 1980: dated wholly
    ("Anaheim Stadium", "The Rams played at Anaheim Stadium until 1980.", True, 0.5),        # it ends there: half
    ("Los Angeles Memorial Coliseum", RAMS, True, 0.5),                          # the holder that left in 1980
])
def test_the_period_rule_reads_the_answer_beginning_in_the_periods_first_year_as_dating_it(answer, stated, escalate,
                                                                                              dated):
    """TimeQA's Rams (an evidence_extraction row nobody tuned on, lost at d826367): the passage stating standard
    RAG's answer dates it by 1980, the period's first year, an edge worth half; a passage about the Raiders dates
    1982, inside. The clause that states the answer beginning then dates it wholly; one stating it ending, or
    stating the holder that left, does not."""
    g = EscalationGate(support_scorer=FixedScorer(-0.05), model=MODEL, period_gap=0.5)
    out = g.run(query="What was the name of the Rams stadium from 1980 to 1994?",
                replies=[ChatMessage.from_assistant(f"Answer: {answer}")],
                documents=[Document(content=stated), Document(content=RAIDERS)])
    assert out["trace"]["signals"]["dated"] == dated and out["trace"]["signals"]["best_dated"] == 1.0
    assert out["escalate"] is escalate and out["decided_by"] == ("period_gap" if escalate else "model")


def test_the_elsewhere_rule_escalates_a_pile_dated_to_other_periods_where_no_passage_dates_the_question():
    """The Yankees' 1903-1912 park: two passages state Yankee Stadium, both dated 1923 on; the decisive passage
    (Hilltop Park) states no date, so no passage dates the question's period better (no dating gap)."""
    pile = [Document(content="In 1923, the Yankees moved to Yankee Stadium."),
            Document(content="Yankee Stadium was their home from 1923 to 1973 and from 1976 to 2008."),
            Document(content="The team's new ballpark, Hilltop Park, was built in Upper Manhattan.")]
    g = EscalationGate(support_scorer=FixedScorer(-0.05), model=MODEL, period_gap=0.5, elsewhere_pile=True)

    def ask(question, documents=pile, gate=g, threshold=None):
        return gate.run(query=question, replies=[ChatMessage.from_assistant("Answer: Yankee Stadium")],
                        documents=documents, threshold=threshold)

    out = ask("Which park was home to the Yankees from 1903 to 1912?")
    assert out["escalate"] is True and out["decided_by"] == "elsewhere_pile"
    assert "2 passages state the answer" in out["trace"]["because"]
    signals = out["trace"]["signals"]
    assert (signals["holding"], signals["elsewhere"], signals["dated"], signals["best_dated"]) == (2, 2, 0.0, 0.0)
    assert ask("Which park was home to the Yankees from 1920 to 1930?")["decided_by"] == "model"  # dated there
    assert ask("Which park was home to the Yankees?")["trace"]["signals"]["elsewhere"] is None     # no period
    assert ask("Which park from 1903 to 1912?", documents=pile[1:])["escalate"] is False  # one passage: no pile
    assert ask("Which park from 1903 to 1912?", threshold=1.0)["escalate"] is False
    off = EscalationGate(support_scorer=FixedScorer(-0.05), model=MODEL, period_gap=0.5)
    assert off.elsewhere_pile is False and ask("Which park from 1903 to 1912?", gate=off)["escalate"] is False
    assert EscalationGate.from_dict(g.to_dict()).elsewhere_pile is True
    with pytest.raises(ValueError, match="'elsewhere_pile' must be true or false"):
        EscalationGate(support_scorer=FixedScorer(), model=MODEL, elsewhere_pile="yes")


def test_the_pile_rule_escalates_the_correlation_traps_shape_where_the_model_stays_closed():
    """Perth (trap_dev): three passages state Sydney, the best-ranked one (Western Australia's) does not, and the
    reader is sure of Sydney: the model stays closed, the declared rule escalates."""
    docs = [Document(content=t, score=1.0 - i / 10) for i, t in enumerate([
        "Western Australia is the largest Australian state by area; its capital is Perth.",
        "Sydney is the largest city in Australia.", "The harbour of Sydney is famous.",
        "Sydney hosted the 2000 Games."])]
    sure = {**MODEL, "weights": [-2.0, 0.0]}   # the pile's own weight off: P 0.06 at a support of -0.05

    def ask(gate, answer="Sydney", documents=docs, threshold=None):
        return gate.run(query="What is the capital of the largest Australian state by area?", documents=documents,
                        replies=[ChatMessage.from_assistant(f"Answer: {answer}")], threshold=threshold)

    on = EscalationGate(support_scorer=FixedScorer(-0.05), model=sure, pile=True)
    out = ask(on)
    assert out["escalate"] is True and out["decided_by"] == "pile" and out["trace"]["probability"] < 0.5
    assert out["trace"]["because"].startswith("3 passages state the answer and the best-ranked one does not")
    assert ask(EscalationGate(support_scorer=FixedScorer(-0.05), model=sure))["escalate"] is False  # off
    assert ask(on, answer="Perth")["escalate"] is False          # the best-ranked passage states it: no pile
    assert ask(on, documents=docs[:2])["escalate"] is False       # one passage states it: no pile
    assert ask(on, threshold=1.0)["escalate"] is False            # a threshold of 1 escalates nothing
    assert ask(EscalationGate(support_scorer=FixedScorer(-0.9), model=sure, pile=True))["decided_by"] == "model"
    assert EscalationGate.from_dict(on.to_dict()).pile is True
    with pytest.raises(ValueError, match="'pile' must be true or false"):
        EscalationGate(support_scorer=FixedScorer(), model=MODEL, pile=1)


def test_the_period_rule_escalates_a_namesake_outvoted_by_the_others_passages():
    """"John Smith (the 1950s painter)": the passages about the politician state his birthplace twice; the one
    passage that describes the painter states another. The descriptor qualifies as the period does."""
    passages = [Document(content="John Smith (1938 - 1994), the Labour politician, was born in Dalmally."),
                Document(content="The politician John Smith grew up in Dalmally and Ardrishaig."),
                Document(content="John Smith (1921 - 1987), a painter of harbours, was born in Leeds.")]
    g = EscalationGate(support_scorer=FixedScorer(-0.05), model=MODEL, period_gap=0.5)

    def ask(question):
        return g.run(query=question, replies=[ChatMessage.from_assistant("Answer: Dalmally")], documents=passages)

    out = ask("Where was John Smith (the painter) born?")
    assert out["escalate"] is True and out["decided_by"] == "period_gap"
    assert "meets the question's qualifier" in out["trace"]["because"]
    assert out["trace"]["signals"]["dated"] == 0.0 and out["trace"]["signals"]["best_dated"] == 1.0
    era = ask("Where was John Smith (the 1950s painter) born?")  # both lifespans cover the 1950s: the words decide
    assert era["escalate"] is True and era["trace"]["signals"]["best_dated"] == 1.0
    assert era["trace"]["signals"]["dated"] == 0.5
    plain = ask("Where was John Smith born?")                    # no qualifier: the model alone decides
    assert plain["escalate"] is False and plain["decided_by"] == "model"
