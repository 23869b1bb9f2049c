"""Reading log P(answer | prompt) from a generator: a backend renders the prompt with the model's chat template,
appends the answer as the reply (after `reply_prefix`) and returns its tokens' log-probabilities and counts.

`backend_for(generator)` picks `LlamaCppBackend` (llama.cpp, in process, prefix reuse), `TransformersBackend`,
`OpenAICompatibleBackend` (a server with an `api_base_url` that echoes prompt log-probabilities) or what a
`support_backend()` method returns. The backends are importable from here."""

from __future__ import annotations

from typing import Any

from haystack_cfrag.support.backend_common import (
    COMPONENT,
    AnswerLogprobs,
    NoPromptLogprobsError,
    Prompt,
    SupportBackend,
    UnsupportedGeneratorError,
    chat_messages,
)
from haystack_cfrag.support.llama_cpp_backend import DEFAULT_PREFIX_STATES, LlamaCppBackend
from haystack_cfrag.support.openai_backend import CHATML_TEMPLATE, OpenAICompatibleBackend
from haystack_cfrag.support.transformers_backend import TransformersBackend


def _class_names(obj: Any) -> set[str]:
    return {cls.__name__ for cls in type(obj).__mro__}


def backend_for(generator: Any, *, chat_template: str | None = None,
                prefix_states: int = DEFAULT_PREFIX_STATES) -> SupportBackend:
    """The backend that reads answer log-probabilities from `generator` (UnsupportedGeneratorError otherwise);
    `chat_template`: the server backend's (default ChatML); `prefix_states`: llama.cpp's kept KV states."""
    own = getattr(generator, "support_backend", None)
    if callable(own):
        return own()
    names = _class_names(generator)
    if "LlamaCppChatGenerator" in names:
        return LlamaCppBackend(generator=generator, prefix_states=prefix_states)
    if names & {"HuggingFaceLocalChatGenerator", "TransformersChatGenerator"}:
        return TransformersBackend(generator=generator)
    if "OpenAIChatGenerator" in names:
        url = getattr(generator, "api_base_url", None)
        if not url:
            raise UnsupportedGeneratorError(
                f"{COMPONENT}: an {type(generator).__name__} without api_base_url talks to OpenAI's API, "
                "which returns no prompt log-probabilities; point it at a vLLM server or use a local generator."
            )
        return OpenAICompatibleBackend(api_base_url=url, model=generator.model,
                                       api_key=_resolve_key(getattr(generator, "api_key", None)),
                                       timeout=getattr(generator, "timeout", None) or 60.0,
                                       chat_template=chat_template)
    raise UnsupportedGeneratorError(
        f"{COMPONENT}: cannot read answer log-probabilities from a {type(generator).__name__}; use a "
        "LlamaCppChatGenerator, a HuggingFaceLocalChatGenerator/TransformersChatGenerator, or an "
        "OpenAIChatGenerator pointed at a server that returns prompt log-probabilities (vLLM)."
    )


def _resolve_key(secret: Any) -> str | None:
    if secret is None:
        return None
    try:
        return secret.resolve_value()
    except Exception:  # noqa: BLE001  (a server without a key needs none)
        return None


__all__ = ["CHATML_TEMPLATE", "AnswerLogprobs", "LlamaCppBackend", "NoPromptLogprobsError",
           "OpenAICompatibleBackend", "Prompt", "SupportBackend", "TransformersBackend",
           "UnsupportedGeneratorError", "backend_for", "chat_messages"]
