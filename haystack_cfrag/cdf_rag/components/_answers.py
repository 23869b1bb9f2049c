"""What the two CDF-RAG checkers share: the answer read from any generator's output, and one corrective call."""

from __future__ import annotations

import re
from typing import Any

from haystack_cfrag.common.asking import chat_kwargs
from haystack_cfrag.common.plumbing import call_async_with_timeout, call_with_timeout
from haystack_cfrag.common.replies import parse_draft_reply
from haystack_cfrag.common.tracing import LLMCall

_ANSWER_LABEL = re.compile(r"^\s*(?:final\s+)?answer\s*:", re.IGNORECASE | re.MULTILINE)


def answer_text(answer: Any, replies: Any, component: str) -> str:
    """The answer to check: `answer`, else the first of `replies` (ChatMessages or strings).

    A reply in the draft format ("Answer: …", "Rationale: …") gives its answer line; any other
    text is the answer as a whole. Raises ValueError naming the component when neither is given.
    """
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


def correct(generator: Any, prompt: str, generation_kwargs: dict[str, Any] | None, timeout_s: float | None,
            llm_call: LLMCall) -> str:
    """One corrective chat call; its short answer ("" when the reply has none). Exceptions propagate."""
    result = call_with_timeout(generator, timeout_s, exclusive=True, llm_call=llm_call,
                               **chat_kwargs(generator, prompt, generation_kwargs))
    return reply_answer(result)


async def correct_async(generator: Any, prompt: str, generation_kwargs: dict[str, Any] | None,
                        timeout_s: float | None, llm_call: LLMCall) -> str:
    """Async twin of `correct`."""
    result = await call_async_with_timeout(generator, timeout_s, exclusive=True, llm_call=llm_call,
                                           **chat_kwargs(generator, prompt, generation_kwargs))
    return reply_answer(result)
