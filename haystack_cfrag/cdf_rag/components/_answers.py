"""What the two CDF-RAG checkers share: the answer read from any generator's output, their common
settings, and the one corrective call (the causal check's regeneration, the hallucination check's rewrite)."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from haystack import default_from_dict, logging
from haystack.dataclasses import ChatMessage

from haystack_cfrag.common.asking import AsksChatGenerator
from haystack_cfrag.common.plumbing import InjectedParts, degradation
from haystack_cfrag.common.prompting import check_template
from haystack_cfrag.common.replies import parse_draft_reply
from haystack_cfrag.common.serialization import deserialize_init_components
from haystack_cfrag.common.tracing import LLMCall
from haystack_cfrag.common.validation import check_bool, check_optional_int, check_optional_seconds

_ANSWER_LABEL = re.compile(r"^\s*(?:final\s+)?answer\s*:", re.IGNORECASE | re.MULTILINE)

logger = logging.getLogger(__name__)


def answer_text(answer: Any, replies: Any, component: str) -> str:
    """The answer to check: `answer`, else the first of `replies` (a draft-format reply: its answer line);
    ValueError naming the component when neither is given."""
    if answer is not None:
        if not isinstance(answer, str):
            raise ValueError(f"{component}: 'answer' must be a string, got {type(answer).__name__}.")
        text = answer
    elif replies is not None:
        if not isinstance(replies, list):
            raise ValueError(f"{component}: 'replies' must be a list of chat messages or strings.")
        first = replies[0] if replies else ""
        text = first if isinstance(first, str) else (getattr(first, "text", None) or "")
    else:
        raise ValueError(f"{component}: give 'answer' or 'replies'.")
    if _ANSWER_LABEL.search(text):
        return parse_draft_reply(text)["answer"].strip()
    return text.strip()


def reply_answer(result: dict[str, Any]) -> str:
    """The short answer of a corrective reply ("Answer: …", else its first line); "" when there is none."""
    replies = (result or {}).get("replies") or []
    first = replies[0] if replies else None
    text = first if isinstance(first, str) else (getattr(first, "text", None) or "")
    return parse_draft_reply(text)["answer"].strip()


class ChecksAnswer(AsksChatGenerator, InjectedParts):
    """Base of a checker that may correct the answer with one call of `CALL` (its stage names the degradation);
    `FIELDS`: its `prompt_template`'s placeholders."""

    FAILURE = "{component}: the {what} failed: {error}"
    CALL: ClassVar[LLMCall]
    FIELDS: ClassVar[Any]

    def _keep_settings(self, *, chat_generator: Any, max_evidence_chars: int | None,
                       generation_kwargs: dict[str, Any] | None, raise_on_failure: bool, timeout_s: float | None,
                       max_query_chars: int | None, prompt_template: str | None) -> None:
        """Check and keep the settings both checkers take (after the checker's own)."""
        check_optional_int("max_evidence_chars", max_evidence_chars, 1)
        check_bool("raise_on_failure", raise_on_failure)
        check_optional_seconds("timeout_s", timeout_s)
        check_optional_int("max_query_chars", max_query_chars, 1)
        check_template(prompt_template, self.FIELDS, component=self.COMPONENT)
        self.chat_generator = chat_generator
        self.max_evidence_chars = max_evidence_chars
        self.generation_kwargs = dict(generation_kwargs) if generation_kwargs is not None else None
        self.raise_on_failure = raise_on_failure
        self.timeout_s = timeout_s
        self.max_query_chars = max_query_chars
        self.prompt_template = prompt_template

    def _settings(self) -> dict[str, Any]:
        """The settings both checkers take, as `to_dict` lists them (last, in this order)."""
        return {"max_evidence_chars": self.max_evidence_chars, "generation_kwargs": self.generation_kwargs,
                "raise_on_failure": self.raise_on_failure, "timeout_s": self.timeout_s,
                "max_query_chars": self.max_query_chars, "prompt_template": self.prompt_template}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any:
        """Deserialise, including the injected components."""
        return default_from_dict(cls, deserialize_init_components(data, cls._INJECTED))

    def _correct(self, check: Correction) -> None:
        """The corrective call, when the check wants one; the check reads its reply."""
        if check.wants_correction:
            check.corrected(*self.ask_result(check.prompt(), self.CALL, self.CALL.stage))

    async def _correct_async(self, check: Correction) -> None:
        """Async twin of `_correct`."""
        if check.wants_correction:
            check.corrected(*(await self.ask_result_async(check.prompt(), self.CALL, self.CALL.stage)))


class Correction:
    """One answer checked and its correction (no I/O): a subclass sets `original`, `answer`, `wants_correction`
    and writes `prompt()`."""

    original: str
    answer: str

    def __init__(self, checker: ChecksAnswer) -> None:
        self.checker = checker
        self.degradations: list[dict[str, Any]] = []
        self.wants_correction = False
        self.changed = False
        self.note = ""

    def prompt(self) -> str:
        raise NotImplementedError

    def corrected(self, result: dict[str, Any] | None, error: Exception | None) -> None:
        """Read the corrective call: its short answer replaces the answer; a failure or an empty reply keeps it."""
        if error is not None:
            self.failed(error)
            return
        text = reply_answer(result)
        if not text:
            self.failed(None, "empty reply")
            return
        self.answer = text
        self.changed = text != self.original
        self.replied(text)

    def replied(self, text: str) -> None:
        """Called with the corrected answer (a subclass may re-check it)."""

    def answered(self, **outputs: Any) -> dict[str, Any]:
        """The checker's outputs: the answer (also as a reply), the check's `outputs`, the degradations."""
        return {"answer": self.answer, "replies": [ChatMessage.from_assistant(self.answer)], **outputs,
                "degradations": list(self.degradations)}

    def failed(self, exc: Exception | None, reason: str = "generator failed") -> None:
        stage = self.checker.CALL.stage
        if self.checker.raise_on_failure:  # a failed call has raised already (`ask_result`): an empty reply
            raise self.checker.failure(stage, exc or reason) from exc
        logger.warning("{component}: the {stage} failed ({reason}); the answer is kept as it was",
                       component=self.checker.COMPONENT, stage=stage, reason=repr(exc) if exc else reason)
        details = {"error": repr(exc)} if exc else {}
        self.degradations.append(degradation(stage, reason, **details))
        self.note = reason
