"""The shipped `cdf_rag` pipeline through the runtime, on fakes: refinement, two paths, both checks, in the trace."""

import pytest
from haystack.document_stores.in_memory import InMemoryDocumentStore

from haystack_cfrag import registry
from haystack_cfrag.cdf_rag import trace as cdf_trace
from haystack_cfrag.evaluation.systems import check_systems
from haystack_cfrag.runtime import Runtime
from haystack_cfrag.testing import MockChatGenerator
from tests import dark_knight as dk
from tests.fakes import HashingDocumentEmbedder, HashingTextEmbedder


def runtime(tmp_path):
    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    store.write_documents(HashingDocumentEmbedder().run(dk.documents())["documents"])
    return Runtime(store=store, chat_generator=MockChatGenerator(), text_embedder=HashingTextEmbedder(),
                   allowed_modules=["tests"], graph_cache=tmp_path / "graph",
                   graph_extractor="llm")  # the mock extracts


def test_registry_entry():
    entry = registry.REGISTRY["cdf_rag"]
    assert entry.family == "cdf_rag" and entry.served and set(entry.request_parameters) == {"refinement", "graph_top_k"}
    assert registry.trace_view("cdf_rag") is cdf_trace


def test_each_stage_leaves_its_trace_and_the_loop_stays_bounded(tmp_path):
    rt = runtime(tmp_path)
    result = rt.ask("cdf_rag", dk.QUESTION, {"refinement": "none"})
    assert result.answer and result.documents
    assert set(result.trace) == {"refiner", "causal_checker", "hallucination_checker"}
    assert result.trace["refiner"]["action"] == "none"  # no refinement call
    hall = result.trace["hallucination_checker"]
    assert hall["decision"] and hall["claims"] >= 1 and hall["s_hall"] is not None
    causal = result.trace["causal_checker"]
    assert causal["edges"] == 0 and causal["s_causal"] is None  # the mock extracts no graph: nothing to judge
    # the answer, at most one regeneration and one rewrite: the bound of the loop
    assert 1 <= result.llm["calls"] <= 3
    lines = cdf_trace.decision_lines(result.trace)
    assert [line.split(":")[0] for line in lines] == ["Refinement", "Causal check", "Hallucination check"]


def test_a_refinement_that_does_not_parse_falls_back_to_the_question_and_the_run_goes_on(tmp_path):
    rt = runtime(tmp_path)
    result = rt.ask("cdf_rag", dk.QUESTION, {"refinement": "expand"})
    refiner = result.trace["refiner"]  # the mock answers the expansion prompt with a draft, not a question
    assert refiner["requested"] == "expand" and refiner["calls"] == 1
    assert refiner["fallback"] and refiner["action"] == "none"
    assert "shares no content word" in refiner["fallback_reason"]
    assert result.answer and result.llm["calls"] >= 2  # the refinement call, then the answer


def test_the_merge_mode_is_a_build_parameter_with_its_range(tmp_path):
    rt = runtime(tmp_path)
    assert rt.built("cdf_rag").get_component("merger").merge_mode == "rrf"  # the file's default
    assert rt.built("cdf_rag", {"merge_mode": "interleave"}).get_component("merger").merge_mode == "interleave"
    result = rt.ask("cdf_rag", dk.QUESTION, {"refinement": "none", "merge_mode": "interleave"})
    assert result.answer and result.documents
    with pytest.raises(ValueError, match="'merge_mode' must be one of 'rrf', 'interleave', 'dense_only', "
                                         "got a string"):
        check_systems("cdf_rag[merge_mode=zip]")  # what `cfrag eval --systems` checks before any run


def test_build_parameters_of_every_family_reach_their_component(tmp_path):
    """The runtime resolves a name to the shipped file: that file keeps its family's table (it once got CF-RAG's)."""
    rt = runtime(tmp_path)
    assert rt.built("cdf_rag", {"delta": 0.3, "tau": 0.2}).get_component("hallucination_checker").delta == 0.3
    assert rt.built("cdf_rag", {"delta": 0.3, "tau": 0.2}).get_component("causal_checker").tau == 0.2
    assert rt.built("grounded_rag", {"delta": 0.7}).get_component("hallucination_checker").delta == 0.7
    assert rt.built("cer", {"theta": 0.6}).get_component("selector").settings.theta == 0.6


@pytest.mark.parametrize("name", ["cdf_rag", "grounded_rag"])
def test_the_rewrite_mode_and_support_threshold_are_build_parameters(tmp_path, name):
    rt = runtime(tmp_path)
    checker = rt.built(name, {"rewrite_mode": "reanswer", "support_threshold": -0.25}).get_component(
        "hallucination_checker")
    assert (checker.rewrite_mode, checker.support_threshold) == ("reanswer", -0.25)
    assert rt.built(name).get_component("hallucination_checker").rewrite_mode == "correct"  # the paper's, by default
    with pytest.raises(ValueError, match=r"'support_threshold' must be a number in \[-20, 0\]"):
        check_systems(f"{name}[support_threshold=0.5]")
    with pytest.raises(ValueError, match="'rewrite_mode' must be one of 'correct', 'reanswer', got"):
        check_systems(f"{name}[rewrite_mode=redo]")


@pytest.mark.parametrize(("name", "parameter", "node"), [
    ("cdf_rag", "refiner_model", "refiner"), ("cdf_rag_auto", "refiner_model", "refiner"),
    ("causal_rag", "summarizer_model", "summarizer"), ("causal_rag_auto", "summarizer_model", "summarizer")])
def test_an_auxiliary_call_moves_to_the_small_model_by_a_build_parameter(tmp_path, name, parameter, node):
    """Issue 61's lever: the refinement (the summary) on the runtime's auxiliary model, the reader's prompt cache
    left to the answer; when the parameter names the reader, the reader makes the call."""
    from haystack_cfrag.models import EMBEDDED_LLM, EMBEDDED_SMALL_LLM  # noqa: PLC0415

    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    store.write_documents(HashingDocumentEmbedder().run(dk.documents())["documents"])
    rt = Runtime(store=store, chat_generator=MockChatGenerator(), text_embedder=HashingTextEmbedder(),
                 allowed_modules=["tests"], graph_cache=tmp_path / "graph", graph_extractor="llm",
                 aux_llm=EMBEDDED_SMALL_LLM)
    rt.models.aux = aux = MockChatGenerator(seed=1)  # the auxiliary model, "loaded" (configured unlike the reader)
    assert rt.built(name, {parameter: EMBEDDED_SMALL_LLM}).get_component(node).chat_generator is aux
    assert rt.built(name, {parameter: EMBEDDED_LLM}).get_component(node).chat_generator is not aux
    # the method's own file asks the reader; its cascade's escalation the small model (its `family.Cascade`)
    assert (rt.built(name).get_component(node).chat_generator is aux) == name.endswith("_auto")
    with pytest.raises(ValueError, match=f"'{parameter}' must be one of"):
        check_systems(f"{name}[{parameter}=gpt-4]")
