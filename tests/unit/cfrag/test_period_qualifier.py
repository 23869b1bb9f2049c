"""The period qualifier: a time-qualified question's duel reads the passage that dates each answer to its
period, challenges an answer as loud as the baseline's when its passage dates the period better, and the
stratifier drafts one challenger from the passages that date the period best."""

import asyncio

import pytest
from haystack import Document
from haystack.dataclasses import GeneratedAnswer

from haystack_cfrag.cfrag.components.causal_arbitration_ranker import CausalArbitrationRanker
from haystack_cfrag.cfrag.components.spectral_stratifier import SpectralStratifier
from haystack_cfrag.cfrag.dataclasses import Draft
from haystack_cfrag.common.qualifiers import (
    EDGE_WEIGHT,
    Period,
    answer_dating,
    begins,
    dating,
    question_period,
    question_qualifier,
)
from tests.fakes import HashingDocumentEmbedder, HashingTextEmbedder

QUESTION = "Who lived in the Baker House from 1964 to 1965?"
TEXTS = {
    "laird": "In 1796 John Laird lived in the Baker House; later George Peter bought the house and lived there.",
    "peter": "George Peter, a War of 1812 commander, lived in the Baker House until 1827.",
    "kennedy": "- 1964-1965 - Jacqueline Kennedy lived in the Baker House.",
    "straight": "- 1965-1976 - Michael Straight lived in the Baker House.",
}


def documents():
    docs = [Document(id=k, content=v) for k, v in TEXTS.items()]
    return {d.id: d for d in HashingDocumentEmbedder().run(docs)["documents"]}


def ruling(qualifier):
    docs = documents()
    pile = [docs["laird"], docs["peter"], docs["straight"], docs["kennedy"]]
    drafts = [Draft(index=1, answer="Jacqueline Kennedy", documents=[docs["kennedy"], docs["straight"]])]
    base = GeneratedAnswer(data="George Peter", query=QUESTION, documents=pile, meta={})
    ranker = CausalArbitrationRanker(text_embedder=HashingTextEmbedder(), evidence="mentions", override_margin=1.0,
                                     qualifier=qualifier)
    return ranker.run(query=QUESTION, drafts=drafts, answers=[base])["ruling"]


@pytest.mark.parametrize(("question", "expected"), [
    ("Who lived there from Dec 2014 to May 2016?", Period(2014 + 11 / 12, 2016 + 5 / 12)),
    ("Between 1990 and 1995, who coached the team?", Period(1990, 1996)),
    ("Who owned it in 1974?", Period(1974, 1975)),
    ("Who owned the villa for 14 years beginning in 1974?", Period(1974, 1988)),
    ("Who was the first president of Myanmar?", None),
])
def test_the_question_period(question, expected):
    assert question_period(question) == expected


def test_dating_prefers_the_passage_of_the_period_over_its_neighbours():
    period = question_period(QUESTION)
    scores = {k: dating(period, v) for k, v in TEXTS.items()}
    assert scores["kennedy"] == 1.0 and scores["straight"] == 0.5 and scores["laird"] == scores["peter"] == 0.0


def test_without_the_qualifier_a_challenger_as_loud_as_the_baseline_gets_no_duel():
    # "George Peter" is named by two passages, "Jacqueline Kennedy" by one: a duel either way
    docs = documents()
    assert ruling("none").open_duel
    # as loud: each named once -> no duel without the period, a duel with it
    drafts = [Draft(index=1, answer="Jacqueline Kennedy", documents=[docs["kennedy"]])]
    base = GeneratedAnswer(data="Michael Straight", query=QUESTION, documents=[docs["straight"], docs["kennedy"]],
                           meta={})
    for qualifier, held in (("none", False), ("period", True)):
        ranker = CausalArbitrationRanker(text_embedder=HashingTextEmbedder(), evidence="mentions",
                                         override_margin=1.0, qualifier=qualifier)
        out = ranker.run(query=QUESTION, drafts=drafts, answers=[base])["ruling"]
        assert out.open_duel is held


def test_the_duel_reads_the_passage_that_dates_the_answer_first():
    r = ruling("period")
    assert r.open_duel
    pairs = r.arbitration.override.duel
    ids = [r.case.docs[col].id for _, col in pairs]
    assert ids[0] == "kennedy"                                  # the period's passage leads the duel
    assert ids[1] in {"laird", "peter"}


def test_the_period_stratum_is_drafted_first_and_m_stays():
    docs = list(documents().values())
    plain = SpectralStratifier(n_clusters=2, n_subsets=2, selection="clusters", random_state=0,
                               text_embedder=HashingTextEmbedder())
    dated = SpectralStratifier(n_clusters=2, n_subsets=2, selection="clusters", random_state=0,
                               text_embedder=HashingTextEmbedder(), qualifier="period")
    subsets = dated.run(documents=docs, query=QUESTION)["subsets"]
    assert len(subsets) == 2 and [d.id for d in subsets[0]] == ["kennedy"]
    undated = "Who lived in the Baker House?"
    assert ([[d.id for d in s] for s in dated.run(documents=docs, query=undated)["subsets"]]
            == [[d.id for d in s] for s in plain.run(documents=docs, query=undated)["subsets"]])
    assert SpectralStratifier.from_dict(dated.to_dict()).qualifier == "period"
    alone = SpectralStratifier(n_clusters=2, n_subsets=2, selection="clusters", random_state=0,
                               text_embedder=HashingTextEmbedder(), qualifier="period_only")
    assert [[d.id for d in s] for s in alone.run(documents=docs, query=QUESTION)["subsets"]] == [["kennedy"]]
    assert len(alone.run(documents=docs, query=undated)["subsets"]) == 2    # no period: the clusters, M of them
    with pytest.raises(ValueError, match="qualifier"):
        SpectralStratifier(qualifier="namesake")


def test_a_call_may_ask_for_the_period_stratum_alone():
    """`cf_rag_auto` passes qualifier="period_only" where its gate's period rule escalated (cf_rag_auto.yml)."""
    docs = list(documents().values())
    dated = SpectralStratifier(n_clusters=2, n_subsets=2, selection="clusters", random_state=0,
                               text_embedder=HashingTextEmbedder(), qualifier="period")
    alone = dated.run(documents=docs, query=QUESTION, qualifier="period_only")["subsets"]
    assert [[d.id for d in s] for s in alone] == [["kennedy"]]
    assert len(dated.run(documents=docs, query=QUESTION)["subsets"]) == 2   # the component's own qualifier after it
    again = asyncio.run(dated.run_async(documents=docs, query=QUESTION, qualifier="period_only"))["subsets"]
    assert [[d.id for d in s] for s in again] == [["kennedy"]]
    with pytest.raises(ValueError, match="qualifier"):
        dated.run(documents=docs, query=QUESTION, qualifier="namesake")


WARRIOR = "Which nation's registry was the carrier Warrior on from 1948 to 1958?"
HANDOVER = {                     # TimeQA's HMS Warrior: the next holder's passages date the period's last year
    "sold": "Warrior was sold to Argentina in 1958 and renamed Independencia.",
    "decommissioned": "The Royal Navy decommissioned Warrior in February 1958 and offered her to Argentina.",
    "refit": "Warrior was refitted at Devonport in 1952 for the United Kingdom's Royal Navy.",
}


def period_reading(question, texts, pile, challenger, decisive, baseline):
    """The period-only stratum's passages, and whether the duel opens with `decisive` leading it, for a pile of
    `texts` where `challenger` is drafted from the decisive passage against the pile's `baseline`."""
    docs = {d.id: d for d in HashingDocumentEmbedder().run(
        [Document(id=k, content=v) for k, v in texts.items()])["documents"]}
    pile = [docs[k] for k in pile]
    stratifier = SpectralStratifier(n_clusters=2, n_subsets=2, selection="clusters", random_state=0,
                                    text_embedder=HashingTextEmbedder(), qualifier="period_only")
    stratum = [[d.id for d in s] for s in stratifier.run(documents=pile, query=question)["subsets"]]
    drafts = [Draft(index=1, answer=challenger, documents=[docs[decisive]])]
    base = GeneratedAnswer(data=baseline, query=question, documents=pile, meta={})
    ranker = CausalArbitrationRanker(text_embedder=HashingTextEmbedder(), evidence="mentions", override_margin=1.0,
                                     qualifier="period")
    ruling = ranker.run(query=question, drafts=drafts, answers=[base])["ruling"]
    lead = [ruling.case.docs[col].id for _, col in ruling.arbitration.override.duel][:1]
    return stratum, ruling.open_duel, lead


def test_the_handover_years_pile_is_challenged_and_the_inside_passage_leads_the_duel():
    assert period_reading(WARRIOR, HANDOVER, ["sold", "decommissioned", "refit"], "United Kingdom", "refit",
                          "Argentina") == ([["refit"]], True, ["refit"])

RAMS = "What was the name of the Rams stadium from 1980 to 1994?"


@pytest.mark.parametrize(("stated", "held"), [
    # the clause stating Anaheim begins it in 1980: it dates the answer as well as the Raiders' 1982 passage
    ("The club played at the Los Angeles Memorial Coliseum before moving into Anaheim Stadium in 1980.", False),
    # Anaheim stated ending in 1980: an edge, half; the inside passage dates the Coliseum better: a duel
    ("The club played at Anaheim Stadium until 1980 and then at the Los Angeles Memorial Coliseum.", True),
])
def test_the_duel_reads_each_answers_own_clause_for_the_periods_first_year(stated, held):
    """TimeQA's Rams (an evidence_extraction row nobody tuned on, lost by cf_rag at d826367): the duel challenged
    the baseline because a passage about the Raiders dates 1982 and names the Coliseum."""
    texts = {"stated": stated,
             "raiders": "In 1982, the Oakland Raiders moved in and took up residence in the Los Angeles Memorial "
                        "Coliseum."}
    docs = {d.id: d for d in HashingDocumentEmbedder().run(
        [Document(id=k, content=v) for k, v in texts.items()])["documents"]}
    drafts = [Draft(index=1, answer="Los Angeles Memorial Coliseum", documents=[docs["raiders"]])]
    base = GeneratedAnswer(data="Anaheim Stadium", query=RAMS, documents=[docs["stated"], docs["raiders"]], meta={})
    ranker = CausalArbitrationRanker(text_embedder=HashingTextEmbedder(), evidence="mentions", override_margin=1.0,
                                     qualifier="period")
    ruling = ranker.run(query=RAMS, drafts=drafts, answers=[base])["ruling"]
    assert ruling.open_duel is held
    case = ruling.case
    anaheim = dict(zip([d.id for d in case.docs], case.dating()[case.baseline()].tolist(), strict=True))
    assert anaheim == {"stated": 0.5 if held else 1.0, "raiders": 1.0}      # the baseline's row: its own clause


U38 = "Who commanded the U-38 from Oct 1938 to Jul 1941?"
YEARLESS = {                     # TimeQA's U-38: the decisive passage gives its day and month the year before it
    "commissioned": "She was launched on 9 August 1938 and commissioned on 24 October with Heinrich Liebe in command.",
    "new": "U-38 headed to sea with a new commander, Korvettenkapitän Heinrich Schuch. She left on 6 August.",
    "last": "U-38 would depart from Lorient for the last time on 15 October, again with Heinrich Schuch in command.",
}


WUPJ = "What city was the location of the WUPJ headquarters from 1959 to 1973?"
FRAMED = {                       # TimeQA's WUPJ: one passage states both handovers, the period's first and last year
    "framing": "The WUPJ moved its headquarters to New York in 1959 and to Jerusalem in 1973.",
    "next": "The WUPJ moved its headquarters to Jerusalem in 1973.",
    "before": "The WUPJ was established in London in 1926 and moved its headquarters in 1959.",
}


@pytest.mark.parametrize(("question", "texts", "expected"), [
    # a handover year dates the period half as well as a year inside it
    (WARRIOR, HANDOVER, {"sold": EDGE_WEIGHT, "decommissioned": EDGE_WEIGHT, "refit": 1.0}),
    # both handovers in one passage frame the period: it dates it wholly; either one alone, half
    (WUPJ, FRAMED, {"framing": 1.0, "next": EDGE_WEIGHT, "before": EDGE_WEIGHT}),
    # Oct 1938, the year from the launch's date before it: the period's first year
    (U38, YEARLESS, {"commissioned": EDGE_WEIGHT, "new": 0.0, "last": 0.0}),
])
def test_the_decisive_passage_dates_the_period_best(question, texts, expected):
    assert {k: dating(question_period(question), v) for k, v in texts.items()} == expected and EDGE_WEIGHT < 1.0


@pytest.mark.parametrize(("question", "answer", "text", "expected"), [
    # the answer's own clause, its only date the period's first year
    ("Who directed the museum from 1979 to 2010?", "Ernst Aichner",
     "In 1979, Ernst Aichner became museum director and expanded the collections.", True),
    ("Who was his wife from Dec 1841 to Sep 1852?", "Robert James", "She married Robert James on December 28, 1841.",
     True),
    # a year for a question that gives the month: it may fall before the period began
    ("Where was he held from Sep 1944 to Apr 1945?", "Natzweiler", "In the summer of 1944, he was at Natzweiler.",
     False),
    # the clause of the holder that left, a range that ends there, a date of something else in the clause
    ("Who directed the observatory from 1875 to 1880?", "Schönfeld",
     "Schönfeld left for Bonn in 1875 and Valentiner took over.", False),
    ("Who was the member from 2017 to 2018?", "Harry Herstad", "- 2015-2017: Harry Herstad (Ap)", False),
    ("Who held the office from 1983 to 1988?", "Hans Peter Bull", "- Hans Peter Bull (14 February 1978 to 16 May 1983)",
     False),
    ("What was the ship called from 2008 to 2011?", "Exxon Valdez",
     "On August 27, 2008, Exxon agreed to settle the 1989 Exxon Valdez oil spill.", False),
    ("Which company had offices there from 1933 to 1950?", "Capital Traction Company",
     "In 1933 it became the seat of Capital Transit, the merger of the Capital Traction Company and another.", False),
    # a period of two years or less has no edge to read
    ("Who lived there from 1964 to 1965?", "Jacqueline Kennedy", "In 1964 Jacqueline Kennedy moved in.", False),
])
def test_a_clause_stating_the_answer_beginning_in_the_periods_first_year(question, answer, text, expected):
    """TimeQA's shapes (rows 0-520), the answer the gate checks: each a one-clause reading of the edge year."""
    assert begins(question_period(question), answer, text) is expected
    assert answer_dating(question_qualifier(question), answer, text) == (1.0 if expected else dating(
        question_period(question), text))


def test_a_namesakes_era_is_not_read_as_a_beginning():
    q = question_qualifier("Where was John Smith (the 1950s painter) born?")
    text = "In 1950 John Smith, a painter, moved to Leeds."
    assert begins(q.period, "Leeds", text) and answer_dating(q, "Leeds", text) == 0.75   # the mean: 0.5 and 1.0


def test_a_short_period_has_no_edges_and_a_text_without_a_year_dates_nothing():
    assert dating(question_period(QUESTION), "- 1964-1965 - Jacqueline Kennedy") == 1.0   # the Baker House's two years
    assert dating(question_period(U38), YEARLESS["commissioned"].replace(" 1938", "")) == 0.0


def test_the_passage_dated_by_its_day_and_month_is_drafted_and_leads_the_duel():
    # the reader's form of the trap answer, as in the run: "Heinrich" alone does not name it in Liebe's passage
    assert period_reading(U38, YEARLESS, ["new", "last", "commissioned"], "Heinrich Liebe", "commissioned",
                          "Korvettenkapitän Heinrich Schuch") == ([["commissioned"]], True, ["commissioned"])


NAMESAKES = {                    # "John Smith (the painter)": the politician's passages outvote the painter's
    "labour": "John Smith (1938 - 1994), the Labour politician, was born in Dalmally.",
    "leader": "The politician John Smith grew up in Dalmally and led the Labour Party.",
    "painter": "John Smith (1921 - 1987), a painter of harbours, was born in Leeds.",
}


@pytest.mark.parametrize("question", ["Where was John Smith (the painter) born?",
                                      "Where was John Smith (the 1950s painter) born?"])
def test_a_namesakes_descriptor_drafts_its_passages_alone_and_leads_the_duel(question):
    stratum, held, lead = period_reading(question, NAMESAKES, ["labour", "leader", "painter"], "Leeds", "painter",
                                         "Dalmally")
    assert stratum == [["painter"]] and held and lead == ["painter"]
    # as loud (one passage each): the duel is held only because the painter's passage meets the qualifier
    _, held, lead = period_reading(question, NAMESAKES, ["labour", "painter"], "Leeds", "painter", "Dalmally")
    assert held and lead == ["painter"]
    _, held, _ = period_reading("Where was John Smith born?", NAMESAKES, ["labour", "painter"], "Leeds", "painter",
                                "Dalmally")
    assert not held
