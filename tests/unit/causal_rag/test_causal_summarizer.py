"""CausalSummarizer: the one call (default) and the official two, their prompts, degradations, overrides,
serialisation."""

import asyncio
import hashlib

import pytest
from haystack import Document, component
from haystack.dataclasses import ChatMessage

from haystack_cfrag.causal_rag import CausalSummarizer
from haystack_cfrag.causal_rag.prompts import (
    CAUSAL_PATHS_PROMPT,
    CAUSAL_SUMMARY_PROMPT,
    DEFAULT_RESPONSE_TYPE,
    ONE_CALL_SUMMARY_PROMPT,
    SUMMARY_FIRST_ANSWER_TEMPLATE,
)

from .fakes import ScriptedGenerator

Q = "Why were the crops ruined?"
EDGES = [{"source": "Flood", "target": "Crops", "relation": "DAMAGES", "passage_ids": ["p2"]},
         {"source": "Heavy rain", "target": "Flood", "relation": "CAUSES", "passage_ids": ["p1"]}]
NODES = [Document(content="Crops", meta={"node_id": "Crops", "node_type": "Plant"}),
         Document(content="Flood", meta={"node_id": "Flood", "node_type": "Event"})]
PASSAGES = [Document(id="p2", content="The flood ruined the crops.")]


GRAPH = ("**Entities:**\n- Crops (type: Plant)\n- Flood (type: Event)\n\n**Causal Relationships:**\n"
         "- Flood (a Event) --[DAMAGES]--> Crops (a Plant)\n"
         "- Heavy rain (a entity) --[CAUSES]--> Flood (a Event)")
ONE_REPLY = "Causal paths:\n- Heavy rain -> CAUSES -> Flood -> DAMAGES -> Crops\nSummary: The flood ruined the crops."
ARCHIVED_SHA256 = {  # the prompts of the runs archived before 2026-11-27: their reply caches replay by prompt
    "CAUSAL_PATHS_PROMPT": "2f7a405fda966d832bfb92ea35505203767b86c25ea1c3a5294f5f548ddc09a5",
    "CAUSAL_SUMMARY_PROMPT": "61d380342d605da7d3ba181ecf814dee5e04e94f6845660a3322b1e1045b874d",
    "SUMMARY_FIRST_ANSWER_TEMPLATE": "29b280821f686b5c2d1c4f8ed836757f3fc699062882ff09232a1a7a045f5962",
}


def summarizer(replies=("Report: rain → flood → crops.", "The flood, caused by heavy rain, ruined the crops."),
               fail=(), **kwargs):
    kwargs.setdefault("summary_calls", 2)  # the official recipe; the one-call default has tests of its own below
    return CausalSummarizer(chat_generator=ScriptedGenerator(list(replies), list(fail)), **kwargs)


@component
class KwargsGenerator:
    """Records each call's prompt and generation_kwargs; replies `reply`."""

    def __init__(self, reply: str = ONE_REPLY) -> None:
        self.reply, self.calls = reply, []

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage], generation_kwargs: dict | None = None) -> dict:
        self.calls.append((messages[-1].text, generation_kwargs))
        return {"replies": [ChatMessage.from_assistant(self.reply)]}


def test_the_default_is_one_call_for_the_paths_and_the_summary_within_its_token_budget():
    gen = KwargsGenerator()
    s = CausalSummarizer(chat_generator=gen, generation_kwargs={"temperature": 0.0, "max_tokens": 256})
    out = s.run(query=Q, nodes=NODES, causal_edges=EDGES, documents=PASSAGES)
    assert len(gen.calls) == 1 and out["summary_calls"] == 1 and out["degradations"] == []
    prompt, kwargs = gen.calls[0]
    assert prompt == ONE_CALL_SUMMARY_PROMPT.format(graph_data=GRAPH, query=Q)
    assert kwargs == {"temperature": 0.0, "max_tokens": 64}  # the summary is context: 64 tokens, not 256
    assert out["summary"] == "The flood ruined the crops."
    assert out["paths"] == "- Heavy rain -> CAUSES -> Flood -> DAMAGES -> Crops"
    trace = out["trace"]
    assert trace["calls"] == 1 and trace["summary_calls"] == 1 and trace["max_tokens"] == 64
    assert trace["summary"] == out["summary"] and trace["paths"] == out["paths"]  # both stay in the trace
    budget = KwargsGenerator()
    CausalSummarizer(chat_generator=budget, summary_max_tokens=32).run(query=Q, nodes=NODES, causal_edges=EDGES)
    assert budget.calls[0][1] == {"max_tokens": 32}


def test_one_call_reply_without_a_summary_label_is_both_and_a_failure_degrades():
    out = CausalSummarizer(chat_generator=KwargsGenerator("Heavy rain flooded the crops.")).run(
        query=Q, nodes=NODES, causal_edges=EDGES)
    assert out["summary"] == out["paths"] == "Heavy rain flooded the crops."
    failed = CausalSummarizer(chat_generator=ScriptedGenerator(["x"], [0])).run(query=Q, nodes=NODES,
                                                                            causal_edges=EDGES)
    assert failed["summary"] == failed["paths"] == "" and failed["degradations"][0]["stage"] == "causal_paths_summary"
    empty = CausalSummarizer(chat_generator=KwargsGenerator("  ")).run(query=Q, nodes=NODES, causal_edges=EDGES)
    assert empty["summary"] == "" and empty["degradations"][0]["reason"] == "empty reply"
    with pytest.raises(RuntimeError, match="chat generator failed"):
        CausalSummarizer(chat_generator=ScriptedGenerator(["x"], [0]), raise_on_failure=True).run(
            query=Q, nodes=NODES, causal_edges=EDGES)


def test_one_call_is_not_made_when_the_subgraph_has_no_relation():
    gen = KwargsGenerator()
    out = CausalSummarizer(chat_generator=gen).run(query=Q, nodes=NODES, causal_edges=[])
    assert gen.calls == [] and out["summary"] == "" and out["trace"]["skipped"] == "no_relations"
    assert out["degradations"] == []  # nothing failed: the answer reads the passages, as standard RAG
    official = summarizer()
    official.run(query=Q, nodes=NODES, causal_edges=[])
    assert len(official.chat_generator.prompts) == 2  # the official recipe still asks about bare nodes


def test_summary_calls_2_per_run_asks_the_official_two_with_the_archived_prompts_byte_for_byte():
    from haystack_cfrag.causal_rag import prompts

    for name, digest in ARCHIVED_SHA256.items():
        assert hashlib.sha256(getattr(prompts, name).encode()).hexdigest() == digest, name
    gen = KwargsGenerator()
    s = CausalSummarizer(chat_generator=gen, response_type="One short paragraph",
                         generation_kwargs={"temperature": 0.0})
    out = s.run(query=Q, nodes=NODES, causal_edges=EDGES, summary_calls=2)
    assert out["summary_calls"] == 2 and out["trace"]["calls"] == 2
    assert [c[0] for c in gen.calls] == [CAUSAL_PATHS_PROMPT.format(graph_data=GRAPH),
                                         CAUSAL_SUMMARY_PROMPT.format(causal_summary=ONE_REPLY,
                                                                      response_type="One short paragraph", query=Q)]
    assert [c[1] for c in gen.calls] == [{"temperature": 0.0}] * 2  # no token budget added: the cache keys hold
    assert s.run(query=Q, nodes=NODES, causal_edges=EDGES)["summary_calls"] == 1  # the component's own again


def test_summary_calls_is_checked_against_its_one_range():
    from haystack_cfrag.causal_rag.parameters import PARAMETERS, RANGES

    assert (RANGES["summary_calls"].low, RANGES["summary_calls"].high) == (1, 2)
    assert PARAMETERS["summary_calls"].describe() == "an integer in [1, 2]"
    for bad in (0, 3, 1.5, True, "2"):
        with pytest.raises(ValueError, match=r"^'summary_calls' must be an integer in \[1, 2\], got .*\.$"):
            summarizer(summary_calls=bad)
    with pytest.raises(ValueError, match=r"'summary_calls' must be an integer in \[1, 2\], got 3\."):
        summarizer().run(query=Q, nodes=NODES, causal_edges=EDGES, summary_calls=3)
    with pytest.raises(ValueError, match=r"'summary_max_tokens' must be an integer in \[8, 1024\]"):
        summarizer(summary_max_tokens=4)
    assert SUMMARY_FIRST_ANSWER_TEMPLATE.startswith("Answer the question using the causal summary")


def test_two_calls_report_then_summary_with_the_official_prompts():
    s = summarizer()
    out = s.run(query=Q, nodes=NODES, causal_edges=EDGES, documents=PASSAGES)
    assert out["paths"] == "Report: rain → flood → crops."
    assert out["summary"] == "The flood, caused by heavy rain, ruined the crops." and out["degradations"] == []
    paths_prompt, summary_prompt = s.chat_generator.prompts
    graph = GRAPH
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
    for calls in (1, 2):
        s = summarizer(summary_calls=calls)
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
    s = summarizer(prompt_templates={"paths": "G:\n{graph_data}",
                                     "summary": "{query}|{response_type}|{causal_summary}"},
                   response_type="One short paragraph", max_graph_chars=200, max_report_chars=200)
    s.run(query=Q, nodes=NODES, causal_edges=EDGES * 20)
    assert s.chat_generator.prompts[0].startswith("G:\n**Entities:**") and len(s.chat_generator.prompts[0]) < 220
    assert s.chat_generator.prompts[1] == f"{Q}|One short paragraph|Report: rain → flood → crops."
    for bad, match in [({"paths": "no field"}, "lacks the placeholder {graph_data}"),
                       ({"sumary": "{query}"}, "unknown key 'sumary'"),
                       ({"summary": "{query} {causal_summary}"}, "lacks the placeholder {response_type}"),
                       ({"one_call": "{graph_data}"}, "lacks the placeholder {query}")]:
        with pytest.raises(ValueError, match=match):
            summarizer(prompt_templates=bad)
    with pytest.raises(ValueError, match="response_type"):
        summarizer(response_type="")
    one = summarizer(summary_calls=1, prompt_templates={"one_call": "Q {query}\n{graph_data}"})
    one.run(query=Q, nodes=NODES, causal_edges=EDGES)
    assert one.chat_generator.prompts == [f"Q {Q}\n{GRAPH}"]


def test_round_trip_and_async_twin():
    s = summarizer(response_type="One paragraph", generation_kwargs={"max_tokens": 200}, timeout_s=10.0,
                   prompt_templates={"paths": "G {graph_data}"}, passages_in_prompt=True, summary_max_tokens=48)
    restored = CausalSummarizer.from_dict(s.to_dict())
    assert restored.to_dict() == s.to_dict() and isinstance(restored.chat_generator, ScriptedGenerator)
    assert (restored.summary_calls, restored.summary_max_tokens) == (2, 48)
    for calls in (1, 2):
        sync = summarizer(summary_calls=calls).run(query=Q, nodes=NODES, causal_edges=EDGES)
        async_ = asyncio.run(summarizer(summary_calls=calls).run_async(query=Q, nodes=NODES, causal_edges=EDGES))
        assert sync == async_ and sync["trace"]["calls"] == calls
    one = KwargsGenerator()
    asyncio.run(CausalSummarizer(chat_generator=one).run_async(query=Q, nodes=NODES, causal_edges=EDGES,
                                                               summary_calls=1))
    assert one.calls[0][1] == {"max_tokens": 64}


def test_summary_max_edges_reads_the_first_relations_and_the_entities_they_name():
    """Issue 61's capped subgraph: the relations nearest the seeds (the retriever's order), their entities only."""
    gen = KwargsGenerator()
    more = [*EDGES, {"source": "Drought", "target": "Famine", "relation": "CAUSES"}]
    nodes = [*NODES, Document(content="Famine", meta={"node_id": "Famine", "node_type": "Event"})]
    capped = CausalSummarizer(chat_generator=gen, summary_max_edges=1)
    out = capped.run(query=Q, nodes=nodes, causal_edges=more, documents=PASSAGES)
    prompt = gen.calls[0][0]
    assert "Flood (a Event) --[DAMAGES]--> Crops (a Plant)" in prompt
    assert "Heavy rain" not in prompt and "Famine" not in prompt and "Drought" not in prompt
    assert out["trace"]["edges"] == 1 and out["trace"]["edges_cut"] == 2 and out["trace"]["nodes"] == 2
    whole = KwargsGenerator()
    full = CausalSummarizer(chat_generator=whole).run(query=Q, nodes=nodes, causal_edges=more,
                                                      documents=PASSAGES)
    assert "Drought" in whole.calls[0][0] and full["trace"]["edges_cut"] == 0
    with pytest.raises(ValueError, match="'summary_max_edges' must be an integer in"):
        CausalSummarizer(chat_generator=gen, summary_max_edges=0)
    again = CausalSummarizer.from_dict(CausalSummarizer(chat_generator=gen, summary_max_edges=4).to_dict())
    assert again.summary_max_edges == 4
