"""ReaderSupportScorer: the reader's own support score for given answers (docs/support.md)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.dataclasses import ChatMessage

from haystack_cfrag.common.plumbing import DEFAULT_MAX_QUERY_CHARS, InjectedParts, prepare_query
from haystack_cfrag.common.prompting import check_template, render_evidence
from haystack_cfrag.common.protocols import ChatGenerator
from haystack_cfrag.common.serialization import deserialize_init_components, serialize_component
from haystack_cfrag.common.timing import count_scoring
from haystack_cfrag.common.validation import check_bool, check_int, check_optional_int
from haystack_cfrag.support.backends import AnswerLogprobs, Prompt, SupportBackend, backend_for
from haystack_cfrag.support.llama_cpp_backend import DEFAULT_PREFIX_STATES, MAX_PREFIX_STATES
from haystack_cfrag.support.math import (
    OPTION_LETTERS,
    counterfactual_margin,
    evidence_pmi,
    mean_logprob,
    option_orders,
    option_scores,
)

logger = logging.getLogger(__name__)

COMPONENT = "ReaderSupportScorer"

SUPPORT_PROMPT = """Answer the question using only the evidence below.

Evidence:
{evidence}

Question: {query}
Reply with the short answer only."""
"""The user turn whose assistant reply is the scored answer: evidence first, the question last."""

SUPPORT_FIELDS = ("query", "evidence")

OPTIONS_PROMPT = """Answer the question using only the evidence below.

Evidence:
{evidence}

Question: {query}
Options:
{options}
Reply with the letter of the correct option only."""
"""The multiple-choice reading: the candidates listed as lettered options after the question."""


_OUTPUTS = {"support": list[float], "counterfactual_support": list[list[float]], "margin": list[float | None],
            "erased_support": list[float] | None, "pmi": list[float] | None, "trace": dict[str, Any]}
"""The component's sockets: `SupportScores`' fields."""


@dataclass
class SupportScores:
    """What one scoring of answers gives (the component's outputs, as a dataclass)."""

    support: list[float]
    counterfactual_support: list[list[float]]
    margin: list[float | None]
    erased_support: list[float] | None = None
    pmi: list[float] | None = None
    trace: dict[str, Any] = field(default_factory=dict)

    def as_outputs(self) -> dict[str, Any]:
        """The component's output dict."""
        return {"support": self.support, "counterfactual_support": self.counterfactual_support,
                "margin": self.margin, "erased_support": self.erased_support, "pmi": self.pmi,
                "trace": self.trace}


@component
class ReaderSupportScorer(InjectedParts):
    """
    Scores given answers by the reader's own log-probabilities: support(a | q, E).

    For each answer a: `support` = mean log P(a's tokens | evidence first, question last, a as the reply);
    `counterfactual_support` under each q'_j; `margin` = support − max_j of those; with `erased_contrast`,
    `erased_support` (no evidence) and `pmi`. Calls run in the order that reuses the prompt prefix; `trace`
    gives their cost. The reader is a llama.cpp, transformers or log-prob-echoing OpenAI-compatible generator
    (others refused in one line); components call `score` or `scores`.

    ### Usage example
    ```python
    from haystack import Document
    from haystack_cfrag.support import ReaderSupportScorer
    from haystack_cfrag.testing import MockChatGenerator

    # the reader: LlamaCppLogprobsChatGenerator(model="embedded:qwen2.5-coder-1.5b-instruct"); a stand-in here
    scorer = ReaderSupportScorer(chat_generator=MockChatGenerator())
    out = scorer.run(query="Who is the lead actor in The Dark Knight?", answers=["Christian Bale"],
                     documents=[Document(content="Christian Bale stars as Bruce Wayne.")],
                     counterfactual_queries=["Who played the villain in The Dark Knight?"])
    print(out["support"], out["margin"], out["trace"]["tokens_evaluated"])
    ```
    """

    _INJECTED = ("chat_generator",)

    def __init__(
        self,
        *,
        chat_generator: ChatGenerator,
        erased_contrast: bool = False,
        max_evidence_chars: int | None = 2000,
        max_query_chars: int | None = DEFAULT_MAX_QUERY_CHARS,
        prompt_template: str | None = None,
        chat_template: str | None = None,
        prefix_states: int = DEFAULT_PREFIX_STATES,
    ) -> None:
        """
        :param chat_generator: the reader (a Haystack ChatGenerator whose log-probabilities can be read).
        :param erased_contrast: also score each answer without evidence (`erased_support`, `pmi`).
        :param max_evidence_chars: each passage is cut to this many characters (None = whole), as the drafter does.
        :param max_query_chars: longer queries are cut to this many characters, with a warning (None = whole).
        :param prompt_template: replaces the built-in user turn: a `str.format` string with {query} and {evidence}.
        :param chat_template: Jinja chat template for OpenAI-compatible servers (None = ChatML).
        :param prefix_states: KV states of this many earlier prompts kept to start from (in-process llama.cpp).
        """
        check_bool("erased_contrast", erased_contrast, component=COMPONENT)
        check_optional_int("max_evidence_chars", max_evidence_chars, 1)
        check_optional_int("max_query_chars", max_query_chars, 1)
        check_int("prefix_states", prefix_states, 0, MAX_PREFIX_STATES)
        check_template(prompt_template, SUPPORT_FIELDS, component=COMPONENT)
        if chat_template is not None and (not isinstance(chat_template, str) or not chat_template.strip()):
            raise ValueError(f"{COMPONENT}: 'chat_template' must be a non-empty Jinja string or None.")
        self.chat_generator = chat_generator
        self.erased_contrast = erased_contrast
        self.max_evidence_chars = max_evidence_chars
        self.max_query_chars = max_query_chars
        self.prompt_template = prompt_template
        self.chat_template = chat_template
        self.prefix_states = prefix_states
        self._backend: SupportBackend | None = None

    # ------------------------------------------------------------------ lifecycle
    def warm_up(self) -> None:
        """Pick the backend for the injected generator and load the model (once)."""
        self._ensure_backend()

    def _ensure_backend(self) -> SupportBackend:
        if self._backend is None:
            backend = backend_for(self.chat_generator, chat_template=self.chat_template,
                                  prefix_states=self.prefix_states)
            backend.warm_up()
            self._backend = backend
        return self._backend

    def close(self) -> None:
        """Release the backend's client and what the injected generator holds."""
        self._release_backend()
        InjectedParts.close(self)

    async def close_async(self) -> None:
        """Async twin of `close`."""
        self._release_backend()
        await InjectedParts.close_async(self)

    def _release_backend(self) -> None:
        backend, self._backend = self._backend, None
        if backend is not None and hasattr(backend, "close"):
            backend.close()

    def to_dict(self) -> dict[str, Any]:
        """Serialise, including the injected generator."""
        return default_to_dict(self, chat_generator=serialize_component(self.chat_generator),
                               erased_contrast=self.erased_contrast,
                               max_evidence_chars=self.max_evidence_chars,
                               max_query_chars=self.max_query_chars, prompt_template=self.prompt_template,
                               chat_template=self.chat_template, prefix_states=self.prefix_states)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ReaderSupportScorer:
        """Deserialise, including the injected generator."""
        return default_from_dict(cls, deserialize_init_components(data, cls._INJECTED))

    # ------------------------------------------------------------------ sockets
    @component.output_types(**_OUTPUTS)
    def run(
        self,
        query: str,
        answers: list[str],
        documents: list[Document],
        counterfactual_queries: list[str] | None = None,
    ) -> dict[str, Any]:
        """
        :param query: the question q.
        :param answers: the candidate answers to score.
        :param documents: the evidence E, in the order it is shown.
        :param counterfactual_queries: the counterfactual questions q'_j (None or [] = no margin).
        :returns: `support`, `counterfactual_support` (per answer × q'), `margin`, `erased_support` and `pmi`
            (None unless enabled), `trace`.
        """
        return self.scores(query, answers, documents, counterfactual_queries).as_outputs()

    @component.output_types(**_OUTPUTS)
    async def run_async(
        self,
        query: str,
        answers: list[str],
        documents: list[Document],
        counterfactual_queries: list[str] | None = None,
    ) -> dict[str, Any]:
        """Async twin of `run`, with the same sockets (the scoring runs in a worker thread)."""
        scores = await asyncio.to_thread(self.scores, query, answers, documents, counterfactual_queries)
        return scores.as_outputs()

    # ------------------------------------------------------------------ plain methods
    def score(self, query: str, answer: str, documents: list[Document]) -> float:
        """support(answer | query, documents): one length-normalised log-probability."""
        return self._scores(query, [answer], documents, None, erased=False).support[0]

    def score_reply(self, messages: list[ChatMessage], answer: str, reply_prefix: str = "") -> float:
        """support(answer | messages): `answer`'s length-normalised log-probability as the reader's reply to
        `messages`, after the unscored `reply_prefix` (a reader that just answered them re-reads nothing)."""
        return self.read_reply(messages, answer, reply_prefix)["support"]

    def read_reply(self, messages: list[ChatMessage] | str, answer: str, reply_prefix: str = "") -> dict[str, Any]:
        """`score_reply`'s scoring with what the same logits say besides (one reading, no second pass); `messages`
        may be one user turn's text.

        :returns: `support`, and where whole logit rows are read `margin` (the top-1 − top-2 gap at the first
            answer token), `min_margin` (over its tokens) and `rank` (of its first token), else None;
            `tokens_evaluated`, what the reading cost.
        """
        if isinstance(messages, str) and messages.strip():
            messages = [ChatMessage.from_user(messages)]  # one user turn
        if not isinstance(messages, list) or not messages or not all(isinstance(m, ChatMessage) for m in messages):
            raise ValueError(f"{COMPONENT}: 'messages' must be a non-empty list of ChatMessage (or one user turn's "
                             "text).")
        if not isinstance(answer, str) or not answer.strip():
            raise ValueError(f"{COMPONENT}: 'answer' must be a non-empty string.")
        if not isinstance(reply_prefix, str):
            raise ValueError(f"{COMPONENT}: 'reply_prefix' must be a string.")
        prompt = [{"role": m.role.value, "content": m.text or ""} for m in messages]
        return _reading(_scored(self._ensure_backend(), prompt, answer, reply_prefix))

    def read_generated(self, messages: list[ChatMessage], answer: str, reply_prefix: str,
                       token_reads: Any) -> dict[str, Any] | None:
        """`read_reply`'s reading taken from `token_reads`, what the reader kept as it wrote its reply to `messages`
        (`LlamaCppLogprobsChatGenerator(read_tokens=…)`: the same logits, so the same numbers, nothing evaluated);
        None where the reply is not `reply_prefix` then `answer` token for token, or the backend cannot tell (the
        caller then calls `read_reply`)."""
        if not token_reads or not isinstance(answer, str) or not answer.strip() or not isinstance(messages, list) \
                or not messages or not all(isinstance(m, ChatMessage) for m in messages):
            return None
        reader = getattr(self._ensure_backend(), "generated_logprobs", None)
        if not callable(reader):
            return None
        prompt = [{"role": m.role.value, "content": m.text or ""} for m in messages]
        result = reader(prompt, answer, reply_prefix, token_reads)
        if result is None:
            return None
        count_scoring(result.tokens_evaluated, result.seconds, len(result.token_logprobs))
        return _reading(result)

    def scores(
        self,
        query: str,
        answers: list[str],
        documents: list[Document],
        counterfactual_queries: list[str] | None = None,
    ) -> SupportScores:
        """The run's outputs as a `SupportScores` (for other components: CER, CDF-RAG, CF-RAG)."""
        return self._scores(query, answers, documents, counterfactual_queries, erased=self.erased_contrast)

    def _scores(
        self, query: Any, answers: Any, documents: Any, counterfactual_queries: Any, *, erased: bool
    ) -> SupportScores:
        query, answers, documents, cfs = self._check(query, answers, documents, counterfactual_queries)
        if not answers:
            empty = [] if erased else None
            return SupportScores([], [], [], empty, list(empty) if empty is not None else None,
                                 self._trace([], 0.0))
        backend = self._ensure_backend()
        evidence = render_evidence(documents, self.max_evidence_chars)
        calls: list[dict[str, Any]] = []
        start = time.perf_counter()

        def one(q: str, answer_index: int, ev: str, role: str) -> float:
            result = _scored(backend, self._prompt(q, ev), answers[answer_index])
            calls.append(_call_record(role, answer_index, result))
            return mean_logprob(result.token_logprobs)

        # the order that reuses the prefix: every answer under q, then under each q'_j, then erased
        support = [one(query, i, evidence, "q") for i in range(len(answers))]
        by_cf = [[one(cf, i, evidence, f"q'{j}") for i in range(len(answers))] for j, cf in enumerate(cfs)]
        cf_support = [[row[i] for row in by_cf] for i in range(len(answers))]
        margin = [counterfactual_margin(s, row) for s, row in zip(support, cf_support, strict=True)]
        erased_support = pmi = None
        if erased:
            empty = render_evidence([])
            erased_support = [one(query, i, empty, "erased") for i in range(len(answers))]
            pmi = [evidence_pmi(s, e) for s, e in zip(support, erased_support, strict=True)]
        trace = self._trace(calls, time.perf_counter() - start)
        return SupportScores(support, cf_support, margin, erased_support, pmi, trace)

    def option_support(
        self, query: str, answers: list[str], documents: list[Document], max_orders: int | None = None
    ) -> list[float]:
        """The multiple-choice reading: the answers as lettered options, each order's letters scored as the reply
        and averaged over the cyclic orders (`option_scores`)."""
        query, answers, documents, _ = self._check(query, answers, documents, None)
        if not answers:
            return []
        if len(answers) > len(OPTION_LETTERS):
            raise ValueError(f"{COMPONENT}: at most {len(OPTION_LETTERS)} options, got {len(answers)}.")
        backend = self._ensure_backend()
        evidence = render_evidence(documents, self.max_evidence_chars)
        orders = option_orders(len(answers), max_orders)
        rows = []
        for order in orders:
            options = "\n".join(f"{OPTION_LETTERS[p]}. {answers[c]}" for p, c in enumerate(order))
            prompt = OPTIONS_PROMPT.format(evidence=evidence, query=query, options=options)
            rows.append(
                [
                    mean_logprob(_scored(backend, prompt, OPTION_LETTERS[p]).token_logprobs)
                    for p in range(len(order))
                ]
            )
        return option_scores(orders, rows)

    # ------------------------------------------------------------------ steps
    def _prompt(self, query: str, evidence: str) -> str:
        return (self.prompt_template or SUPPORT_PROMPT).format(query=query, evidence=evidence)

    def _check(
        self, query: Any, answers: Any, documents: Any, counterfactual_queries: Any
    ) -> tuple[str, list[str], list[Document], list[str]]:
        query = prepare_query(query, COMPONENT, self.max_query_chars)
        if not isinstance(answers, list) or not all(isinstance(a, str) and a.strip() for a in answers):
            raise ValueError(f"{COMPONENT}: 'answers' must be a list of non-empty strings.")
        if not isinstance(documents, list) or not all(isinstance(d, Document) for d in documents):
            raise ValueError(f"{COMPONENT}: 'documents' must be a list of documents.")
        if counterfactual_queries is None:
            cfs: list[str] = []
        elif isinstance(counterfactual_queries, list) and all(
            isinstance(q, str) for q in counterfactual_queries
        ):
            cfs = [prepare_query(q, COMPONENT, self.max_query_chars) for q in counterfactual_queries]
        else:
            raise ValueError(f"{COMPONENT}: 'counterfactual_queries' must be a list of strings or None.")
        return query, [a.strip() for a in answers], list(documents), cfs

    def _trace(self, calls: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
        backend = self._backend.name if self._backend is not None else None
        return {
            "backend": backend,
            "calls": len(calls),
            "tokens_evaluated": sum(c["tokens_evaluated"] for c in calls),
            "tokens_reused": sum(c["tokens_reused"] for c in calls),
            "seconds": seconds,
            "per_call": calls,
        }


def _scored(backend: SupportBackend, prompt: Prompt, answer: str, reply_prefix: str = "") -> AnswerLogprobs:
    """One scoring, counted into the question's LLM usage (`timing.count_scoring`) as it is made."""
    if reply_prefix:  # only then: a user's own backend (`support_backend()`) may predate the argument
        result = backend.answer_logprobs(prompt, answer, reply_prefix=reply_prefix)
    else:
        result = backend.answer_logprobs(prompt, answer)
    count_scoring(result.tokens_evaluated, result.seconds, len(result.token_logprobs))
    return result


def _reading(result: AnswerLogprobs) -> dict[str, Any]:
    """`read_reply`'s dict from one scoring: the support, and what the logit rows say where they were read."""
    margins = tuple(getattr(result, "token_margins", ()) or ())
    ranks = tuple(getattr(result, "token_ranks", ()) or ())
    return {"support": mean_logprob(result.token_logprobs),
            "margin": margins[0] if margins else None,
            "min_margin": min(margins) if margins else None,
            "rank": ranks[0] if ranks else None,
            "tokens_evaluated": result.tokens_evaluated}


def _call_record(role: str, answer_index: int, result: AnswerLogprobs) -> dict[str, Any]:
    """One scoring in the trace: under which question, which answer, its cost."""
    return {
        "query": role,
        "answer": answer_index,
        "answer_tokens": len(result.token_logprobs),
        "tokens_evaluated": result.tokens_evaluated,
        "tokens_reused": result.tokens_reused,
        "seconds": round(result.seconds, 4),
    }


__all__ = ["OPTIONS_PROMPT", "SUPPORT_PROMPT", "ReaderSupportScorer", "SupportScores"]
