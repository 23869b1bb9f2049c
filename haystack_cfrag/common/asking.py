"""One base for the components that ask the chat generator (in the spirit of Haystack's `LLMEvaluator`).

`AsksChatGenerator` owns the call: one user message, the generation arguments where the
generator takes them, the time limit (`timeout_s`), one generation at a time on an in-process
model, the `haystack_cfrag.llm_call` tracing span with its token usage, and a failure that
either raises (`raise_on_failure`) or comes back as the exception for the component to record
as a named degradation. A component says only what it asks (`ask(prompt, call, what)`) and how
it reads the reply text; `run` and `run_async` share everything but the await.

    >>> class Echo(AsksChatGenerator):
    ...     COMPONENT = "Echo"
    ...     def __init__(self, generator):
    ...         self.chat_generator, self.timeout_s, self.generation_kwargs = generator, None, None
    ...         self.raise_on_failure = False
    >>> class Gen:
    ...     def run(self, messages):
    ...         from haystack.dataclasses import ChatMessage
    ...         return {"replies": [ChatMessage.from_assistant("Paris")]}
    >>> Echo(Gen()).ask("Capital of France?", LLMCall(stage="answer", component="Echo"), "answer")
    ('Paris', None)
"""

from __future__ import annotations

from typing import Any, ClassVar

from haystack.dataclasses import ChatMessage

from haystack_cfrag.common.plumbing import accepts, call_async_with_timeout, call_with_timeout, first_reply_text
from haystack_cfrag.common.tracing import LLMCall

Asked = tuple[str | None, Exception | None]
"""The reply's text, or None and the exception when the call failed (not raised: see `raise_on_failure`)."""


def chat_kwargs(generator: Any, prompt: str, generation_kwargs: dict[str, Any] | None) -> dict[str, Any]:
    """The chat call's arguments: one user message, and the generation arguments where the generator takes them."""
    kwargs: dict[str, Any] = {"messages": [ChatMessage.from_user(prompt)]}
    if generation_kwargs and accepts(generator, "generation_kwargs"):
        kwargs["generation_kwargs"] = dict(generation_kwargs)
    return kwargs


class AsksChatGenerator:
    """Mixin of a component with `chat_generator`, `timeout_s`, `generation_kwargs` and `raise_on_failure`.

    `COMPONENT` names the component in a raised failure: "<COMPONENT>: the chat generator failed
    (<what>): <error>".
    """

    COMPONENT: ClassVar[str] = ""
    chat_generator: Any
    timeout_s: float | None
    generation_kwargs: dict[str, Any] | None
    raise_on_failure: bool

    def ask(self, prompt: str, call: LLMCall, what: str) -> Asked:
        """Ask once; the first reply's text, or (None, the exception) when the call failed."""
        try:
            result = call_with_timeout(self.chat_generator, self.timeout_s, exclusive=True, llm_call=call,
                                       **chat_kwargs(self.chat_generator, prompt, self.generation_kwargs))
        except Exception as exc:  # noqa: BLE001  (a failed call degrades, unless raise_on_failure)
            return self.ask_failed(what, exc)
        return first_reply_text(result), None

    async def ask_async(self, prompt: str, call: LLMCall, what: str) -> Asked:
        """Async twin of `ask`."""
        try:
            result = await call_async_with_timeout(self.chat_generator, self.timeout_s, exclusive=True, llm_call=call,
                                                   **chat_kwargs(self.chat_generator, prompt, self.generation_kwargs))
        except Exception as exc:  # noqa: BLE001
            return self.ask_failed(what, exc)
        return first_reply_text(result), None

    def ask_failed(self, what: str, exc: Exception) -> tuple[None, Exception]:
        """Raise with `raise_on_failure`; else (None, exc) for the caller's degradation."""
        if self.raise_on_failure:
            raise RuntimeError(f"{self.COMPONENT}: the chat generator failed ({what}): {exc}") from exc
        return None, exc


__all__ = ["Asked", "AsksChatGenerator", "chat_kwargs"]
