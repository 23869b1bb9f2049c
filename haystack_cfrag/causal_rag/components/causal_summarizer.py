"""CausalSummarizer: CausalRAG's causal paths and causal summary (paper 004, §4.2–4.3): one LLM call, or the
official code's two."""

from __future__ import annotations

import re
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging

from haystack_cfrag.causal_rag.parameters import DEFAULT_SUMMARY_CALLS, DEFAULT_SUMMARY_MAX_TOKENS, RANGES
from haystack_cfrag.causal_rag.prompts import (
    DEFAULT_RESPONSE_TYPE,
    SUMMARIZER_FIELDS,
    SUMMARIZER_PROMPTS,
    check_prompt_templates,
    render_network_data,
)
from haystack_cfrag.common.asking import Asked, AsksChatGenerator
from haystack_cfrag.common.parameters import check_in_range
from haystack_cfrag.common.plumbing import DEFAULT_MAX_QUERY_CHARS, InjectedParts, degradation, prepare_query
from haystack_cfrag.common.protocols import ChatGenerator
from haystack_cfrag.common.serialization import deserialize_init_components, serialize_component
from haystack_cfrag.common.tracing import LLMCall
from haystack_cfrag.common.validation import check_bool, check_int, check_optional_int, check_optional_seconds

COMPONENT = "CausalSummarizer"
DEFAULT_MAX_GRAPH_CHARS = 6000
"""The rendered subgraph ("Network Data") is cut to this many characters."""
DEFAULT_MAX_REPORT_CHARS = 6000
"""The causal-paths report is cut to this many characters before the summary call."""
DEFAULT_MAX_PASSAGE_CHARS = 600
MAX_TRACE_CHARS = 2000

_PATHS_CALL = LLMCall(stage="causal_paths", component=COMPONENT)
_SUMMARY_CALL = LLMCall(stage="causal_summary", component=COMPONENT)
_ONE_CALL = LLMCall(stage="causal_paths_summary", component=COMPONENT)
_SUMMARY_LABEL = re.compile(r"(?im)^[\s*#>_-]*summary[\s*_]*:[\s*_]*")
"""Where the one-call reply's summary starts: a line opening with "Summary:" (markdown emphasis aside)."""

logger = logging.getLogger(__name__)


@component
class CausalSummarizer(AsksChatGenerator, InjectedParts):
    """
    Writes CausalRAG's causal summary of a retrieved subgraph, the reader's context beside the passages
    (`prompts.CAUSAL_RAG_ANSWER_TEMPLATE`; in the official code it is the answer).

    `summary_calls=1` (default): one call asks for the causal paths and a one-sentence summary (the reply's
    "Summary:" line); none when the subgraph has no relation. `summary_calls=2`: the official code's report,
    then its summary. Degrades instead of failing (no subgraph, a failed call: empty outputs; a failed summary
    call: the report stands in), each case in `degradations` (or raised with `raise_on_failure`).

    Outputs `summary`, `paths`, `summary_calls` (the recipe that ran), `trace` and `degradations`.

    ### Usage example
    ```python
    from haystack.components.generators.chat import MockChatGenerator
    from haystack_cfrag.causal_rag import CausalSummarizer

    reply = "Causal paths:\\n- Rain -> Flood\\nSummary: Heavy rain caused the flood."
    gen = MockChatGenerator(responses=[reply])
    summarizer = CausalSummarizer(chat_generator=gen)
    edge = {"source": "Rain", "target": "Flood", "relation": "CAUSES", "passage_ids": ["p1"]}
    out = summarizer.run(query="Why did the town flood?", nodes=[], causal_edges=[edge])
    print(out["summary"])  # Heavy rain caused the flood.
    ```
    """

    COMPONENT = COMPONENT
    _INJECTED = ("chat_generator",)

    def __init__(
        self,
        *,
        chat_generator: ChatGenerator,
        summary_calls: int = DEFAULT_SUMMARY_CALLS,
        summary_max_tokens: int = DEFAULT_SUMMARY_MAX_TOKENS,
        response_type: str = DEFAULT_RESPONSE_TYPE,
        prompt_templates: dict[str, str] | None = None,
        max_graph_chars: int = DEFAULT_MAX_GRAPH_CHARS,
        summary_max_edges: int | None = None,
        max_report_chars: int = DEFAULT_MAX_REPORT_CHARS,
        passages_in_prompt: bool = False,
        max_passage_chars: int = DEFAULT_MAX_PASSAGE_CHARS,
        generation_kwargs: dict[str, Any] | None = None,
        timeout_s: float | None = None,
        raise_on_failure: bool = False,
        max_query_chars: int | None = DEFAULT_MAX_QUERY_CHARS,
    ) -> None:
        """
        :param chat_generator: any Haystack ChatGenerator (writes the paths and the summary).
        :param summary_calls: 1 (paths and summary in one call) or 2 (the official report, then summary); a run
            may set it too.
        :param summary_max_tokens: the one call's token budget, in [8, 1024].
        :param response_type: the two-call summary's length and format (official: "Multiple Paragraphs").
        :param prompt_templates: replaces built-in prompts by key: "paths" ({graph_data}), "summary"
            ({causal_summary}, {response_type}, {query}), "one_call" ({graph_data}, {query}).
        :param max_graph_chars: the rendered subgraph is cut to this many characters, in [200, 100000].
        :param summary_max_edges: the summary reads the first this many relations (None: all).
        :param max_report_chars: the report is cut to this many characters for the summary call, in [200, 100000].
        :param passages_in_prompt: also list the source passages in the report prompt (not official; off).
        :param max_passage_chars: each passage listed is cut to this many characters, in [50, 10000].
        :param generation_kwargs: passed to generators that accept them (e.g. {"max_tokens": 400}).
        :param timeout_s: seconds a call may take before it is abandoned (None = no limit).
        :param raise_on_failure: raise when a call fails instead of degrading.
        :param max_query_chars: longer questions are cut to this many characters, with a warning (None = whole).
        """
        if chat_generator is None:
            raise ValueError(f"{COMPONENT}: 'chat_generator' is required.")
        if not isinstance(response_type, str) or not response_type.strip() or len(response_type) > 200:
            raise ValueError(f"{COMPONENT}: 'response_type' must be a non-empty string of at most 200 characters.")
        check_in_range(RANGES, "summary_calls", summary_calls)
        check_in_range(RANGES, "summary_max_tokens", summary_max_tokens)
        check_prompt_templates(prompt_templates, SUMMARIZER_PROMPTS, SUMMARIZER_FIELDS, component=COMPONENT)
        check_int("max_graph_chars", max_graph_chars, 200, 100_000)
        if summary_max_edges is not None:
            check_in_range(RANGES, "summary_max_edges", summary_max_edges)
        check_int("max_report_chars", max_report_chars, 200, 100_000)
        check_bool("passages_in_prompt", passages_in_prompt)
        check_int("max_passage_chars", max_passage_chars, 50, 10_000)
        check_optional_seconds("timeout_s", timeout_s)
        check_bool("raise_on_failure", raise_on_failure)
        check_optional_int("max_query_chars", max_query_chars, 1)
        self.chat_generator = chat_generator
        self.summary_calls = summary_calls
        self.summary_max_tokens = summary_max_tokens
        self.response_type = response_type
        self.prompt_templates = dict(prompt_templates) if prompt_templates is not None else None
        self.max_graph_chars = max_graph_chars
        self.summary_max_edges = summary_max_edges
        self.max_report_chars = max_report_chars
        self.passages_in_prompt = passages_in_prompt
        self.max_passage_chars = max_passage_chars
        self.generation_kwargs = dict(generation_kwargs) if generation_kwargs is not None else None
        self.timeout_s = timeout_s
        self.raise_on_failure = raise_on_failure
        self.max_query_chars = max_query_chars

    def to_dict(self) -> dict[str, Any]:
        """Serialise, including the injected generator."""
        return default_to_dict(self, chat_generator=serialize_component(self.chat_generator),
                               summary_calls=self.summary_calls, summary_max_tokens=self.summary_max_tokens,
                               response_type=self.response_type, prompt_templates=self.prompt_templates,
                               max_graph_chars=self.max_graph_chars, summary_max_edges=self.summary_max_edges,
                               max_report_chars=self.max_report_chars,
                               passages_in_prompt=self.passages_in_prompt,
                               max_passage_chars=self.max_passage_chars,
                               generation_kwargs=self.generation_kwargs, timeout_s=self.timeout_s,
                               raise_on_failure=self.raise_on_failure, max_query_chars=self.max_query_chars)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CausalSummarizer:
        """Deserialise, including the injected generator."""
        return default_from_dict(cls, deserialize_init_components(data, cls._INJECTED))

    @component.output_types(summary=str, paths=str, summary_calls=int, trace=dict[str, Any],
                            degradations=list[dict[str, Any]])
    def run(self, query: str, nodes: list[Document], causal_edges: list[dict[str, Any]],
            documents: list[Document] | None = None, summary_calls: int | None = None) -> dict[str, Any]:
        """
        :param query: the user's question.
        :param nodes: the retrieved node Documents (CausalGraphRetriever's `nodes`), seeds first.
        :param causal_edges: the retrieved edges ({"source", "target", "relation", ...}).
        :param documents: the source passages; listed in the paths prompt only with `passages_in_prompt`.
        :param summary_calls: 1 or 2 for this run (None: the component's).
        :returns: `summary`, `paths`, `summary_calls`, `trace` and `degradations`.
        """
        job = _Job(self, query, nodes, causal_edges, documents, summary_calls)
        if job.one_call:
            if job.asks_one_call():
                job.one_call_reply(*self._ask_one_call(job.one_call_prompt()))
            return job.outputs()
        if job.graph_data is not None:
            job.paths_reply(*self._reply("paths", job.paths_prompt()))
        if job.paths:
            job.summary_reply(*self._reply("summary", job.summary_prompt()))
        return job.outputs()

    @component.output_types(summary=str, paths=str, summary_calls=int, trace=dict[str, Any],
                            degradations=list[dict[str, Any]])
    async def run_async(self, query: str, nodes: list[Document], causal_edges: list[dict[str, Any]],
                        documents: list[Document] | None = None,
                        summary_calls: int | None = None) -> dict[str, Any]:
        """Async twin of `run`, with the same sockets."""
        job = _Job(self, query, nodes, causal_edges, documents, summary_calls)
        if job.one_call:
            if job.asks_one_call():
                job.one_call_reply(*(await self._ask_one_call_async(job.one_call_prompt())))
            return job.outputs()
        if job.graph_data is not None:
            job.paths_reply(*(await self._reply_async("paths", job.paths_prompt())))
        if job.paths:
            job.summary_reply(*(await self._reply_async("summary", job.summary_prompt())))
        return job.outputs()

    # ------------------------------------------------------------------ calls
    def template(self, key: str) -> str:
        return (self.prompt_templates or {}).get(key, SUMMARIZER_PROMPTS[key])

    def _reply(self, key: str, prompt: str) -> Asked:
        return self.ask(prompt, _PATHS_CALL if key == "paths" else _SUMMARY_CALL, key)

    async def _reply_async(self, key: str, prompt: str) -> Asked:
        return await self.ask_async(prompt, _PATHS_CALL if key == "paths" else _SUMMARY_CALL, key)

    def one_call_kwargs(self) -> dict[str, Any]:
        """The one call's generation arguments: `generation_kwargs`, `max_tokens` = `summary_max_tokens`."""
        return {**(self.generation_kwargs or {}), "max_tokens": self.summary_max_tokens}

    # the one call's own generation arguments (the two official calls keep the component's, so their
    # reply-cache keys are those of the archived runs)
    def _ask_one_call(self, prompt: str) -> Asked:
        return self.ask(prompt, _ONE_CALL, "one_call", generation_kwargs=self.one_call_kwargs())

    async def _ask_one_call_async(self, prompt: str) -> Asked:
        return await self.ask_async(prompt, _ONE_CALL, "one_call", generation_kwargs=self.one_call_kwargs())


class _Job:
    """One summary: inputs checked, prompts, replies and fallbacks (no I/O here)."""

    def __init__(self, summarizer: CausalSummarizer, query: Any, nodes: Any, edges: Any, documents: Any,
                 summary_calls: Any = None) -> None:
        self.s = summarizer
        self.summary_calls = summarizer.summary_calls if summary_calls is None else summary_calls
        check_in_range(RANGES, "summary_calls", self.summary_calls)
        self.one_call = self.summary_calls == 1
        self.query = prepare_query(query, COMPONENT, summarizer.max_query_chars)
        if not isinstance(nodes, list) or not isinstance(edges, list):
            raise ValueError(f"{COMPONENT}: 'nodes' and 'causal_edges' must be lists.")
        if documents is not None and not isinstance(documents, list):
            raise ValueError(f"{COMPONENT}: 'documents' must be a list of Documents or None.")
        self.nodes = [(_node_id(d), str(d.meta.get("node_type") or "")) for d in nodes
                      if isinstance(d, Document) and _node_id(d)]
        self.edges = [e for e in edges if isinstance(e, dict) and isinstance(e.get("source"), str)
                      and isinstance(e.get("target"), str)]
        self.documents = [d for d in documents or [] if isinstance(d, Document)]
        self.edges_cut = 0  # relations past `summary_max_edges`, not read
        if summarizer.summary_max_edges is not None and len(self.edges) > summarizer.summary_max_edges:
            self.edges_cut = len(self.edges) - summarizer.summary_max_edges
            self.edges = self.edges[: summarizer.summary_max_edges]
            named = {e["source"] for e in self.edges} | {e["target"] for e in self.edges}
            self.nodes = [n for n in self.nodes if n[0] in named]
        self.degradations: list[dict[str, Any]] = []
        self.calls = 0
        self.paths = ""
        self.summary = ""
        self.skipped = ""
        self.graph_data: str | None = None
        if not self.nodes and not self.edges:
            self.degradations.append(degradation("causal_paths", "no_subgraph"))
            return
        passages = []
        if summarizer.passages_in_prompt:
            cut = summarizer.max_passage_chars
            passages = [(d.content or "")[:cut] for d in self.documents]
        self.graph_data = render_network_data(self.nodes, self.edges, max_chars=summarizer.max_graph_chars,
                                              passages=passages)

    def asks_one_call(self) -> bool:
        """Whether the one call can add anything: a subgraph with at least one relation (else `skipped`)."""
        if self.graph_data is None:
            return False
        if not self.edges:
            self.skipped = "no_relations"
            return False
        return True

    def one_call_prompt(self) -> str:
        return self.s.template("one_call").format(graph_data=self.graph_data, query=self.query)

    def one_call_reply(self, text: str | None, error: Exception | None) -> None:
        if (read := self._reply("causal_paths_summary", text, error)) is not None:
            self.paths, self.summary = split_one_call_reply(read)

    def paths_prompt(self) -> str:
        return self.s.template("paths").format(graph_data=self.graph_data)

    def summary_prompt(self) -> str:
        report = self.paths[: self.s.max_report_chars]
        return self.s.template("summary").format(causal_summary=report, response_type=self.s.response_type,
                                                 query=self.query)

    def paths_reply(self, text: str | None, error: Exception | None) -> None:
        if (read := self._reply("causal_paths", text, error)) is not None:
            self.paths = read

    def _reply(self, stage: str, text: str | None, error: Exception | None) -> str | None:
        """One call counted; its stripped text, or None (a failed or empty reply, recorded as `stage`'s degradation)."""
        self.calls += 1
        if error is not None:
            self._degrade(stage, "generator failed", error=repr(error)[:300])
        elif not (text or "").strip():
            self._degrade(stage, "empty reply")
        else:
            return text.strip()
        return None

    def summary_reply(self, text: str | None, error: Exception | None) -> None:
        self.calls += 1
        if error is not None:
            self._degrade("causal_summary", "generator failed; the causal-paths report stands in",
                          error=repr(error)[:300])
            self.summary = self.paths
        elif not (text or "").strip():
            self._degrade("causal_summary", "empty reply; the causal-paths report stands in")
            self.summary = self.paths
        else:
            self.summary = text.strip()

    def _degrade(self, stage: str, reason: str, **details: Any) -> None:
        logger.warning("{component}: {stage}: {reason}", component=COMPONENT, stage=stage, reason=reason)
        self.degradations.append(degradation(stage, reason, **details))

    def outputs(self) -> dict[str, Any]:
        trace = {
            "summary_calls": self.summary_calls,
            "calls": self.calls,
            "skipped": self.skipped or None,
            "nodes": len(self.nodes),
            "edges": len(self.edges),
            "edges_cut": self.edges_cut,
            "documents": len(self.documents),
            "passages_in_prompt": self.s.passages_in_prompt,
            "response_type": self.s.response_type,
            "graph_chars": len(self.graph_data or ""),
            "graph_data": (self.graph_data or "")[:MAX_TRACE_CHARS],
            "paths_chars": len(self.paths),
            "summary_chars": len(self.summary),
            "paths": self.paths[:MAX_TRACE_CHARS],
            "summary": self.summary[:MAX_TRACE_CHARS],
        }
        if self.one_call:
            trace["max_tokens"] = self.s.summary_max_tokens
        return {"summary": self.summary, "paths": self.paths, "summary_calls": self.summary_calls,
                "trace": trace, "degradations": list(self.degradations)}


def split_one_call_reply(text: str) -> tuple[str, str]:
    r"""(paths, summary) of a one-call reply, split at its last "Summary:" label (none: the whole reply is both).

    >>> split_one_call_reply("Causal paths:\n- Rain -> CAUSES -> Flood\n**Summary:** Rain caused the flood.")
    ('- Rain -> CAUSES -> Flood', 'Rain caused the flood.')
    >>> split_one_call_reply("Rain caused the flood.")
    ('Rain caused the flood.', 'Rain caused the flood.')
    """
    text = text.strip()
    labels = list(_SUMMARY_LABEL.finditer(text))
    if not labels or not text[labels[-1].end():].strip():
        return text, text
    summary = text[labels[-1].end():].strip()
    paths = re.sub(r"(?i)^[\s*#>_-]*causal paths[\s*_]*:[\s*_]*", "", text[:labels[-1].start()]).strip()
    return paths or summary, summary


def _node_id(doc: Document) -> str:
    node_id = doc.meta.get("node_id")
    return node_id if isinstance(node_id, str) and node_id else (doc.content or "").strip()
