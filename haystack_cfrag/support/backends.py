"""Reading log P(answer | prompt) from a generator: llama-cpp-python, transformers, vLLM-style servers.

A backend renders the user prompt (or a list of chat messages, `Prompt`) with the model's chat
template, appends the answer as the assistant's reply (after `reply_prefix`, the reply's text
before the answer, when given) and returns the answer tokens' log-probabilities, with how many
tokens it evaluated and how many it reused from the previous call. `backend_for(generator)` picks one
from the injected generator's type:

| generator | backend | prefix reuse |
|---|---|---|
| `LlamaCppChatGenerator` (and `LlamaCppLogprobsChatGenerator`) | `LlamaCppBackend`: `Llama.eval` + logits, in process | yes (llama.cpp's KV cache) |
| `HuggingFaceLocalChatGenerator` / `TransformersChatGenerator` | `TransformersBackend`: one forward pass | no |
| `OpenAIChatGenerator` with an `api_base_url` | `OpenAICompatibleBackend`: `/completions`, `echo=true, logprobs=1` | the server's |
| anything with a `support_backend()` method | what that method returns | its own |

A server that returns no prompt log-probabilities (llama.cpp's server) is refused on its
first reply with `NoPromptLogprobsError`, never read as log-prob 0.

Each backend lives in its own module (`llama_cpp_backend`, `transformers_backend`,
`openai_backend`), what they share in `backend_common`; all are importable from here.
"""

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


def backend_for(generator: Any, *, chat_template: str | None = None, prefix_states: int = DEFAULT_PREFIX_STATES) -> SupportBackend:
    """The backend that reads answer log-probabilities from `generator` (see the module's table).

    `chat_template` (Jinja) renders prompts for the OpenAI-compatible backend (default ChatML);
    `prefix_states`, the earlier prompts' KV states an in-process llama.cpp model keeps (`LlamaCppBackend`).
    Raises UnsupportedGeneratorError (one line) for any other generator.
    """
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
        return OpenAICompatibleBackend(
            api_base_url=url,
            model=generator.model,
            api_key=_resolve_key(getattr(generator, "api_key", None)),
            timeout=getattr(generator, "timeout", None) or 60.0,
            chat_template=chat_template,
        )
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


__all__ = [
    "CHATML_TEMPLATE",
    "AnswerLogprobs",
    "LlamaCppBackend",
    "NoPromptLogprobsError",
    "OpenAICompatibleBackend",
    "Prompt",
    "SupportBackend",
    "TransformersBackend",
    "UnsupportedGeneratorError",
    "backend_for",
    "chat_messages",
]
