"""EscalationGate: after standard RAG, say whether a causal method could change its answer."""

from __future__ import annotations

import asyncio
import math
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.dataclasses import ChatMessage

from haystack_cfrag.adapters.token_reads import META_KEY as TOKEN_READS
from haystack_cfrag.cascade.math import READS, answer_of, decide, signals
from haystack_cfrag.cascade.model import PROBABILITY_RANGE, GateModel
from haystack_cfrag.common.plumbing import DEFAULT_MAX_QUERY_CHARS, InjectedParts, degradation, prepare_query
from haystack_cfrag.common.protocols import SupportScorer
from haystack_cfrag.common.replies import reply_text
from haystack_cfrag.common.serialization import deserialize_init_components, serialize_component
from haystack_cfrag.common.validation import check_bool, check_range

COMPONENT = "EscalationGate"
MAX_ANSWER_PREFIX = 200

logger = logging.getLogger(__name__)


@component
class EscalationGate(InjectedParts):
    """
    Reads standard RAG's run and says whether to escalate to a causal method (`escalate`), and why.

    The reading (`haystack_cfrag.cascade.math`): the reader's support of standard RAG's answer and the
    margin and rank its logits give at the same positions, read as its reply to the prompt it answered
    (`support_scorer.read_reply`: llama.cpp still holds that prompt, so only the answer's tokens are
    evaluated; none where the reader kept its reading as it wrote the reply, `read_generated` with the
    reply's `meta["token_reads"]`; a scorer with only `score` reads the passages afresh), how many passages state
    the answer, the retrieval scores, the answer's form (and the question's, where a model names it). A fitted `model`
    (`cascade.model.GateModel`:
    plain numbers, written by `cfrag gate fit`) turns them into P(the method wins here); the gate escalates
    when that reaches `threshold` (default: the model's operating point), when there is no answer, or when
    the support cannot be read. It knows nothing of the method behind it: a cascade routes on `escalate`
    (Haystack's `ConditionalRouter`), and may route on `decided_by`, the rule that decided
    (`cascade.math.RULES`). A scorer that fails escalates, with a degradation in the trace
    (the method runs, as it would without a gate).

    ### Usage example
    ```python
    from haystack import Document
    from haystack.dataclasses import ChatMessage
    from haystack_cfrag.cascade.components import EscalationGate

    class UnsureScorer:  # a stand-in for ReaderSupportScorer
        def score(self, query, answer, documents):
            return -1.2

    model = {"features": ["support"], "means": [-0.5], "scales": [0.5], "weights": [-2.0], "intercept": -1.0,
             "threshold": 0.5}
    gate = EscalationGate(support_scorer=UnsureScorer(), model=model)
    out = gate.run(query="Tallest mountain from base to summit?",
                   replies=[ChatMessage.from_assistant("Answer: Mount Everest")],
                   documents=[Document(content="Mount Everest is 8,849 m above sea level.")])
    print(out["escalate"], out["trace"]["because"])  # True P(the method wins) 0.86 ≥ 0.50: support -1.2 (+2.80)
    print(out["decided_by"])  # model
    ```
    """

    _INJECTED = ("support_scorer",)

    def __init__(
        self,
        *,
        support_scorer: SupportScorer,
        model: dict[str, Any],
        threshold: float | None = None,
        answer_prefix: str = "Answer:",
        max_query_chars: int | None = DEFAULT_MAX_QUERY_CHARS,
        period_gap: float | None = None,
        elsewhere_pile: bool = False,
        pile: bool = False,
    ) -> None:
        """
        :param support_scorer: anything with `score(query, answer, documents) -> float` (a log-probability);
            with `read_reply(messages, answer, reply_prefix)` (support, margin, rank) or `score_reply(…)` too,
            the answer is read under `prompt`; with `read_generated(messages, answer, reply_prefix, token_reads)`
            too, from what the reader kept as it wrote the reply (`LlamaCppLogprobsChatGenerator(read_tokens=…)`).
        :param model: the fitted gate (`GateModel.from_dict`'s mapping of numbers), checked here.
        :param threshold: escalate when P(the method wins) is at least this, in [0, 1]; None: the model's own.
        :param answer_prefix: the reply's text before the answer ("Answer:" for standard RAG's prompt),
            at most 200 characters; the answer is the rest of that line (the whole first line without it).
        :param max_query_chars: longer queries are cut to this many characters, with a warning (None = whole).
        :param period_gap: also escalate, below a threshold of 1, where a passage dates the question's period
            better than every passage stating the answer by at least this, in (0, 1] (`cascade.math.decide`);
            None: the model alone.
        :param elsewhere_pile: also escalate, below a threshold of 1, where two or more passages state the answer
            and every one dates it to another period than the question's (`cascade.math.decide`).
        :param pile: also escalate, below a threshold of 1, where the model does not but two or more passages state
            the answer and the best-ranked one does not: the Correlation Trap's shape (`cascade.math.decide`).
        """
        check_bool("elsewhere_pile", elsewhere_pile)
        check_bool("pile", pile)
        if period_gap is not None:
            check_range("period_gap", period_gap, 0.0, 1.0, low_open=True)
        if not callable(getattr(support_scorer, "score", None)):
            raise ValueError(
                f"'support_scorer' must have a score(query, answer, documents) method, got {support_scorer!r}."
            )
        self._model = GateModel.from_dict(model)
        if threshold is not None:
            check_range("threshold", threshold, *PROBABILITY_RANGE)
        if not isinstance(answer_prefix, str) or len(answer_prefix) > MAX_ANSWER_PREFIX:
            raise ValueError(f"'answer_prefix' must be a string of at most {MAX_ANSWER_PREFIX} characters.")
        self.support_scorer = support_scorer
        self.model = self._model.to_dict()
        self.threshold = threshold
        self.answer_prefix = answer_prefix
        self.max_query_chars = max_query_chars
        self.period_gap = period_gap
        self.elsewhere_pile = elsewhere_pile
        self.pile = pile

    def to_dict(self) -> dict[str, Any]:
        """Serialise, including the injected scorer."""
        return default_to_dict(self, support_scorer=serialize_component(self.support_scorer),
                               model=self.model, threshold=self.threshold, answer_prefix=self.answer_prefix,
                               max_query_chars=self.max_query_chars, period_gap=self.period_gap,
                               elsewhere_pile=self.elsewhere_pile, pile=self.pile)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EscalationGate:
        """Deserialise, including the injected scorer."""
        return default_from_dict(cls, deserialize_init_components(data, cls._INJECTED))

    @component.output_types(escalate=bool, decided_by=str, answer=str, trace=dict[str, Any])
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
        :param threshold: this run's operating point, a probability in [0, 1] (None: the component's).
        :returns: `escalate`, `decided_by` (the rule that decided, `cascade.math.RULES`), `answer` (standard
            RAG's answer as the gate read it, when there is one: what a method that measures an answer's
            evidence, CER's selector, takes instead of drafting it again) and `trace` (escalated, because, the
            signals, the threshold, degradations).
        """
        reading = _Reading(self, query, replies, documents, prompt, threshold)
        return reading.decided(*self._support(reading))

    @component.output_types(escalate=bool, decided_by=str, answer=str, trace=dict[str, Any])
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

    def _support(self, reading: _Reading) -> tuple[dict[str, Any] | None, Exception | None]:
        """The scorer's reading of the answer: {"support", and where it reads logit rows "margin", …}."""
        if not reading.answer:
            return None, None
        try:
            scorer, reply = self.support_scorer, reply_text(self.answer_prefix, reading.answer)
            generated = None
            if reading.prompt is not None and reading.token_reads and callable(getattr(scorer, "read_generated", None)):
                generated = scorer.read_generated(reading.prompt, reply, self.answer_prefix, reading.token_reads)
            if generated is not None:
                read = dict(generated)
            elif reading.prompt is not None and callable(getattr(scorer, "read_reply", None)):
                read = dict(scorer.read_reply(reading.prompt, reply, self.answer_prefix))
            elif reading.prompt is not None and callable(getattr(scorer, "score_reply", None)):
                read = {"support": scorer.score_reply(reading.prompt, reply, self.answer_prefix)}
            else:
                read = {"support": scorer.score(reading.query, reading.answer, reading.documents)}
            value = read.get("support")
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
                raise TypeError(f"the scorer gave {value!r}, not a log-probability")
        except Exception as exc:  # noqa: BLE001  (a failing scorer escalates, see class doc)
            logger.warning("{component}: the support scorer failed, escalating: {error}", component=COMPONENT,
                           error=repr(exc))
            return None, exc
        return read, None


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
            check_range("threshold", threshold, *PROBABILITY_RANGE)
        self.model = gate._model  # noqa: SLF001  (the checked model)
        chosen = threshold if threshold is not None else gate.threshold
        self.threshold = float(self.model.threshold if chosen is None else chosen)
        self.period_gap = gate.period_gap
        self.elsewhere_pile = gate.elsewhere_pile
        self.pile = gate.pile
        self.documents = list(documents)
        self.prompt = prompt
        first = replies[0] if replies else ""
        text = (first.text or "") if isinstance(first, ChatMessage) else first
        self.answer = answer_of(text, gate.answer_prefix)
        meta = first.meta if isinstance(first, ChatMessage) else {}
        self.token_reads = meta.get(TOKEN_READS)  # what the reader kept as it wrote the reply (adapters.token_reads)

    def decided(self, read: dict[str, Any] | None, error: Exception | None) -> dict[str, Any]:
        read = read or {}
        reading = signals(self.answer, [d.content or "" for d in self.documents], read.get("support"),
                          [d.score for d in self.documents], {k: read.get(k) for k in READS}, question=self.query)
        decision = decide(reading, self.query, self.model, threshold=self.threshold, period_gap=self.period_gap,
                          elsewhere_pile=self.elsewhere_pile, pile=self.pile)
        trace: dict[str, Any] = {"escalated": decision.escalate, "because": decision.because,
                                 "probability": decision.probability, "threshold": self.threshold,
                                 "signals": reading, "degradations": []}
        if error is not None:
            trace["degradations"].append(degradation("gate", f"support scorer failed: {error!r}"))
        out = {"escalate": decision.escalate, "decided_by": decision.by, "trace": trace}
        if self.answer:  # no answer: nothing to hand on (a method then finds its own)
            out["answer"] = self.answer
        return out
