"""The OpenAI-compatible backend: log P(answer | prompt) from a server's echoed prompt log-probabilities (vLLM)."""

from __future__ import annotations

import time
from typing import Any

from haystack.lazy_imports import LazyImport

from haystack_cfrag.support.backend_common import (
    COMPONENT,
    AnswerLogprobs,
    NoPromptLogprobsError,
    Prompt,
    chat_messages,
)
from haystack_cfrag.support.math import answer_token_span, offsets_from_text_offsets

with LazyImport("Run 'pip install jinja2' (a Haystack dependency).") as jinja_import:
    from jinja2.sandbox import ImmutableSandboxedEnvironment

with LazyImport("Run 'pip install httpx' for the OpenAI-compatible backend.") as httpx_import:
    import httpx

CHATML_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""ChatML: the client-side template for servers whose template the client cannot read (Qwen's turns)."""

class OpenAICompatibleBackend:
    """log P(answer | prompt) from one `POST {api_base_url}/completions` (`echo=true, logprobs=1, max_tokens=1`)
    per scoring, the prompt rendered client-side with `chat_template` (default ChatML). A server whose first reply
    echoes no prompt log-probabilities is refused (`NoPromptLogprobsError`); `tokens_reused` is 0."""

    name = "openai_compatible"

    def __init__(
        self,
        *,
        api_base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 60.0,
        chat_template: str | None = None,
        client: Any | None = None,
    ) -> None:
        """:param api_base_url: the server's base URL (…/v1). :param model: the served model's name.
        :param api_key: a bearer token (None: none sent). :param timeout: seconds per request.
        :param chat_template: Jinja chat template for the prompt (None: ChatML).
        :param client: an `httpx.Client` to use (tests; None: one is made on warm_up)."""
        self.api_base_url = api_base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.timeout = timeout
        self.chat_template = chat_template or CHATML_TEMPLATE
        self._client = client
        self._template: Any = None
        self.verified = False

    def warm_up(self) -> None:
        """Make the HTTP client and compile the chat template."""
        if self._client is None:
            httpx_import.check()
            headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
            self._client = httpx.Client(timeout=self.timeout, headers=headers)
        if self._template is None:
            jinja_import.check()
            self._template = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True).from_string(
                self.chat_template
            )

    def render(self, prompt: Prompt) -> str:
        """The chat prompt text of `prompt` (a user turn or messages) with the assistant turn opened."""
        self.warm_up()
        return self._template.render(messages=chat_messages(prompt), add_generation_prompt=True)

    def answer_logprobs(self, prompt: Prompt, answer: str, reply_prefix: str = "") -> AnswerLogprobs:
        """Score `answer` through one echo request."""
        self.warm_up()
        rendered = self.render(prompt) + reply_prefix
        text = rendered + answer
        start = time.perf_counter()
        url = f"{self.api_base_url}/completions"
        body = {"model": self.model, "prompt": text, "max_tokens": 1, "temperature": 0, "echo": True,
                "logprobs": 1}
        try:
            response = self._client.post(url, json=body)
        except Exception as exc:  # noqa: BLE001  (one line naming the server)
            raise RuntimeError(f"{COMPONENT}: POST {url} failed: {exc!r}") from exc
        if response.status_code != 200:
            raise RuntimeError(
                f"{COMPONENT}: POST {url} gave HTTP {response.status_code}: {response.text[:200]!r}"
            )
        values = self._answer_values(response, text, len(rendered))
        usage = (response.json().get("usage") or {}).get("prompt_tokens")
        return AnswerLogprobs(token_logprobs=values,
                              tokens_evaluated=int(usage) if isinstance(usage, int) else 0, tokens_reused=0,
                              seconds=time.perf_counter() - start)

    def _answer_values(self, response: Any, text: str, answer_start: int) -> tuple[float, ...]:
        choice = ((response.json() or {}).get("choices") or [{}])[0]
        logprobs = choice.get("logprobs") or {}
        offsets = logprobs.get("text_offset") or []
        values = logprobs.get("token_logprobs") or []
        prompt_tokens = sum(1 for o in offsets if isinstance(o, int) and o < len(text))
        if (
            len(values) != len(offsets)
            or prompt_tokens < 2
            or not str(choice.get("text", "")).startswith(text)
        ):
            server = response.headers.get("server") or "unnamed"
            raise NoPromptLogprobsError(
                f"{COMPONENT}: the server at {self.api_base_url} (server: {server}, model {self.model}) returned no "
                "prompt log-probabilities for /completions with echo=true, logprobs=1 (llama.cpp's server does not "
                "return them); use vLLM, or llama-cpp-python/transformers in process."
            )
        self.verified = True
        i, j = answer_token_span(offsets_from_text_offsets(offsets, len(choice["text"])), answer_start,
                                 len(text))
        picked = values[i:j]
        if i == 0 or any(v is None for v in picked):
            raise NoPromptLogprobsError(
                f"{COMPONENT}: the server at {self.api_base_url} gave no log-probability for some answer tokens."
            )
        return tuple(float(v) for v in picked)

    def close(self) -> None:
        """Close the HTTP client (a later call makes a new one)."""
        if self._client is not None:
            self._client.close()
            self._client = None


__all__ = ["CHATML_TEMPLATE", "OpenAICompatibleBackend"]
