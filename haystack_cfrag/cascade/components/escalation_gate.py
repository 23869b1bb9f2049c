"""EscalationGate: after standard RAG, say whether a causal method could change its answer."""

from __future__ import annotations

import asyncio
import math
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.dataclasses import ChatMessage

from haystack_cfrag.cascade.math import THRESHOLD_RANGE, answer_of, decide, signals
from haystack_cfrag.common.plumbing import DEFAULT_MAX_QUERY_CHARS, InjectedParts, degradation, prepare_query
from haystack_cfrag.common.protocols import SupportScorer
from haystack_cfrag.common.replies import reply_text
from haystack_cfrag.common.serialization import deserialize_init_components, serialize_component
from haystack_cfrag.common.validation import check_range

COMPONENT = "EscalationGate"
MAX_ANSWER_PREFIX = 200
DEFAULT_THRESHOLD = -0.2
"""The component's default (nats per token): `cf_rag_auto`'s, which kept every CF-RAG win of the tuning sets;
each cascade YAML sets its own (docs/cascade.md)."""

logger = logging.getLogger(__name__)


@component
class EscalationGate(InjectedParts):
    """
    Reads standard RAG's run and says whether to escalate to a causal method (`escalate`), and why.

    The signals (`haystack_cfrag.cascade.math`): the reader's support of standard RAG's answer,
    read as its reply to the prompt it answered (`support_scorer.score_reply`: llama.cpp still holds
    that prompt, so only the answer's tokens are evaluated; without `prompt`, `score` reads the
    passages afresh), how many passages state the answer, and the retrieval scores. It escalates
    when the reader is unsure (support below `threshold`), when there is no answer, or when no
    passage states it. It knows nothing of the method behind it: a cascade routes on `escalate`
    (Haystack's `ConditionalRouter`). A scorer that fails escalates, with a degradation in the trace
    (the method runs, as it would without a gate).

    ### Usage example
    ```python
    from haystack import Document
    from haystack.dataclasses import ChatMessage
    from haystack_cfrag.cascade.components import EscalationGate

    class UnsureScorer:  # a stand-in for ReaderSupportScorer
        def score(self, query, answer, documents):
            return -1.2

    gate = EscalationGate(support_scorer=UnsureScorer(), threshold=-0.3)
    out = gate.run(query="Tallest mountain from base to summit?",
                   replies=[ChatMessage.from_assistant("Answer: Mount Everest")],
                   documents=[Document(content="Mount Everest is 8,849 m above sea level.")])
    print(out["escalate"], out["trace"]["because"])  # True the reader is unsure of its answer (support -1.20 < -0.30)
    ```
    """

    _INJECTED = ("support_scorer",)

    def __init__(
        self,
        *,
        support_scorer: SupportScorer,
        threshold: float = DEFAULT_THRESHOLD,
        answer_prefix: str = "Answer:",
        max_query_chars: int | None = DEFAULT_MAX_QUERY_CHARS,
    ) -> None:
        """
        :param support_scorer: anything with `score(query, answer, documents) -> float` (a log-probability);
            with `score_reply(messages, answer, reply_prefix)` too, the answer is read under `prompt`.
        :param threshold: escalate when the support is below this, in [-20, 0] nats per token.
        :param answer_prefix: the reply's text before the answer ("Answer:" for standard RAG's prompt),
            at most 200 characters; the answer is the rest of that line (the whole first line without it).
        :param max_query_chars: longer queries are cut to this many characters, with a warning (None = whole).
        """
        if not callable(getattr(support_scorer, "score", None)):
            raise ValueError(
                f"'support_scorer' must have a score(query, answer, documents) method, got {support_scorer!r}."
            )
        check_range("threshold", threshold, *THRESHOLD_RANGE)
        if not isinstance(answer_prefix, str) or len(answer_prefix) > MAX_ANSWER_PREFIX:
            raise ValueError(f"'answer_prefix' must be a string of at most {MAX_ANSWER_PREFIX} characters.")
        self.support_scorer = support_scorer
        self.threshold = threshold
        self.answer_prefix = answer_prefix
        self.max_query_chars = max_query_chars

    def to_dict(self) -> dict[str, Any]:
        """Serialise, including the injected scorer."""
        return default_to_dict(self, support_scorer=serialize_component(self.support_scorer),
                               threshold=self.threshold, answer_prefix=self.answer_prefix,
                               max_query_chars=self.max_query_chars)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EscalationGate:
        """Deserialise, including the injected scorer."""
        return default_from_dict(cls, deserialize_init_components(data, cls._INJECTED))

    @component.output_types(escalate=bool, answer=str, trace=dict[str, Any])
    def run(
        self,
        query: str,
        replies: list[ChatMessage],
        documents: list[Document],
        prompt: list[ChatMessage] | None = None,
        threshold: float | None = None,
    ) -> dict[str, Any]:
        """
        :param query: the question standard RAG answered.
        :param replies: standard RAG's generator replies (the first is read).
        :param documents: the passages standard RAG read, best first.
        :param prompt: the messages standard RAG's generator answered (the answer is scored as its reply).
        :param threshold: this run's threshold (None: the component's).
        :returns: `escalate`, `answer` (standard RAG's answer as the gate read it, when there is one: what a
            method that measures an answer's evidence, CER's selector, takes instead of drafting it again) and `trace` (escalated,
            because, the signals, the threshold, degradations).
        """
        reading = _Reading(self, query, replies, documents, prompt, threshold)
        return reading.decided(*self._support(reading))

    @component.output_types(escalate=bool, answer=str, trace=dict[str, Any])
    async def run_async(
        self,
        query: str,
        replies: list[ChatMessage],
        documents: list[Document],
        prompt: list[ChatMessage] | None = None,
        threshold: float | None = None,
    ) -> dict[str, Any]:
        """Async twin of `run`, with the same sockets (the scoring runs in a worker thread)."""
        reading = _Reading(self, query, replies, documents, prompt, threshold)
        return reading.decided(*(await asyncio.to_thread(self._support, reading)))

    def _support(self, reading: _Reading) -> tuple[float | None, Exception | None]:
        if not reading.answer:
            return None, None
        try:
            if reading.prompt is not None and callable(getattr(self.support_scorer, "score_reply", None)):
                value = self.support_scorer.score_reply(reading.prompt, reply_text(self.answer_prefix, reading.answer),
                                                        self.answer_prefix)
            else:
                value = self.support_scorer.score(reading.query, reading.answer, reading.documents)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
                raise TypeError(f"the scorer gave {value!r}, not a log-probability")
        except Exception as exc:  # noqa: BLE001  (a failing scorer escalates, see class doc)
            logger.warning("{component}: the support scorer failed, escalating: {error}", component=COMPONENT,
                           error=repr(exc))
            return None, exc
        return float(value), None


class _Reading:
    """One gate reading: the checked inputs, then the decision (no I/O here)."""

    def __init__(self, gate: EscalationGate, query: Any, replies: Any, documents: Any, prompt: Any,
                 threshold: Any) -> None:
        self.query = prepare_query(query, COMPONENT, gate.max_query_chars)
        if not isinstance(documents, list) or not all(isinstance(d, Document) for d in documents):
            raise ValueError(f"{COMPONENT}: 'documents' must be a list of documents.")
        if not isinstance(replies, list) or not all(isinstance(r, (ChatMessage, str)) for r in replies):
            raise ValueError(f"{COMPONENT}: 'replies' must be a list of chat messages or strings.")
        if prompt is not None and (not isinstance(prompt, list) or not prompt
                                   or not all(isinstance(m, ChatMessage) for m in prompt)):
            raise ValueError(f"{COMPONENT}: 'prompt' must be a non-empty list of chat messages.")
        if threshold is not None:
            check_range("threshold", threshold, *THRESHOLD_RANGE)
        self.threshold = gate.threshold if threshold is None else float(threshold)
        self.documents = list(documents)
        self.prompt = prompt
        first = replies[0] if replies else ""
        text = (first.text or "") if isinstance(first, ChatMessage) else first
        self.answer = answer_of(text, gate.answer_prefix)

    def decided(self, support: float | None, error: Exception | None) -> dict[str, Any]:
        reading = signals(self.answer, [d.content or "" for d in self.documents], support,
                          [d.score for d in self.documents])
        decision = decide(reading, threshold=self.threshold)
        trace: dict[str, Any] = {"escalated": decision.escalate, "because": decision.because,
                                 "threshold": self.threshold, "signals": reading, "degradations": []}
        if error is not None:
            trace["degradations"].append(degradation("gate", f"support scorer failed: {error!r}"))
        out = {"escalate": decision.escalate, "trace": trace}
        if self.answer:  # no answer: nothing to hand on (a method then finds its own)
            out["answer"] = self.answer
        return out
