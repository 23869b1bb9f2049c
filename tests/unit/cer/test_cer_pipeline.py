"""The shipped `cer` pipeline: registry entry, YAML, one reader for drafting, scoring and answering, the runtime."""

import pytest
from haystack.document_stores.in_memory import InMemoryDocumentStore

from haystack_cfrag import registry
from haystack_cfrag.cer import trace as cer_trace
from haystack_cfrag.cer.parameters import PARAMETERS
from haystack_cfrag.cfrag.parameters import ParameterError
from haystack_cfrag.pipelines.loading import load_pipeline
from haystack_cfrag.registry import resolve
from haystack_cfrag.runtime import Runtime
from haystack_cfrag.testing import MockChatGenerator
from tests import dark_knight as dk
from tests.fakes import HashingDocumentEmbedder, HashingTextEmbedder


def runtime():
    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    store.write_documents(HashingDocumentEmbedder().run(dk.documents())["documents"])
    return Runtime(store=store, chat_generator=MockChatGenerator(), text_embedder=HashingTextEmbedder(),
                   allowed_modules=["tests"])


def test_cer_is_a_served_entry_of_its_family_with_its_own_table():
    entry = registry.REGISTRY["cer"]
    assert entry.family == "cer" and entry.served and not entry.injection
    # tunable per request
    assert entry.parameters is PARAMETERS and entry.request_parameters == ("theta", "entailment")
    assert registry.parameters_of("cer")["theta"].check(0.6) == 0.6
    with pytest.raises(ParameterError, match="theta"):
        PARAMETERS["theta"].check(0.0)
    assert registry.trace_view("cer") is cer_trace


def test_the_file_declares_the_final_answer_and_the_selectors_trace():
    assert resolve("cer").outputs == {"answers": "answer_builder.answers", "trace": "selector.trace"}


def test_the_selector_drafts_and_scores_with_one_reader_at_any_depth():
    # the shipped file as it is: its embedder and reader classes (not in the Haystack 2.x tests)
    pytest.importorskip("haystack_integrations.components.generators.llama_cpp")
    pytest.importorskip("haystack_integrations.components.embedders.sentence_transformers")
    pipe = load_pipeline("cer")
    selector = pipe.get_component("selector")
    assert selector.support_scorer.chat_generator is selector.chat_generator  # shared two levels down
    # the reader injected with the answering node's configuration is that node: one model, one KV cache
    assert pipe.get_component("generator") is selector.chat_generator


def test_runtime_answers_from_the_kept_set_and_reads_the_builders_answer_not_the_draft():
    rt = runtime()
    result = rt.ask("cer", dk.QUESTION)
    trace = result.trace
    assert trace["kept"] and set(trace["kept"]) <= set(trace["pool"]) and len(trace["pool"]) == 5
    assert [d["id"] for d in result.documents] == trace["kept"]  # the generator read only the kept set
    assert result.answer == result.outputs["answer_builder"]["answers"][0].data.strip()
    assert "answer" not in result.outputs.get("selector", {}) or result.outputs["selector"]["answer"] == trace["answer"]
    assert result.llm["calls"] == 2  # the draft and the answer; the scorings read log-probabilities, no generation
    # ... and are counted beside the calls, as the selector's trace counts them
    assert result.llm["scorings"] == trace["scorer_calls"] > 0 and result.llm["scoring_tokens"] > 0
    pipe = rt.built("cer")
    # the scorer reads with the pipeline's own generator node (the same configuration as the runtime's reader)
    assert pipe.get_component("selector").support_scorer.chat_generator is pipe.get_component("generator")


def test_trace_lines_say_what_was_kept():
    trace = runtime().ask("cer", dk.QUESTION).trace
    line = cer_trace.decision_lines(trace)[0]
    assert line.startswith(f"Kept {len(trace['kept'])} of 5 passages")
    assert all(doc_id in cer_trace.format_trace(trace) for doc_id in trace["kept"])
    assert cer_trace.decision_lines({"fallback": True, "kept": ["a", "b"]}) == [
        "Kept the top 2 passages (the selection degraded)"]
