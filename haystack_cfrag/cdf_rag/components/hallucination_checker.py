"""HallucinationChecker: CDF-RAG's hallucination check and knowledge rewrite (paper 002, §2.5), after any generator."""

from __future__ import annotations

import asyncio
import math
from typing import Any

from haystack import Document, component, default_to_dict, logging
from haystack.dataclasses import ChatMessage

from haystack_cfrag.cdf_rag.components._answers import ChecksAnswer, Correction, answer_text
from haystack_cfrag.cdf_rag.math.claims import (
    DELTA,
    MAX_CLAIMS,
    REWRITE_MODES,
    SHORT_ANSWER_WORDS,
    SUPPORT_RANGE,
    SUPPORT_THRESHOLD,
    hallucination_score,
    should_rewrite,
    split_claims,
    supported_claims,
)
from haystack_cfrag.cdf_rag.prompts import REWRITE_FIELDS, REWRITE_PROMPTS, render_claims
from haystack_cfrag.common.plumbing import DEFAULT_MAX_QUERY_CHARS, degradation, prepare_query
from haystack_cfrag.common.prompting import render_evidence
from haystack_cfrag.common.protocols import ChatGenerator, SupportScorer
from haystack_cfrag.common.replies import reply_text
from haystack_cfrag.common.serialization import serialize_component
from haystack_cfrag.common.tracing import LLMCall
from haystack_cfrag.common.validation import check_choice, check_int, check_range

COMPONENT = "HallucinationChecker"
MAX_ANSWER_PREFIX = 200
KEEP, REWRITE, UNDEFINED, SCORER_FAILED = "keep", "rewrite", "undefined", "scorer_failed"
_OUTPUTS = {"answer": str, "replies": list[ChatMessage], "s_hall": float | None, "decision": str, "rewritten": bool,
            "claims": list[dict[str, Any]], "trace": dict[str, Any], "degradations": list[dict[str, Any]]}

logger = logging.getLogger(__name__)


@component
class HallucinationChecker(ChecksAnswer):
    """
    Checks an answer claim by claim against the evidence; above δ, rewrites it from the evidence.

    The answer is split into claims, each supported when the reader's length-normalised log P(claim | query,
    documents) is ≥ `support_threshold` (given `prompt`, scored as the reply to it after `answer_prefix`, so only
    the claim's tokens are evaluated). S_hall = 1 − supported / claims; above δ, with a `chat_generator`, one
    rewrite corrects the answer (`rewrite_mode="correct"`) or answers again (`"reanswer"`).

    Outputs `answer`, `replies`, `s_hall`, `decision` ("keep", "rewrite", "undefined", "scorer_failed"),
    `rewritten`, `claims`, `trace`, `degradations`; a failed scorer or rewrite keeps the answer and says so.

    ### Usage example
    ```python
    from haystack import Document
    from haystack.components.generators.chat import MockChatGenerator
    from haystack_cfrag.cdf_rag.components import HallucinationChecker

    class WordScorer:  # a stand-in for ReaderSupportScorer: high when the evidence has the claim's last word
        def score(self, query, answer, documents):
            word = answer.rstrip(".").split()[-1]
            return -0.1 if any(word in (d.content or "") for d in documents) else -4.0

    checker = HallucinationChecker(support_scorer=WordScorer(),
                                   chat_generator=MockChatGenerator(responses="Answer: Christian Bale"))
    out = checker.run(query="Who is the lead actor in The Dark Knight?", answer="Heath Ledger",
                      documents=[Document(content="Christian Bale stars as Bruce Wayne.")])
    print(out["s_hall"], out["decision"], out["answer"])  # 1.0 rewrite Christian Bale
    ```
    """

    COMPONENT = COMPONENT
    CALL = LLMCall(stage="rewrite", component=COMPONENT)
    FIELDS = REWRITE_FIELDS
    _INJECTED = ("support_scorer", "chat_generator")

    def __init__(
        self,
        *,
        support_scorer: SupportScorer,
        chat_generator: ChatGenerator | None = None,
        delta: float = DELTA,
        support_threshold: float = SUPPORT_THRESHOLD,
        rewrite_mode: str = "correct",
        max_claims: int = MAX_CLAIMS,
        short_answer_words: int = SHORT_ANSWER_WORDS,
        max_evidence_chars: int | None = 2000,
        generation_kwargs: dict[str, Any] | None = None,
        raise_on_failure: bool = False,
        timeout_s: float | None = None,
        max_query_chars: int | None = DEFAULT_MAX_QUERY_CHARS,
        prompt_template: str | None = None,
        answer_prefix: str = "",
    ) -> None:
        """
        :param support_scorer: anything with `score(query, answer, documents) -> float` (a log-probability).
        :param chat_generator: writes the rewrite (None = check only: the decision is reported, the answer kept).
        :param delta: δ in [0, 1]: rewrite when S_hall > δ.
        :param support_threshold: a claim is supported when its support is ≥ this, in [-20, 0] (nats per token).
        :param rewrite_mode: "correct" (the paper's rewrite) or "reanswer" (a fresh answer, the flagged one named).
        :param max_claims: claims scored per answer, in [1, 50] (the rest are joined into the last).
        :param short_answer_words: an answer of at most this many words and one sentence is one claim, in [0, 100].
        :param max_evidence_chars: each passage is cut to this many characters in the rewrite prompt (None = whole).
        :param generation_kwargs: passed to generators that accept them.
        :param raise_on_failure: raise when the scorer or the rewrite fails instead of keeping the answer.
        :param timeout_s: seconds the rewrite call may take before it is abandoned (None = no limit).
        :param max_query_chars: longer queries are cut to this many characters, with a warning (None = whole).
        :param prompt_template: replaces the rewrite prompt ({query}, {evidence}, {answer}, {unsupported}).
        :param answer_prefix: with a `prompt`, the reply's text before the answer ("Answer:"), not scored.
        """
        if not callable(getattr(support_scorer, "score", None)):
            raise ValueError(
                f"'support_scorer' must have a score(query, answer, documents) method, got {support_scorer!r}."
            )
        check_range("delta", delta, 0.0, 1.0)
        check_range("support_threshold", support_threshold, *SUPPORT_RANGE)
        check_choice("rewrite_mode", rewrite_mode, REWRITE_MODES)
        check_int("max_claims", max_claims, 1, 50)
        check_int("short_answer_words", short_answer_words, 0, 100)
        if not isinstance(answer_prefix, str) or len(answer_prefix) > MAX_ANSWER_PREFIX:
            raise ValueError(f"'answer_prefix' must be a string of at most {MAX_ANSWER_PREFIX} characters.")
        self._keep_settings(chat_generator=chat_generator, max_evidence_chars=max_evidence_chars,
                            generation_kwargs=generation_kwargs, raise_on_failure=raise_on_failure,
                            timeout_s=timeout_s, max_query_chars=max_query_chars, prompt_template=prompt_template)
        self.support_scorer = support_scorer
        self.delta = delta
        self.support_threshold = support_threshold
        self.rewrite_mode = rewrite_mode
        self.max_claims = max_claims
        self.short_answer_words = short_answer_words
        self.answer_prefix = answer_prefix

    def to_dict(self) -> dict[str, Any]:
        """Serialise, including the injected scorer and generator."""
        return default_to_dict(self, support_scorer=serialize_component(self.support_scorer),
                               chat_generator=serialize_component(self.chat_generator), delta=self.delta,
                               support_threshold=self.support_threshold, rewrite_mode=self.rewrite_mode,
                               max_claims=self.max_claims, short_answer_words=self.short_answer_words,
                               **self._settings(), answer_prefix=self.answer_prefix)

    @component.output_types(**_OUTPUTS)
    def run(
        self,
        query: str,
        documents: list[Document],
        answer: str | None = None,
        replies: list[Any] | None = None,
        prompt: list[ChatMessage] | None = None,
    ) -> dict[str, Any]:
        """
        :param query: the question the answer answers.
        :param documents: the retrieved evidence (K).
        :param answer: the answer to check (or give `replies`).
        :param replies: a generator's replies (ChatMessages or strings); the first is checked.
        :param prompt: the messages the answer was generated from (None: claims are scored under the
            scorer's own prompt over `documents`).
        :returns: `answer`, `replies`, `s_hall`, `decision`, `rewritten`, `claims`, `trace`, `degradations`.
        """
        check = _Check(self, query, documents, answer, replies, prompt)
        if check.claims:
            check.scored(*self._score(check))
        self._correct(check)
        return check.outputs()

    @component.output_types(**_OUTPUTS)
    async def run_async(
        self,
        query: str,
        documents: list[Document],
        answer: str | None = None,
        replies: list[Any] | None = None,
        prompt: list[ChatMessage] | None = None,
    ) -> dict[str, Any]:
        """Async twin of `run`: the scoring in a worker thread, the rewrite through the generator's run_async."""
        check = _Check(self, query, documents, answer, replies, prompt)
        if check.claims:
            check.scored(*(await asyncio.to_thread(self._score, check)))
        await self._correct_async(check)
        return check.outputs()

    def _score(self, check: _Check) -> tuple[list[float] | None, Exception | None]:
        supports = []
        try:
            for claim in check.claims:
                if check.under_answer_prompt:
                    value = self.support_scorer.score_reply(check.answer_prompt, reply_text(self.answer_prefix, claim),
                                                            self.answer_prefix)
                else:
                    value = self.support_scorer.score(check.query, claim, check.documents)
                if not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value):
                    raise TypeError(f"the scorer gave {value!r} for a claim, not a log-probability")
                supports.append(float(value))
        except Exception as exc:  # noqa: BLE001  (a failing scorer keeps the answer, see class doc)
            if self.raise_on_failure:
                raise RuntimeError(f"{COMPONENT}: the support scorer failed: {exc}") from exc
            return None, exc
        return supports, None


class _Check(Correction):
    """One check: the answer, its claims and the decisions so far (no I/O here)."""

    def __init__(self, checker: HallucinationChecker, query: Any, documents: Any, answer: Any, replies: Any,
                 prompt: Any) -> None:
        super().__init__(checker)
        if prompt is not None and (
            not isinstance(prompt, list) or not prompt or not all(isinstance(m, ChatMessage) for m in prompt)
        ):
            raise ValueError(f"{COMPONENT}: 'prompt' must be a non-empty list of chat messages.")
        self.answer_prompt = prompt
        # the answer prompt is used when the scorer can read a reply to it (ReaderSupportScorer can)
        self.under_answer_prompt = prompt is not None and callable(getattr(checker.support_scorer, "score_reply", None))
        self.query = prepare_query(query, COMPONENT, checker.max_query_chars)
        if not isinstance(documents, list) or not all(isinstance(d, Document) for d in documents):
            raise ValueError(f"{COMPONENT}: 'documents' must be a list of documents.")
        self.documents = list(documents)
        self.original = answer_text(answer, replies, COMPONENT)
        self.answer = self.original
        self.claims = split_claims(self.original, max_claims=checker.max_claims,
                                   short_answer_words=checker.short_answer_words)
        self.supports: list[float] | None = None
        self.supported: list[bool] = []
        self.s_hall: float | None = None
        self.decision = UNDEFINED

    def scored(self, supports: list[float] | None, error: Exception | None) -> None:
        if error is not None:
            logger.warning("{component}: the support scorer failed ({error}); the answer is kept as it was",
                           component=COMPONENT, error=repr(error))
            self.degradations.append(degradation("hallucination_check", "scorer failed", error=repr(error)))
            self.decision = SCORER_FAILED
            return
        self.supports = supports
        self.supported = supported_claims(supports, self.checker.support_threshold)
        self.s_hall = hallucination_score(supports, self.checker.support_threshold)
        self.decision = REWRITE if should_rewrite(self.s_hall, self.checker.delta) else KEEP
        if self.decision == REWRITE:
            if self.checker.chat_generator is None:
                self.note = "no chat_generator: check only"
            else:
                self.wants_correction = True

    def prompt(self) -> str:
        unsupported = [c for c, ok in zip(self.claims, self.supported, strict=True) if not ok]
        template = self.checker.prompt_template or REWRITE_PROMPTS[self.checker.rewrite_mode]
        return template.format(query=self.query, evidence=render_evidence(self.documents,
                                                                           self.checker.max_evidence_chars),
                               answer=self.original, unsupported=render_claims(unsupported))

    def outputs(self) -> dict[str, Any]:
        claims = [
            {"text": c, "support": None if self.supports is None else self.supports[i],
             "supported": None if self.supports is None else self.supported[i]}
            for i, c in enumerate(self.claims)
        ]
        trace = {
            "s_hall": self.s_hall,
            "delta": self.checker.delta,
            "support_threshold": self.checker.support_threshold,
            "rewrite_mode": "custom" if self.checker.prompt_template else self.checker.rewrite_mode,
            "decision": self.decision,
            "claims": len(self.claims),
            "supported": sum(self.supported),
            "rewritten": self.changed,
            "rewrite_note": self.note,
            "original_answer": self.original,
            "claims_scored": len(self.supports or []),
            "scored_under": "answer prompt" if self.under_answer_prompt else "support prompt",
            # each claim's support (nats per token), in claim order: what calibrates support_threshold and delta
            "claim_supports": None if self.supports is None else [round(v, 4) for v in self.supports],
        }
        return self.answered(s_hall=self.s_hall, decision=self.decision, rewritten=self.changed, claims=claims,
                             trace=trace)
