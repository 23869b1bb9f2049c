"""One base for the components that ask a chat generator (like Haystack's `LLMEvaluator`).

`AsksChatGenerator` owns the call (messages, generation arguments, `timeout_s`, `exclusive`, the tracing span, a
failure raised or returned for a degradation); a component says only what it asks and how it reads the reply.

    >>> class Echo(AsksChatGenerator):
    ...     COMPONENT = "Echo"
    ...     def __init__(self, generator):
    ...         self.chat_generator = generator
    >>> class Gen:
    ...     def run(self, messages):
    ...         from haystack.dataclasses import ChatMessage
    ...         return {"replies": [ChatMessage.from_assistant("Paris")]}
    >>> Echo(Gen()).ask("Capital of France?", LLMCall(stage="answer", component="Echo"), "answer")
    ('Paris', None)
"""

from __future__ import annotations

from typing import Any, ClassVar

from haystack import logging
from haystack.dataclasses import ChatMessage

from haystack_cfrag.common.plumbing import accepts, call_async_with_timeout, call_with_timeout, first_reply_text
from haystack_cfrag.common.tracing import LLMCall

logger = logging.getLogger(__name__)

Asked = tuple[str | None, Exception | None]
"""The reply's text, or None and the exception when the call failed (not raised: see `raise_on_failure`)."""
AskedResult = tuple[dict[str, Any] | None, Exception | None]
"""The generator's output ({"replies": [...]}), or None and the exception when the call failed."""
Prompt = str | ChatMessage | list[ChatMessage]
"""What is asked: a prompt (one user message), one message, or the messages."""

OWN: Any = object()
"""`ask`'s default for `timeout_s` and `generation_kwargs`: the component's own."""


def chat_kwargs(generator: Any, prompt: Prompt, generation_kwargs: dict[str, Any] | None) -> dict[str, Any]:
    """The chat call's arguments: the messages, and the generation arguments where the generator takes them."""
    if isinstance(prompt, str):
        messages = [ChatMessage.from_user(prompt)]
    else:
        messages = [prompt] if isinstance(prompt, ChatMessage) else list(prompt)
    kwargs: dict[str, Any] = {"messages": messages}
    if generation_kwargs and accepts(generator, "generation_kwargs"):
        kwargs["generation_kwargs"] = dict(generation_kwargs)
    return kwargs


class AsksChatGenerator:
    """Mixin of a component that asks `chat_generator` (or the `generator` a call names); `timeout_s`,
    `generation_kwargs`, `raise_on_failure` are the component's. `FAILURE` is formatted with `component`, `what`,
    `error` and `reason` (the exception's repr)."""

    COMPONENT: ClassVar[str] = ""
    FAILURE: ClassVar[str] = "{component}: the chat generator failed ({what}): {error}"
    chat_generator: Any
    timeout_s: float | None = None
    generation_kwargs: dict[str, Any] | None = None
    raise_on_failure: bool = False

    def ask(self, prompt: Prompt, call: LLMCall, what: str, **how: Any) -> Asked:
        """Ask once; the first reply's text, or (None, the exception) when the call failed. `how`: as `ask_result`."""
        result, exc = self.ask_result(prompt, call, what, **how)
        return (None, exc) if exc is not None else (first_reply_text(result), None)

    async def ask_async(self, prompt: Prompt, call: LLMCall, what: str, **how: Any) -> Asked:
        """Async twin of `ask`."""
        result, exc = await self.ask_result_async(prompt, call, what, **how)
        return (None, exc) if exc is not None else (first_reply_text(result), None)

    def ask_result(self, prompt: Prompt, call: LLMCall, what: str, *, generator: Any = None,
                   timeout_s: Any = OWN, generation_kwargs: Any = OWN, exclusive: bool = True) -> AskedResult:
        """Ask once; the generator's whole output, or (None, the exception) when the call failed.

        :param generator: asks this generator instead of `chat_generator`.
        :param timeout_s: this call's time limit instead of the component's `timeout_s`.
        :param generation_kwargs: this call's generation arguments instead of the component's.
        :param exclusive: one call at a time on the generator (an in-process model is not thread-safe).
        """
        generator, timeout_s, kwargs = self._chat_request(prompt, generator, timeout_s, generation_kwargs)
        try:
            return call_with_timeout(generator, timeout_s, exclusive=exclusive, llm_call=call, **kwargs), None
        except Exception as exc:  # noqa: BLE001  (a failed call degrades, unless raise_on_failure)
            return self.ask_failed(what, exc)

    async def ask_result_async(self, prompt: Prompt, call: LLMCall, what: str, *, generator: Any = None,
                               timeout_s: Any = OWN, generation_kwargs: Any = OWN,
                               exclusive: bool = True) -> AskedResult:
        """Async twin of `ask_result`."""
        generator, timeout_s, kwargs = self._chat_request(prompt, generator, timeout_s, generation_kwargs)
        try:
            return (await call_async_with_timeout(generator, timeout_s, exclusive=exclusive, llm_call=call,
                                                  **kwargs)), None
        except Exception as exc:  # noqa: BLE001
            return self.ask_failed(what, exc)

    def _chat_request(self, prompt: Prompt, generator: Any, timeout_s: Any,
                      generation_kwargs: Any) -> tuple[Any, float | None, dict[str, Any]]:
        generator = self.chat_generator if generator is None else generator
        timeout_s = self.timeout_s if timeout_s is OWN else timeout_s
        generation_kwargs = self.generation_kwargs if generation_kwargs is OWN else generation_kwargs
        return generator, timeout_s, chat_kwargs(generator, prompt, generation_kwargs)

    def replies(self, asked: AskedResult, generator_name: str = "chat generator") -> list[ChatMessage]:
        """The replies of an `ask_result`; [] when the call failed or gave none (logged as a warning)."""
        result, exc = asked
        if exc is None and "replies" not in result:
            exc = KeyError("replies")
        if exc is not None:
            logger.warning("{component}: the {generator} failed ({error})", component=self.COMPONENT,
                           generator=generator_name, error=repr(exc))
            return []
        return result["replies"]

    def failure(self, what: str, error: Exception | str) -> RuntimeError:
        """The error raised for a failed `what` (`FAILURE`): a failed call, or a reply the component cannot use."""
        reason = repr(error) if isinstance(error, BaseException) else error
        return RuntimeError(self.FAILURE.format(component=self.COMPONENT, what=what, error=error, reason=reason))

    def ask_failed(self, what: str, exc: Exception) -> tuple[None, Exception]:
        """Raise with `raise_on_failure`; else (None, exc) for the caller's degradation."""
        if self.raise_on_failure:
            raise self.failure(what, exc) from exc
        return None, exc


__all__ = ["OWN", "Asked", "AskedResult", "AsksChatGenerator", "Prompt", "chat_kwargs"]
