"""What every reader-support backend shares: the `Prompt` type, `AnswerLogprobs`, `SupportBackend`, the errors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

COMPONENT = "ReaderSupportScorer"

Prompt = str | list[dict[str, str]]
"""A user turn, or chat messages as `{"role": …, "content": …}` dicts (what the reader was sent)."""


def chat_messages(prompt: Prompt) -> list[dict[str, str]]:
    """The messages a prompt stands for: a string is one user turn.

    >>> chat_messages("Hi")
    [{'role': 'user', 'content': 'Hi'}]
    """
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    if (
        not isinstance(prompt, list)
        or not prompt
        or not all(isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
                   for m in prompt)
    ):
        raise ValueError(f"{COMPONENT}: a prompt is a string or a non-empty list of {{'role', 'content'}} strings.")
    return [{"role": m["role"], "content": m["content"]} for m in prompt]


class UnsupportedGeneratorError(ValueError):
    """The injected generator gives no way to read the log-probabilities of a given answer."""


class NoPromptLogprobsError(RuntimeError):
    """A server answered without prompt log-probabilities (llama.cpp's server does)."""


@dataclass(frozen=True)
class AnswerLogprobs:
    """One scoring: the answer tokens' log-probabilities and what the call cost."""

    token_logprobs: tuple[float, ...]
    tokens_evaluated: int
    tokens_reused: int
    seconds: float
    token_margins: tuple[float, ...] = ()
    """Per answer position, the reader's top-1 − top-2 gap (empty where whole logit rows are not read)."""
    token_ranks: tuple[int, ...] = ()
    """Per answer position, how many tokens the reader preferred to the answer's (0: its first choice)."""


@runtime_checkable
class SupportBackend(Protocol):
    """What the scorer needs: log P(answer tokens | chat prompt with `prompt` as the user turn)."""

    name: str

    def warm_up(self) -> None:
        """Load what the backend needs (the model); safe to call again."""

    def answer_logprobs(self, prompt: Prompt, answer: str, reply_prefix: str = "") -> AnswerLogprobs:
        """Score `answer` as the assistant's reply to `prompt`, after `reply_prefix` (not scored)."""


__all__ = ["COMPONENT", "AnswerLogprobs", "NoPromptLogprobsError", "Prompt", "SupportBackend",
           "UnsupportedGeneratorError", "chat_messages"]
