"""The arbitration trace's schema (`haystack_cfrag.cfrag.trace`) is what the ranker really writes.

Real traces from the Dark Knight fakes — with a duel, with the margin rule alone, with no usable
draft — must hold exactly the keys the TypedDicts declare, at every level, so the schema and the
ranker cannot drift apart.
"""

import json
from typing import Any, Literal, get_args, get_origin

import pytest
from haystack.dataclasses import GeneratedAnswer

from haystack_cfrag.cfrag import trace as tr
from haystack_cfrag.cfrag.components.arbitration_duel import ArbitrationDuel
from haystack_cfrag.cfrag.components.causal_arbitration_ranker import CausalArbitrationRanker
from haystack_cfrag.cfrag.components.counterfactual_query_expander import CounterfactualQueryExpander
from haystack_cfrag.cfrag.dataclasses import NO_EVIDENCE, Draft
from tests import dark_knight as dk
from tests.fakes import HashingDocumentEmbedder, HashingTextEmbedder, KeywordReader


def declared(typed_dict: Any) -> set[str]:
    return set(typed_dict.__required_keys__ | typed_dict.__optional_keys__)


def literal_values(tp: Any) -> set[str]:
    if get_origin(tp) is Literal:
        return set(get_args(tp))
    return set().union(*(literal_values(arg) for arg in get_args(tp)))


def counterfactuals() -> list[dict[str, Any]]:
    reader = KeywordReader(candidates=dk.CANDIDATES, counterfactual_reply=dk.COUNTERFACTUAL_REPLY)
    expander = CounterfactualQueryExpander(chat_generator=reader, text_embedder=HashingTextEmbedder(),
                                           similarity_threshold=0.3)
    return expander.run(query=dk.QUESTION)["counterfactuals"]


def arbitrated(*, duel: bool = False, duel_confirm: bool = False, duel_reading: str = "generate",
               **ranker_kwargs: Any) -> dict[str, Any]:
    """A ranker (then duel) trace over the Dark Knight case: a trap baseline, the cast challenger and a failed draft."""
    docs = {d.id: d for d in HashingDocumentEmbedder().run(dk.documents())["documents"]}
    reviews = [docs[f"review-{i}"] for i in range(4)]
    drafts = [Draft(index=0, answer="Christian Bale", documents=[docs["cast"]]),
              Draft(index=1, answer="Heath Ledger", documents=reviews),
              Draft(index=2, answer="", error="timeout")]
    baseline = GeneratedAnswer(data="Heath Ledger", query=dk.QUESTION, documents=reviews + [docs["cast"]], meta={})
    ranker = CausalArbitrationRanker(text_embedder=HashingTextEmbedder(), evidence="mentions", **ranker_kwargs)
    out = ranker.run(query=dk.QUESTION, drafts=drafts, answers=[baseline], counterfactuals=counterfactuals())
    if duel:
        out = ArbitrationDuel(chat_generator=ranker_kwargs.get("synthesizer"), confirm=duel_confirm,
                              reading=duel_reading).run(ruling=out["ruling"])
    return out["trace"]


def check_arbitrated(trace: dict[str, Any]) -> None:
    # reader_causal: only with causal_score="reader" (test_the_readers_test_has_exactly_the_declared_keys)
    assert set(trace) == declared(tr.Trace) - ({"reader_causal"} if "reader_causal" not in trace else set())
    assert trace["decision"] in literal_values(tr.TraceDecision)
    assert trace["counterfactual_details"]
    for detail in trace["counterfactual_details"]:
        assert set(detail) == declared(tr.CounterfactualDetail)
    scored, failed = tr.scored_drafts(trace), tr.failed_drafts(trace)
    assert scored and failed and len(scored) + len(failed) == len(trace["drafts"])
    for entry in scored:
        assert set(entry) == declared(tr.DraftEntry)
        assert set(entry["scores"]) == declared(tr.Scores)
        assert entry["evidence"]
        for evidence in entry["evidence"]:
            assert set(evidence) == declared(tr.EvidenceEntry)
    for entry in failed:
        assert set(entry) == declared(tr.FailedDraftEntry)
    assert json.loads(json.dumps(trace)) == trace


def test_a_trace_with_a_duel_has_exactly_the_declared_keys():
    trace = arbitrated(override_margin=1.0, duel=True, synthesizer=KeywordReader(candidates=dk.CANDIDATES))
    check_arbitrated(trace)
    assert set(trace["override"]) == declared(tr.OverrideEntry)
    generated = declared(tr.DuelEntry) - {"reading", "support"}   # a generated reading has no support scores
    assert set(trace["override"]["duel"]) == generated - {"confirm_answer"}   # no confirmation asked
    assert set(trace["override"]["duel"]["margin_rule"]) == declared(tr.MarginRuleEntry)
    # the duel replaced the baseline, so with duel_confirm a second reading was made and recorded
    confirmed = arbitrated(override_margin=1.0, duel=True, duel_confirm=True,
                           synthesizer=KeywordReader(candidates=dk.CANDIDATES))
    check_arbitrated(confirmed)
    assert set(confirmed["override"]["duel"]) == generated
    # read by the reader's support: its scores, no confirmation reading
    from tests.unit.cfrag.test_default_mechanisms import SupportReader

    scored = arbitrated(override_margin=1.0, duel=True, duel_reading="support_pmi",
                        synthesizer=SupportReader(candidates=dk.CANDIDATES))
    check_arbitrated(scored)
    assert set(scored["override"]["duel"]) == declared(tr.DuelEntry) - {"confirm_answer"}
    assert all(set(entry) == declared(tr.DuelSupportEntry) for entry in scored["override"]["duel"]["support"])


def test_the_readers_test_has_exactly_the_declared_keys():
    from tests.unit.cfrag.test_default_mechanisms import RoleReader

    trace = arbitrated(override_margin=0.05, synthesizer=RoleReader(candidates=dk.CANDIDATES), causal_score="reader")
    check_arbitrated(trace)
    assert "reader_causal" in trace and len(trace["reader_causal"]) == len(tr.scored_drafts(trace))
    assert all(set(entry) == declared(tr.ReaderCausalEntry) for entry in trace["reader_causal"])


def test_a_trace_of_the_margin_rule_has_exactly_the_declared_keys():
    trace = arbitrated(override_margin=0.05)
    check_arbitrated(trace)
    assert set(trace["override"]) == tr.OverrideEntry.__required_keys__   # no duel held


def test_a_trace_of_the_paper_path_has_exactly_the_declared_keys():
    trace = arbitrated()   # no override margin: the baseline is one draft among others
    check_arbitrated(trace)
    assert trace["override"] is None and trace["decision"] in {"consensus", "synthesis", "best_score"}


@pytest.mark.parametrize(("drafts", "decision"), [
    ([], "no_drafts"),
    ([Draft(index=0, answer="", error="timeout"), Draft(index=1, answer="")], "all_drafts_failed"),
    ([Draft(index=0, answer="", error=NO_EVIDENCE)], "no_evidence"),
])
def test_a_trace_without_a_usable_draft_has_the_required_keys_only(drafts, decision):
    trace = CausalArbitrationRanker().run(query=dk.QUESTION, drafts=drafts, counterfactuals=counterfactuals())["trace"]
    assert set(trace) == set(tr.Trace.__required_keys__)
    # the other optional key, reader_causal, comes only with causal_score="reader"
    assert set(tr.ARBITRATION_KEYS) == set(tr.Trace.__optional_keys__) - {"reader_causal"}
    assert trace["decision"] == decision and trace["decision"] in literal_values(tr.TraceDecision)
    assert (trace["ranking"], trace["agreement"], trace["override"], trace["answer"]) == ([], 0.0, None, "")
    for entry in trace["drafts"]:
        assert set(entry) == declared(tr.FailedDraftEntry)
    assert json.loads(json.dumps(trace)) == trace


def test_why_no_answer_reads_the_trace():
    assert tr.why_no_answer(None) == "the model's reply held no answer"   # a pipeline without arbitration
    failed = CausalArbitrationRanker().run(query=dk.QUESTION, drafts=[Draft(index=0, answer="", error="timeout")])
    assert tr.why_no_answer(failed["trace"]) == "every LLM call failed (1 of 1 drafts; see the trace)"
    empty = CausalArbitrationRanker().run(query=dk.QUESTION, drafts=[])
    assert tr.why_no_answer(empty["trace"]) == "no evidence was found in the store"
    assert tr.why_no_answer(arbitrated()) == "the model's reply held no answer"
