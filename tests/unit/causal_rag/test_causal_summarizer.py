"""CausalSummarizer: the two calls, their prompts, degradations, overrides, serialisation."""

import asyncio

import pytest
from haystack import Document

from haystack_cfrag.causal_rag import CausalSummarizer
from haystack_cfrag.causal_rag.prompts import CAUSAL_PATHS_PROMPT, CAUSAL_SUMMARY_PROMPT, DEFAULT_RESPONSE_TYPE

from .fakes import ScriptedGenerator

Q = "Why were the crops ruined?"
EDGES = [{"source": "Flood", "target": "Crops", "relation": "DAMAGES", "passage_ids": ["p2"]},
         {"source": "Heavy rain", "target": "Flood", "relation": "CAUSES", "passage_ids": ["p1"]}]
NODES = [Document(content="Crops", meta={"node_id": "Crops", "node_type": "Plant"}),
         Document(content="Flood", meta={"node_id": "Flood", "node_type": "Event"})]
PASSAGES = [Document(id="p2", content="The flood ruined the crops.")]


def summarizer(replies=("Report: rain → flood → crops.", "The flood, caused by heavy rain, ruined the crops."),
               fail=(), **kwargs):
    return CausalSummarizer(chat_generator=ScriptedGenerator(list(replies), list(fail)), **kwargs)


def test_two_calls_report_then_summary_with_the_official_prompts():
    s = summarizer()
    out = s.run(query=Q, nodes=NODES, causal_edges=EDGES, documents=PASSAGES)
    assert out["paths"] == "Report: rain → flood → crops."
    assert out["summary"] == "The flood, caused by heavy rain, ruined the crops." and out["degradations"] == []
    paths_prompt, summary_prompt = s.chat_generator.prompts
    graph = ("**Entities:**\n- Crops (type: Plant)\n- Flood (type: Event)\n\n**Causal Relationships:**\n"
             "- Flood (a Event) --[DAMAGES]--> Crops (a Plant)\n"
             "- Heavy rain (a entity) --[CAUSES]--> Flood (a Event)")
    assert paths_prompt == CAUSAL_PATHS_PROMPT.format(graph_data=graph)
    assert summary_prompt == CAUSAL_SUMMARY_PROMPT.format(causal_summary=out["paths"],
                                                          response_type=DEFAULT_RESPONSE_TYPE, query=Q)
    assert "The flood ruined the crops." not in paths_prompt     # passages only with passages_in_prompt
    assert out["trace"]["calls"] == 2 and out["trace"]["edges"] == 2 and out["trace"]["graph_data"] == graph


def test_passages_can_be_listed_under_the_subgraph():
    s = summarizer(passages_in_prompt=True, max_passage_chars=50)
    s.run(query=Q, nodes=NODES, causal_edges=EDGES, documents=PASSAGES)
    assert "**Source Passages:**\n[1] The flood ruined the crops." in s.chat_generator.prompts[0]


def test_no_subgraph_makes_no_call():
    s = summarizer()
    out = s.run(query=Q, nodes=[], causal_edges=[])
    assert out["summary"] == out["paths"] == "" and s.chat_generator.prompts == []
    assert out["degradations"] == [{"stage": "causal_paths", "reason": "no_subgraph"}]


def test_a_failed_report_leaves_empty_outputs_and_a_failed_summary_falls_back_to_the_report():
    first = summarizer(fail=[0])
    out = first.run(query=Q, nodes=NODES, causal_edges=EDGES)
    assert out["summary"] == out["paths"] == "" and len(first.chat_generator.prompts) == 1
    assert out["degradations"][0]["stage"] == "causal_paths" and "generator down" in out["degradations"][0]["error"]
    second = summarizer(fail=[1]).run(query=Q, nodes=NODES, causal_edges=EDGES)
    assert second["summary"] == second["paths"] == "Report: rain → flood → crops."
    assert second["degradations"][0]["stage"] == "causal_summary"
    empty = summarizer(replies=["  "]).run(query=Q, nodes=NODES, causal_edges=EDGES)
    assert empty["summary"] == "" and empty["degradations"][0]["reason"] == "empty reply"
    with pytest.raises(RuntimeError, match="chat generator failed"):
        summarizer(fail=[0], raise_on_failure=True).run(query=Q, nodes=NODES, causal_edges=EDGES)


def test_malformed_inputs_are_skipped_or_refused():
    s = summarizer()
    out = s.run(query=Q, nodes=["junk", Document(content="Crops")], causal_edges=[{"source": 1}, "x", EDGES[0]])
    assert out["trace"]["nodes"] == 1 and out["trace"]["edges"] == 1
    with pytest.raises(ValueError, match="query"):
        s.run(query="  ", nodes=NODES, causal_edges=EDGES)
    with pytest.raises(ValueError, match="lists"):
        s.run(query=Q, nodes="Crops", causal_edges=EDGES)


def test_prompt_overrides_and_limits():
    s = summarizer(prompt_templates={"paths": "G:\n{graph_data}", "summary": "{query}|{response_type}|{causal_summary}"},
                   response_type="One short paragraph", max_graph_chars=200, max_report_chars=200)
    s.run(query=Q, nodes=NODES, causal_edges=EDGES * 20)
    assert s.chat_generator.prompts[0].startswith("G:\n**Entities:**") and len(s.chat_generator.prompts[0]) < 220
    assert s.chat_generator.prompts[1] == f"{Q}|One short paragraph|Report: rain → flood → crops."
    for bad, match in [({"paths": "no field"}, "lacks the placeholder {graph_data}"),
                       ({"sumary": "{query}"}, "unknown key 'sumary'"),
                       ({"summary": "{query} {causal_summary}"}, "lacks the placeholder {response_type}")]:
        with pytest.raises(ValueError, match=match):
            summarizer(prompt_templates=bad)
    with pytest.raises(ValueError, match="response_type"):
        summarizer(response_type="")


def test_round_trip_and_async_twin():
    s = summarizer(response_type="One paragraph", generation_kwargs={"max_tokens": 200}, timeout_s=10.0,
                   prompt_templates={"paths": "G {graph_data}"}, passages_in_prompt=True)
    restored = CausalSummarizer.from_dict(s.to_dict())
    assert restored.to_dict() == s.to_dict() and isinstance(restored.chat_generator, ScriptedGenerator)
    sync = summarizer().run(query=Q, nodes=NODES, causal_edges=EDGES)
    async_ = asyncio.run(summarizer().run_async(query=Q, nodes=NODES, causal_edges=EDGES))
    assert sync == async_
