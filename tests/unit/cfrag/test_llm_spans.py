"""Each LLM call inside our components is a child span of its component's span.

The spans are recorded with OpenTelemetry's in-memory exporter (opentelemetry-sdk) behind
Haystack's OpenTelemetry tracer where Haystack ships one (2.x), else a copy of it written here
(Haystack 3 ships none; opentelemetry-haystack does). That tracer ignores `parent_span`: the
parent is OpenTelemetry's current span, kept in a contextvar, so the tree holds only if the
context reaches the threads the calls run on (the drafter's workers, the daemon thread of a
call with a time limit). A second tracer, which keeps ONE active span for the whole process,
checks the other path: the parent each call passes explicitly.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import haystack
import pytest
from haystack import Pipeline, component, tracing
from haystack.dataclasses import ChatMessage
from haystack.tracing import Span, Tracer
from haystack.tracing import utils as tracing_utils

from haystack_cfrag.cfrag.components.arbitration_duel import ArbitrationDuel
from haystack_cfrag.cfrag.components.causal_arbitration_ranker import CausalArbitrationRanker
from haystack_cfrag.cfrag.components.counterfactual_query_expander import CounterfactualQueryExpander
from haystack_cfrag.cfrag.components.parallel_draft_generator import ParallelDraftGenerator
from haystack_cfrag.common import tracing as lt
from haystack_cfrag.common.timing import timed_stages
from tests import dark_knight as dk
from tests.fakes import HashingDocumentEmbedder, HashingTextEmbedder, KeywordReader

COMPONENT_RUN = "haystack.component.run"
STAGE_OF = {"expander": "counterfactuals", "drafter": "draft", "duel": "duel"}


# ---------------------------------------------------------------- tracers
class OTelSpan(Span):
    def __init__(self, span: Any) -> None:
        self._span = span

    def set_tag(self, key: str, value: Any) -> None:
        self._span.set_attribute(key, tracing_utils.coerce_tag_value(value))

    def raw_span(self) -> Any:
        return self._span


class OTelTracer(Tracer):
    """Haystack 2.x's `haystack.tracing.OpenTelemetryTracer` as written: the parent is the OTel context's span."""

    def __init__(self, tracer: Any) -> None:
        self._tracer = tracer

    @contextlib.contextmanager
    def trace(self, operation_name: str, tags: dict[str, Any] | None = None,
              parent_span: Span | None = None) -> Iterator[Span]:
        with self._tracer.start_as_current_span(operation_name) as raw:
            span = OTelSpan(raw)
            span.set_tags(tags or {})
            yield span

    def current_span(self) -> Span | None:
        from opentelemetry import trace  # noqa: PLC0415

        current = trace.get_current_span()
        return None if isinstance(current, trace.NonRecordingSpan) else OTelSpan(current)


class GlobalSpan(Span):
    def __init__(self, name: str, tags: dict[str, Any] | None, parent: Span | None) -> None:
        self.name, self.tags, self.parent = name, dict(tags or {}), parent

    def set_tag(self, key: str, value: Any) -> None:
        self.tags[key] = value


class GlobalStackTracer(Tracer):
    """Keeps one stack of active spans for the whole process: its current span may be another thread's."""

    def __init__(self) -> None:
        self.stack: list[GlobalSpan] = []
        self.spans: list[GlobalSpan] = []
        self.lock = threading.Lock()

    @contextlib.contextmanager
    def trace(self, operation_name: str, tags: dict[str, Any] | None = None,
              parent_span: Span | None = None) -> Iterator[Span]:
        with self.lock:
            span = GlobalSpan(operation_name, tags, parent_span or (self.stack[-1] if self.stack else None))
            self.stack.append(span)
            self.spans.append(span)
        try:
            yield span
        finally:
            with self.lock:
                self.stack.remove(span)

    def current_span(self) -> Span | None:
        with self.lock:
            return self.stack[-1] if self.stack else None


@contextlib.contextmanager
def enabled(tracer: Tracer, content: bool) -> Iterator[None]:
    previous, previous_content = tracing.tracer.actual_tracer, tracing.tracer.is_content_tracing_enabled
    tracing.enable_tracing(tracer)
    tracing.tracer.is_content_tracing_enabled = content
    try:
        yield
    finally:
        tracing.enable_tracing(previous)
        tracing.tracer.is_content_tracing_enabled = previous_content


@contextlib.contextmanager
def otel(content: bool = False) -> Iterator[Any]:
    """Spans recorded by OpenTelemetry's in-memory exporter (the test is skipped without opentelemetry-sdk)."""
    sdk = pytest.importorskip("opentelemetry.sdk.trace")
    export = pytest.importorskip("opentelemetry.sdk.trace.export")
    in_memory = pytest.importorskip("opentelemetry.sdk.trace.export.in_memory_span_exporter")
    exporter = in_memory.InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(export.SimpleSpanProcessor(exporter))
    haystack_tracer = getattr(tracing, "OpenTelemetryTracer", OTelTracer)   # Haystack's own where it has one
    with enabled(haystack_tracer(provider.get_tracer("test_llm_spans")), content):
        yield exporter


# ---------------------------------------------------------------- the pipeline
@component
class MeteredReader(KeywordReader):
    """A KeywordReader whose replies report their model and token usage, as real generators do."""

    model = "keyword-reader-1"

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage], generation_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
        text = KeywordReader.run(self, messages=messages, generation_kwargs=generation_kwargs)["replies"][0].text
        usage = {"prompt_tokens": len((messages[-1].text or "").split()), "completion_tokens": len(text.split())}
        return {"replies": [ChatMessage.from_assistant(text, meta={"usage": usage})]}


def build(timeout_s: float | None, mode: str = "sync") -> tuple[Pipeline, dict[str, Any]]:
    """Expander, drafter (4 workers), ranker and its duel on the Dark Knight corpus; timeout_s sends the
    expander's and drafts' calls through a daemon thread (drafts: a pool thread, then a daemon thread)."""
    reader = MeteredReader(candidates=dk.CANDIDATES, counterfactual_reply=dk.COUNTERFACTUAL_REPLY)
    emb = HashingTextEmbedder()
    async_2x = mode == "async" and not hasattr(Pipeline, "run_async")     # Haystack 2.x: AsyncPipeline
    pipe = haystack.AsyncPipeline() if async_2x else Pipeline()
    pipe.add_component("expander", CounterfactualQueryExpander(
        chat_generator=reader, text_embedder=emb, n_counterfactuals=2, similarity_threshold=0.2, timeout_s=timeout_s))
    pipe.add_component("drafter", ParallelDraftGenerator(chat_generator=reader, max_workers=4, timeout_s=timeout_s,
                                                         prompt="short"))
    pipe.add_component("ranker", CausalArbitrationRanker(text_embedder=emb, evidence="mentions", override_margin=1.0))
    pipe.add_component("duel", ArbitrationDuel(chat_generator=reader))
    pipe.connect("expander.queries", "ranker.queries")
    pipe.connect("drafter.drafts", "ranker.drafts")
    pipe.connect("ranker.ruling", "duel.ruling")
    docs = {d.id: d for d in HashingDocumentEmbedder().run(dk.documents())["documents"]}
    reviews = [docs[f"review-{i}"] for i in range(4)]
    data = {
        "expander": {"query": dk.QUESTION},
        "drafter": {"query": dk.QUESTION, "subsets": [[docs["cast"]], reviews[:2], reviews[2:], [docs["interview"]]],
                    "baseline_documents": reviews + [docs["cast"]]},
        "ranker": {"query": dk.QUESTION},
    }
    return pipe, data


def run(pipe: Pipeline, data: dict[str, Any], mode: str) -> dict[str, Any]:
    if mode == "async":
        return asyncio.run(pipe.run_async(data))
    return pipe.run(data)


def llm_tree(spans: list[Any]) -> dict[str, list[Any]]:
    """Component name → the LLM-call spans whose parent is that component's run span."""
    components = {s.context.span_id: s.attributes["haystack.component.name"] for s in spans if s.name == COMPONENT_RUN}
    tree: dict[str, list[Any]] = {}
    for s in spans:
        if s.name == lt.OPERATION:
            parent = components.get(s.parent.span_id if s.parent else None, "<not a component span>")
            tree.setdefault(parent, []).append(s)
    return tree


# ---------------------------------------------------------------- tests
@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("timeout_s", [None, 30.0], ids=["no-limit", "time-limit"])
def test_every_llm_call_is_a_child_of_its_components_span(mode, timeout_s):
    pipe, data = build(timeout_s, mode)
    with otel() as exporter:
        out = run(pipe, data, mode)
    spans = exporter.get_finished_spans()
    tree = llm_tree(spans)
    assert set(tree) == {"expander", "drafter", "duel"}, tree.keys()
    for name, calls in tree.items():
        assert {c.attributes[lt.STAGE_TAG] for c in calls} == {STAGE_OF[name]}
        assert all(c.context.trace_id == spans[-1].context.trace_id for c in calls)   # one trace: the pipeline's
    assert len(tree["expander"]) == 1 and len(tree["duel"]) == 2         # the duel, then its confirming reading
    indices = sorted(c.attributes[lt.INDEX_TAG] for c in tree["drafter"])
    assert indices == [0, 1, 2, 3, 4]                                  # four subsets and the baseline
    assert out["duel"]["trace"]["override"]["duel"]          # the duel's call was the duel

    span = tree["drafter"][0]
    assert span.attributes[lt.MODEL_TAG] == "keyword-reader-1"
    assert span.attributes[lt.TYPE_TAG] == "MeteredReader"
    assert span.attributes[lt.CALLER_TAG] == "ParallelDraftGenerator"
    assert span.attributes[lt.INPUT_TOKENS_TAG] > 0 and span.attributes[lt.OUTPUT_TOKENS_TAG] > 0
    assert tree["duel"][0].attributes[lt.NAME_TAG] == "chat_generator"
    assert tree["duel"][0].attributes[lt.CALLER_TAG] == "ArbitrationDuel"
    for calls in tree.values():                                  # content tracing is off by default
        assert all(lt.INPUT_CONTENT_TAG not in c.attributes and lt.OUTPUT_CONTENT_TAG not in c.attributes
                   for c in calls)


def test_prompt_and_reply_are_content_tags_only_with_content_tracing():
    pipe, data = build(None)
    with otel(content=True) as exporter:
        pipe.run(data)
    expander = llm_tree(exporter.get_finished_spans())["expander"][0]
    assert "counterfactual questions" in expander.attributes[lt.INPUT_CONTENT_TAG]
    assert "Who directed The Dark Knight?" in expander.attributes[lt.OUTPUT_CONTENT_TAG]


def test_a_failed_call_is_tagged_with_its_error():
    @component
    class Broken:
        @component.output_types(replies=list[ChatMessage])
        def run(self, messages: list[ChatMessage]) -> dict[str, Any]:
            raise RuntimeError("model server unavailable")

    with otel() as exporter:
        out = CounterfactualQueryExpander(chat_generator=Broken()).run(query=dk.QUESTION)
    assert out["degradations"]
    (span,) = [s for s in exporter.get_finished_spans() if s.name == lt.OPERATION]
    assert span.attributes[lt.ERROR_TAG] == "RuntimeError" and span.parent is None   # no pipeline: a root span


def test_concurrent_drafts_name_their_component_even_when_the_tracer_tracks_one_active_span():
    pipe, data = build(None)
    tracer = GlobalStackTracer()
    with enabled(tracer, content=False):
        pipe.run(data)
    drafter = next(s for s in tracer.spans
                   if s.name == COMPONENT_RUN and s.tags["haystack.component.name"] == "drafter")
    drafts = [s for s in tracer.spans if s.name == lt.OPERATION and s.tags[lt.STAGE_TAG] == "draft"]
    assert len(drafts) == 5 and all(s.parent is drafter for s in drafts)


def test_no_span_and_the_same_result_with_tracing_disabled():
    pipe, data = build(None)
    assert not tracing.is_tracing_enabled()
    plain = pipe.run(data)["duel"]["answer"]
    with otel():
        traced = pipe.run(data)["duel"]["answer"]
    assert plain == traced == "Christian Bale"


def test_stage_timer_reads_the_llm_call_spans():
    pipe, data = build(None)
    with timed_stages() as timer:
        pipe.run(data)
    assert set(timer.seconds) == {"expander", "drafter", "ranker", "duel"}   # component runs
    assert sorted(c.stage for c in timer.llm_calls) == ["counterfactuals"] + ["draft"] * 5 + ["duel"] * 2
    assert set(timer.llm_seconds) == {"counterfactuals", "draft", "duel"}
    usage = timer.llm_usage()
    assert usage.calls == 8 and usage.prompt_tokens > 0 and usage.completion_tokens > 0
    assert all(c.model == "keyword-reader-1" and c.error is None for c in timer.llm_calls)
