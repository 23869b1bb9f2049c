"""The shipped `grounded_rag` pipeline through the runtime, on fakes: standard RAG's answer, then the two checks."""

from haystack_cfrag import registry
from haystack_cfrag.cdf_rag import trace as cdf_trace
from tests import dark_knight as dk

from .test_cdf_rag_pipeline import runtime  # the Dark Knight store, the mock reader, a graph cache of its own


def test_registry_entry_has_the_checks_parameters_and_no_refinement():
    entry = registry.REGISTRY["grounded_rag"]
    assert entry.family == "cdf_rag" and entry.served and not entry.indexing  # issue 44: every query pipeline is served
    assert set(entry.parameters) == {"tau", "delta", "support_threshold", "rewrite_mode", "graph_top_k"}
    assert entry.request_parameters == ("graph_top_k",)
    assert registry.trace_view("grounded_rag") is cdf_trace


def test_standard_rag_answer_then_both_checks_in_the_trace(tmp_path):
    rt = runtime(tmp_path)
    standard = rt.ask("standard_rag", dk.QUESTION)
    grounded = rt.ask("grounded_rag", dk.QUESTION)
    assert set(grounded.trace) == {"causal_checker", "hallucination_checker"}  # no refiner: the question as asked
    # the same passages as standard RAG: the dense top 5, never the graph's
    assert [d["id"] for d in grounded.documents] == [d["id"] for d in standard.documents]
    hall, causal = grounded.trace["hallucination_checker"], grounded.trace["causal_checker"]
    assert causal["s_causal"] is None and not causal.get("regenerated")  # the mock extracts no edge to judge
    assert hall["s_hall"] is not None and hall["claims"] >= 1
    assert hall["scored_under"] == "answer prompt"  # the claims read as the reply to standard RAG's prompt
    if hall["rewritten"]:
        assert hall["original_answer"] == standard.answer and grounded.answer != standard.answer
    else:  # a check that does not fire leaves standard RAG's answer; its scorings generate nothing
        assert hall["decision"] == "keep" and grounded.answer == hall["original_answer"] == standard.answer
        assert grounded.llm["completion_tokens"] == standard.llm["completion_tokens"]
        assert grounded.llm["calls"] > standard.llm["calls"] == 1  # the answer, then the claims' scorings
    lines = cdf_trace.decision_lines(grounded.trace)
    assert [line.split(":")[0] for line in lines] == ["Causal check", "Hallucination check"]


def test_lite_entry_has_only_the_hallucination_checks_parameters():
    entry = registry.REGISTRY["grounded_rag_lite"]
    assert entry.family == "cdf_rag" and entry.served and not entry.indexing  # issue 44: every query pipeline is served
    assert set(entry.parameters) == {"delta", "support_threshold", "rewrite_mode"} and entry.request_parameters == ()
    assert registry.trace_view("grounded_rag_lite") is cdf_trace


def test_lite_is_standard_rag_then_the_hallucination_check_with_no_graph_built(tmp_path):
    rt = runtime(tmp_path)
    standard = rt.ask("standard_rag", dk.QUESTION)
    lite = rt.ask("grounded_rag_lite", dk.QUESTION)
    # one stage, still keyed by its name (the family's trace view and the evaluation's records read it so)
    assert set(lite.trace) == {"hallucination_checker"}
    assert [d["id"] for d in lite.documents] == [d["id"] for d in standard.documents]
    assert rt.graph_stats == [] and not (tmp_path / "graph").exists()  # no extraction, no graph cache written
    hall = lite.trace["hallucination_checker"]
    assert hall["s_hall"] is not None and hall["claims"] >= 1
    assert hall["scored_under"] == "answer prompt"  # the claims read as the reply to standard RAG's prompt
    if not hall["rewritten"]:
        assert lite.answer == standard.answer and lite.llm["completion_tokens"] == standard.llm["completion_tokens"]
    assert [line.split(":")[0] for line in cdf_trace.decision_lines(lite.trace)] == ["Hallucination check"]
    # a build-time parameter reaches the checker (the table is the lite one's)
    flagged = rt.ask("grounded_rag_lite", dk.QUESTION, {"support_threshold": 0.0, "rewrite_mode": "reanswer"})
    assert flagged.trace["hallucination_checker"]["decision"] == "rewrite"
