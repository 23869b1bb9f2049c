"""The shipped `causal_rag` pipeline through the runtime: the graph built once for the store, its nodes kept apart;
the summary in one call by default, the official two with `summary_calls=2` (per request, `--param`, eval system)."""

import pytest
import yaml
from haystack import Document
from haystack.components.builders import PromptBuilder
from haystack.components.builders.chat_prompt_builder import ChatPromptBuilder
from haystack.core.serialization import component_from_dict
from haystack.document_stores.in_memory import InMemoryDocumentStore

from haystack_cfrag import registry
from haystack_cfrag.causal_rag.prompts import (
    CAUSAL_PATHS_PROMPT,
    CAUSAL_RAG_ANSWER_TEMPLATE,
    ONE_CALL_SUMMARY_PROMPT,
    SUMMARY_FIRST_ANSWER_TEMPLATE,
)
from haystack_cfrag.common.prompting import STANDARD_RAG_TEMPLATE
from haystack_cfrag.pipelines import pipeline_path
from haystack_cfrag.runtime import Runtime
from tests.fakes import HashingDocumentEmbedder, HashingTextEmbedder
from tests.unit.causal_rag.fakes import ScriptedExtractor

PASSAGES = [
    Document(id="p-rain", content="Heavy rain fell for a week and the river rose into a flood."),
    Document(id="p-flood", content="The flood damaged the crops and closed the roads for days."),
    Document(id="p-drought", content="Drought the year before had already damaged the crops."),
    Document(id="p-other", content="The museum opened a new wing for modern art."),
]


def runtime(tmp_path, extractor=None):
    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    store.write_documents(HashingDocumentEmbedder().run(PASSAGES)["documents"])
    return Runtime(store=store, chat_generator=extractor or ScriptedExtractor(), text_embedder=HashingTextEmbedder(),
                   allowed_modules=["tests"], graph_cache=tmp_path / "graph", graph_extractor="llm")  # scripted replies


def test_registry_entries_and_parameters():
    assert registry.REGISTRY["causal_rag"].request_parameters == ("graph_top_k", "hops", "summary_calls")
    assert registry.REGISTRY["causal_rag_indexing"].indexing
    assert "causal_rag_indexing" not in registry.query_pipelines()
    assert "causal_rag_indexing" not in registry.served_pipelines()


def test_the_graph_is_built_once_for_the_store_and_its_nodes_stay_out_of_the_passage_store(tmp_path):
    rt = runtime(tmp_path)
    result = rt.ask("causal_rag", "What damaged the crops after the heavy rain?", {"hops": 2, "graph_top_k": 2})
    trace = result.trace
    assert trace["seeds"] and trace["hops"] == 2 and trace["top_k"] == 2  # the per-request k and s reached it
    assert len(rt.graph_stats) == 1 and rt.graph_stats[0]["passages"] == 4
    assert all(not d.meta.get("cfrag_graph_node") for d in rt.store.filter_documents())  # the user's store untouched
    assert rt.store.count_documents() == 4
    graph = rt.built("causal_rag").get_component("graph_retriever")
    assert graph.node_retriever.document_store is rt.stores.graph_store() and graph.document_store is rt.store
    assert rt.stores.graph_store().count_documents() >= 4  # rain, flood, crops, roads, drought …
    assert result.documents  # the merged dense + graph passages the reader read
    rt.ask("causal_rag", "What closed the roads?")
    assert len(rt.graph_stats) == 1  # built once per store


def test_a_second_store_gets_its_own_graph_and_extraction_comes_from_the_cache(tmp_path):
    extractor = ScriptedExtractor()
    rt = runtime(tmp_path, extractor)
    rt.ask("causal_rag", "What damaged the crops?")
    calls = len(extractor.prompts)
    other = InMemoryDocumentStore(embedding_similarity_function="cosine")
    other.write_documents(HashingDocumentEmbedder().run(PASSAGES[:2])["documents"])
    rt.use_store(other)
    assert len(rt.graph_stats) == 2 and rt.graph_stats[1]["passages"] == 2
    assert rt.graph_stats[1].get("cached") == 2  # the two passages' extractions were cached by the first build
    assert len(extractor.prompts) == calls  # no extraction call for them


def test_a_question_no_node_matches_falls_back_to_the_dense_passages(tmp_path):
    rt = runtime(tmp_path, ScriptedExtractor(table={}))  # no extraction yields a triple: an empty graph
    result = rt.ask("causal_rag", "Which wing did the museum open?")
    assert result.trace["seeds"] == [] and result.documents


# ---------------------------------------------------------------- the summary's recipe: one call, or the official two
Q = "What damaged the crops after the heavy rain?"
ONE_CALL_HEAD = ONE_CALL_SUMMARY_PROMPT.split("{graph_data}")[0]
PATHS_HEAD = CAUSAL_PATHS_PROMPT.split("{graph_data}")[0]


def _asked(rt, extractor, params=None):
    """The query-time prompts of one question once the graph is built (the extraction calls come before): the
    summarizer reads with the pipeline's `generator` node (an injected reader configured as a node is that node:
    one model, one KV cache), so the node holds the summary call(s), then the answer."""
    reader = rt.prepare("causal_rag", params).get_component("generator")
    before, asked = len(extractor.prompts), len(reader.prompts)
    result = rt.ask("causal_rag", Q, params)
    assert len(extractor.prompts) == before  # nothing on the runtime's own reader at query time
    return result, reader.prompts[asked:]


def test_the_default_makes_one_summary_call_and_answers_with_standard_rags_prompt_plus_notes(tmp_path):
    extractor = ScriptedExtractor()
    rt = runtime(tmp_path, extractor)
    result, prompts = _asked(rt, extractor)
    assert len(prompts) == 2 and prompts[0].startswith(ONE_CALL_HEAD)  # one summary call, then the answer
    answer_prompt = prompts[1]
    assert answer_prompt.startswith("Answer the question using the documents below.\n\nDocuments:\n[1] ")
    assert "\nNotes (a causal summary of the documents, for context only):\n" in answer_prompt
    assert answer_prompt.endswith(f"Question: {Q}\n\nReply in this format:\nAnswer: <the short answer only>")
    summarizer = result.outputs["summarizer"]
    assert summarizer["trace"]["calls"] == 1 and summarizer["trace"]["summary"]  # the summary stays in the trace


def test_summary_calls_2_per_request_is_the_archived_pipeline_prompt_for_prompt(tmp_path):
    extractor = ScriptedExtractor()
    rt = runtime(tmp_path, extractor)
    result, prompts = _asked(rt, extractor, {"summary_calls": 2})
    assert len(prompts) == 3 and prompts[0].startswith(PATHS_HEAD)
    assert prompts[1].startswith("---Role---\nYou are a helpful assistant responding to questions about data")
    assert prompts[2].startswith("Answer the question using the causal summary and the documents below.\n\n"
                                 "Causal summary:\n")
    assert result.outputs["summarizer"]["trace"]["summary_calls"] == 2
    _, again = _asked(rt, extractor)  # the same built pipeline: the next request is the default again
    assert len(again) == 2 and again[0].startswith(ONE_CALL_HEAD)


def test_summary_max_tokens_builds_the_pipeline_with_it(tmp_path):
    rt = runtime(tmp_path)
    assert rt.built("causal_rag").get_component("summarizer").summary_max_tokens == 64
    built = rt.prepare("causal_rag", {"summary_max_tokens": 128})
    assert built.get_component("summarizer").summary_max_tokens == 128


def _prompt_builder():
    data = yaml.safe_load(pipeline_path("causal_rag").read_text())["components"]["prompt_builder"]
    return component_from_dict(ChatPromptBuilder, data, "prompt_builder")


def test_the_files_answer_prompt_is_the_templates_and_without_a_summary_standard_rags():
    docs = [Document(content="Heavy rain flooded the valley."), Document(content="The flood ruined the crops.")]
    builder = _prompt_builder()

    def file(summary, calls):
        return builder.run(query=Q, documents=docs, summary=summary, summary_calls=calls)["prompt"][0].text

    def template(text, summary):
        return PromptBuilder(template=text).run(query=Q, documents=docs, summary=summary)["prompt"]

    for summary in ("The flood ruined the crops.", ""):
        assert file(summary, 1) == template(CAUSAL_RAG_ANSWER_TEMPLATE, summary)
        assert file(summary, 2) == template(SUMMARY_FIRST_ANSWER_TEMPLATE, summary)
    assert file("", 1) == template(STANDARD_RAG_TEMPLATE, "")  # no subgraph: standard RAG's prompt, byte for byte
    standard = yaml.safe_load(pipeline_path("standard_rag").read_text())["components"]["prompt_builder"]
    assert template(STANDARD_RAG_TEMPLATE, "") == component_from_dict(ChatPromptBuilder, standard, "pb").run(
        query=Q, documents=docs)["prompt"][0].text


def test_the_served_request_takes_summary_calls_and_refuses_it_out_of_range(tmp_path):
    from haystack_cfrag.serving.requests import RequestError, check_run_request
    from haystack_cfrag.serving.service import CFRAGService, ServingConfig

    table = registry.REGISTRY["causal_rag"].request_table
    assert check_run_request({"question": Q, "summary_calls": 2}, table) == (Q, {"summary_calls": 2})
    with pytest.raises(RequestError) as bad:
        check_run_request({"question": Q, "summary_calls": 3}, table)
    assert "summary_calls" in str(bad.value) and "[1, 2]" in str(bad.value) and "\n" not in str(bad.value)
    with pytest.raises(RequestError, match="summary_max_tokens"):  # build-time: the CLI's and eval's, not a request's
        check_run_request({"question": Q, "summary_max_tokens": 32}, table)
    extractor = ScriptedExtractor()
    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    store.write_documents(HashingDocumentEmbedder().run(PASSAGES)["documents"])
    service = CFRAGService(ServingConfig(generator="mock"), store=store, chat_generator=extractor,
                           text_embedder=HashingTextEmbedder(), allowed_modules=["tests"])
    service.runtime.stores.graph_cache = tmp_path / "graph"
    reader = service.runtime.prepare("causal_rag").get_component("generator")  # the summarizer reads with it too
    before = len(reader.prompts)
    out = service.answer("causal_rag", Q, {"summary_calls": 2})
    assert out["pipeline"] == "causal_rag" and len(reader.prompts) - before == 3  # the report, the summary, the answer
    assert reader.prompts[before].startswith(PATHS_HEAD)
    before = len(reader.prompts)
    service.answer("causal_rag", Q)
    assert len(reader.prompts) - before == 2 and reader.prompts[before].startswith(ONE_CALL_HEAD)


def test_the_cli_and_eval_systems_take_summary_calls():
    from click.testing import CliRunner

    from haystack_cfrag.cli.app import main
    from haystack_cfrag.evaluation.systems import parse_system

    bad = CliRunner().invoke(main, ["ask", "q?", "--pipeline", "causal_rag", "--param", "summary_calls=3"])
    assert bad.exit_code == 2 and "summary_calls" in bad.output and "[1, 2]" in bad.output
    official = parse_system("causal_rag[summary_calls=2]")
    assert (official.pipeline, official.params) == ("causal_rag", {"summary_calls": 2})
    assert parse_system("causal_rag[summary_max_tokens=128]").params == {"summary_max_tokens": 128}
    with pytest.raises(ValueError, match=r"'summary_calls' must be an integer in \[1, 2\], got 0"):
        parse_system("causal_rag[summary_calls=0]")
