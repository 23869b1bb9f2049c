"""ParallelDraftGenerator: one answer draft per evidence subset (Eq. 8, App. G)."""

from __future__ import annotations

import asyncio
import contextvars
import numbers
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.dataclasses import ChatMessage

from haystack_cfrag.cfrag import ranges
from haystack_cfrag.cfrag.dataclasses import NO_EVIDENCE, SOURCE_KEY, Draft
from haystack_cfrag.cfrag.math.replies import parse_draft_reply
from haystack_cfrag.cfrag.prompts import (
    DRAFT_FIELDS,
    DRAFT_PROMPT,
    SHORT_DRAFT_PROMPT,
    check_template,
    render_evidence,
    render_plain_evidence,
)
from haystack_cfrag.common.asking import AsksChatGenerator
from haystack_cfrag.common.plumbing import DEFAULT_MAX_QUERY_CHARS, InjectedParts, prepare_query, remaining
from haystack_cfrag.common.protocols import ChatGenerator
from haystack_cfrag.common.serialization import deserialize_init_components, serialize_component
from haystack_cfrag.common.tracing import LLMCall, current_span
from haystack_cfrag.common.validation import check_choice, check_optional_int, check_optional_seconds

PROMPTS = ("app_g", "short")

logger = logging.getLogger(__name__)


@component
class ParallelDraftGenerator(AsksChatGenerator, InjectedParts):
    """
    Writes one draft answer per evidence subset with any Haystack ChatGenerator.

    Each subset gets the App. G prompt; drafts run up to `max_workers` at once (1 for an in-process model). Replies
    are parsed as JSON, labelled lines or the first line; token log-probabilities in the reply's meta are kept. A
    failed, timed-out (`timeout_s`, `time_budget_s`) or empty-subset call gives a draft with `error` (or raises).

    ### Usage example
    ```python
    from haystack import Document
    from haystack.components.generators.chat import MockChatGenerator
    from haystack_cfrag import ParallelDraftGenerator

    reader = MockChatGenerator(responses="Answer: Christian Bale\\nRationale: cast list")
    gen = ParallelDraftGenerator(chat_generator=reader)
    subsets = [[Document(content="Christian Bale stars as Bruce Wayne.")]]
    print(gen.run(query="Who is the lead actor in The Dark Knight?", subsets=subsets)["drafts"][0].answer)
    ```
    """

    COMPONENT = "ParallelDraftGenerator"
    FAILURE = "{component}: {what} failed: {error}"
    _INJECTED = ("chat_generator",)

    def __init__(
        self,
        *,
        chat_generator: ChatGenerator,
        max_workers: int = 4,
        generation_kwargs: dict[str, Any] | None = None,
        max_evidence_chars: int | None = 2000,
        raise_on_failure: bool = False,
        timeout_s: float | None = None,
        time_budget_s: float | None = None,
        max_query_chars: int | None = DEFAULT_MAX_QUERY_CHARS,
        prompt: str = "app_g",
        prompt_template: str | None = None,
    ) -> None:
        """
        :param chat_generator: any Haystack ChatGenerator instance.
        :param max_workers: drafts generated at once (1 = one after the other).
        :param generation_kwargs: passed to the generator's `run` when it accepts `generation_kwargs`.
        :param max_evidence_chars: each passage is cut to this many characters in the prompt (None = whole).
        :param raise_on_failure: raise when a generation fails instead of recording a failed draft.
        :param timeout_s: seconds one generator call may take before it is abandoned (None = no limit).
        :param time_budget_s: seconds for all drafts of one run together (None = no limit).
        :param max_query_chars: longer queries are cut to this many characters, with a warning (None = whole).
        :param prompt: "app_g" (the paper's: answer, rationale, key evidence, conflicts) or "short" (standard
            RAG's answer-only prompt and passages).
        :param prompt_template: replaces the subsets' template of `prompt` ({query}, {evidence}); the baseline
            keeps standard RAG's.
        """
        check_choice("prompt", prompt, PROMPTS)
        check_template(prompt_template, DRAFT_FIELDS, component="ParallelDraftGenerator")
        ranges.check("max_workers", max_workers)
        check_optional_int("max_evidence_chars", max_evidence_chars, 1)
        check_optional_seconds("timeout_s", timeout_s)
        check_optional_seconds("time_budget_s", time_budget_s)
        check_optional_int("max_query_chars", max_query_chars, 1)
        self.chat_generator = chat_generator
        self.max_workers = max_workers
        self.generation_kwargs = generation_kwargs
        self.max_evidence_chars = max_evidence_chars
        self.raise_on_failure = raise_on_failure
        self.timeout_s = timeout_s
        self.time_budget_s = time_budget_s
        self.max_query_chars = max_query_chars
        self.prompt = prompt
        self.prompt_template = prompt_template


    def to_dict(self) -> dict[str, Any]:
        """Serialise, including the injected generator."""
        return default_to_dict(self, chat_generator=serialize_component(self.chat_generator),
                               max_workers=self.max_workers, generation_kwargs=self.generation_kwargs,
                               max_evidence_chars=self.max_evidence_chars,
                               raise_on_failure=self.raise_on_failure, timeout_s=self.timeout_s,
                               time_budget_s=self.time_budget_s, max_query_chars=self.max_query_chars,
                               prompt=self.prompt, prompt_template=self.prompt_template)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ParallelDraftGenerator:
        """Deserialise, including the injected generator."""
        return default_from_dict(cls, deserialize_init_components(data, cls._INJECTED))

    @component.output_types(drafts=list[Draft])
    def run(
        self, query: str, subsets: list[list[Document]], baseline_documents: list[Document] | None = None,
        baseline_replies: list[ChatMessage] | None = None,
    ) -> dict[str, list[Draft]]:
        """
        :param query: the original question.
        :param subsets: one evidence list per draft (SpectralStratifier's `subsets`).
        :param baseline_documents: the original query's top-k: drafted first with standard RAG's prompt, the
            baseline the ranker protects (`meta["cfrag_source"] == "baseline"`, index = len(subsets)).
        :param baseline_replies: standard RAG's replies over `baseline_documents` (read, no call).
        :returns: `drafts` — the baseline first when given, then the subsets in order (failed ones carry `error`).
        """
        query = self._check(query, subsets)
        deadline = self._deadline()
        reused = self._reused(subsets, baseline_documents, baseline_replies)
        jobs = self._jobs(subsets, None if reused else baseline_documents)
        base = len(subsets)
        parent = current_span()  # this component's span: the parent of every draft's LLM-call span

        def draft(job: tuple[int, list[Document]]) -> Draft:
            return self._draft(job[0], query, job[1], deadline, short=job[0] == base, parent=parent)

        if self.max_workers == 1 or len(jobs) <= 1:
            drafts = [draft(job) for job in jobs]
        else:
            # each worker runs in a copy of this thread's contextvars: a tracer that keeps its
            # current span there (OpenTelemetry's) then nests the drafts under this component
            with ThreadPoolExecutor(max_workers=min(self.max_workers, len(jobs))) as pool:
                futures = [pool.submit(contextvars.copy_context().run, draft, job) for job in jobs]
                drafts = [f.result() for f in futures]
        drafts = _in_order(drafts, base)
        return {"drafts": self._report(self._mark_baseline(reused + drafts, baseline_documents))}

    @component.output_types(drafts=list[Draft])
    async def run_async(
        self, query: str, subsets: list[list[Document]], baseline_documents: list[Document] | None = None,
        baseline_replies: list[ChatMessage] | None = None,
    ) -> dict[str, list[Draft]]:
        """Async twin of `run`, with the same sockets; drafts run as tasks up to `max_workers`."""
        query = self._check(query, subsets)
        deadline = self._deadline()
        limit = asyncio.Semaphore(self.max_workers)
        parent = current_span()

        async def one(index: int, docs: list[Document]) -> Draft:
            if not docs:
                return self._no_evidence(index)
            async with limit:
                asked = await self.ask_result_async(**self._request(index, query, docs, deadline,
                                                                    index == len(subsets), parent))
                return self._drafted(index, docs, *asked)

        reused = self._reused(subsets, baseline_documents, baseline_replies)
        jobs = self._jobs(subsets, None if reused else baseline_documents)
        drafts = await asyncio.gather(*(one(i, docs) for i, docs in jobs))
        drafts = _in_order(drafts, len(subsets))
        return {"drafts": self._report(self._mark_baseline(reused + drafts, baseline_documents))}

    # ------------------------------------------------------------------ steps
    def _check(self, query: str, subsets: list[list[Document]]) -> str:
        if not isinstance(subsets, list) or not all(isinstance(s, list) for s in subsets):
            raise ValueError("ParallelDraftGenerator: 'subsets' must be a list of lists of documents.")
        return prepare_query(query, "ParallelDraftGenerator", self.max_query_chars)

    def _deadline(self) -> float | None:
        return None if self.time_budget_s is None else time.monotonic() + self.time_budget_s

    @staticmethod
    def _jobs(subsets: list[list[Document]], baseline: list[Document] | None) -> list[tuple[int, list[Document]]]:
        """(index, evidence) to draft: the baseline first (index len(subsets)), then the subsets."""
        if baseline is not None and not (isinstance(baseline, list) and all(isinstance(d, Document) for d in baseline)):
            raise ValueError("ParallelDraftGenerator: 'baseline_documents' must be a list of documents.")
        head = [(len(subsets), list(baseline))] if baseline is not None else []
        return head + list(enumerate(subsets))

    def _reused(self, subsets: list[list[Document]], baseline: list[Document] | None,
                replies: list[ChatMessage] | None) -> list[Draft]:
        """The baseline draft read from standard RAG's `replies` (none: it is drafted like the others)."""
        if replies is None or baseline is None:
            return []
        if not isinstance(replies, list) or not all(isinstance(r, ChatMessage) for r in replies):
            raise ValueError("ParallelDraftGenerator: 'baseline_replies' must be a list of chat messages.")
        self._jobs(subsets, baseline)  # the same check of `baseline_documents`
        if not baseline:
            return [self._no_evidence(len(subsets))]
        return [self._parse(len(subsets), list(baseline), {"replies": replies})]

    @staticmethod
    def _mark_baseline(drafts: list[Draft], baseline: list[Document] | None) -> list[Draft]:
        if baseline is None or not drafts:
            return drafts
        first = drafts[0]
        return [replace(first, meta={**first.meta, SOURCE_KEY: "baseline"})] + drafts[1:]

    def _prompt(self, query: str, docs: list[Document], short: bool = False) -> str:
        if short:  # the baseline: standard RAG's prompt, whatever `prompt` and `prompt_template` say
            return SHORT_DRAFT_PROMPT.format(query=query, evidence=render_plain_evidence(docs))
        if self.prompt == "short":
            template = self.prompt_template or SHORT_DRAFT_PROMPT
            return template.format(query=query, evidence=render_plain_evidence(docs))
        template = self.prompt_template or DRAFT_PROMPT
        return template.format(query=query, evidence=render_evidence(docs, self.max_evidence_chars))

    def _request(self, index: int, query: str, docs: list[Document], deadline: float | None, short: bool,
                 parent: Any | None) -> dict[str, Any]:
        """`ask_result`'s arguments for draft `index`: its prompt, the time left, one call at a time with one worker."""
        return {"prompt": self._prompt(query, docs, short=short), "call": _llm_call(index, parent),
                "what": f"draft {index}", "timeout_s": remaining(deadline, self.timeout_s),
                "exclusive": self.max_workers == 1}

    def _draft(
        self,
        index: int,
        query: str,
        docs: list[Document],
        deadline: float | None,
        short: bool = False,
        parent: Any | None = None,
    ) -> Draft:
        if not docs:
            return self._no_evidence(index)
        asked = self.ask_result(**self._request(index, query, docs, deadline, short, parent))
        return self._drafted(index, docs, *asked)

    @staticmethod
    def _no_evidence(index: int) -> Draft:
        logger.warning("ParallelDraftGenerator: subset {index} is empty; no draft written", index=index)
        return Draft(index=index, answer="", error=NO_EVIDENCE)

    def _drafted(self, index: int, docs: list[Document], result: dict[str, Any] | None,
                 exc: Exception | None) -> Draft:
        """The draft read from `ask_result`'s reply; a failed call is recorded on the draft (see class doc)."""
        return self._parse(index, docs, result) if exc is None else self._failed(index, docs, exc)

    def _failed(self, index: int, docs: list[Document], exc: Exception) -> Draft:
        logger.warning("ParallelDraftGenerator: draft {index} failed: {error}", index=index, error=repr(exc))
        return Draft(index=index, answer="", documents=docs, error=repr(exc))

    def _parse(self, index: int, docs: list[Document], result: dict[str, Any]) -> Draft:
        replies = result.get("replies") or []
        text = (replies[0].text or "") if replies else ""
        meta = dict(replies[0].meta) if replies else {}
        parsed = parse_draft_reply(text)
        error = None if parsed["answer"] else "empty reply"
        if error:
            if self.raise_on_failure:
                raise RuntimeError(f"ParallelDraftGenerator: draft {index} got an empty reply.")
            logger.warning("ParallelDraftGenerator: draft {index} got an empty reply", index=index)
        return Draft(index=index, answer=parsed["answer"], rationale=parsed["rationale"], documents=docs,
                     key_evidence=parsed["key_evidence"], conflicts=parsed["conflicts"], reply=text,
                     token_logprobs=token_logprobs(meta), parsed_by=parsed["parsed_by"], error=error,
                     meta={k: v for k, v in meta.items() if k in ("model", "usage", "finish_reason")})

    @staticmethod
    def _report(drafts: list[Draft]) -> list[Draft]:
        if drafts and all(d.failed for d in drafts):
            logger.warning("ParallelDraftGenerator: every draft failed ({n})", n=len(drafts))
        return drafts


def _in_order(drafts: list[Draft], baseline_index: int) -> list[Draft]:
    """The baseline first (when drafted here), then the subsets' drafts by index."""
    return sorted(drafts, key=lambda d: (d.index != baseline_index, d.index))


def _llm_call(index: int, parent: Any | None) -> LLMCall:
    return LLMCall(stage="draft", component="ParallelDraftGenerator", index=index, parent_span=parent)


def token_logprobs(meta: dict[str, Any]) -> list[float] | None:
    """Token log-probabilities from a reply's meta (OpenAI's or llama.cpp's shapes); None if absent."""
    value = meta.get("logprobs")
    if isinstance(value, dict):
        value = value.get("content", value.get("token_logprobs"))
    if value is None:
        value = meta.get("token_logprobs")
    if not isinstance(value, list) or not value:
        return None
    out: list[float] = []
    for item in value:
        number = item.get("logprob") if isinstance(item, dict) else item
        if isinstance(number, numbers.Real) and not isinstance(number, bool):  # numpy floats included
            out.append(float(number))
    return out or None
