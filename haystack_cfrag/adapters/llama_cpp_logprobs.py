"""LlamaCppChatGenerator that keeps llama.cpp's token log-probabilities and understands model specs.

llama-cpp-haystack's generator drops `choice["logprobs"]`; φ_conf needs them. This thin
subclass adds `meta["logprobs"]` (OpenAI shape: {"content": [{"token", "logprob"}, …]}), and
resolves a `model` spec such as `embedded:qwen2.5-coder-1.5b-instruct` when the model loads
(`warm_up`, or lazily on the first `run`), so a YAML file naming one runs through stock
`Pipeline.loads` and Hayhooks; `to_dict` keeps the spec. Nothing else changes: it is a drop-in
replacement in any pipeline or YAML file.
"""

from __future__ import annotations

from typing import Any

from haystack import component
from haystack.lazy_imports import LazyImport

from haystack_cfrag.models import resolve_model

with LazyImport("Run 'pip install llama-cpp-haystack' (and see the Makefile for llama-cpp-python).") as llama_import:
    from haystack_integrations.components.generators.llama_cpp import LlamaCppChatGenerator

if llama_import.is_successful():

    @component
    class LlamaCppLogprobsChatGenerator(LlamaCppChatGenerator):
        """
        `LlamaCppChatGenerator` whose replies carry `meta["logprobs"]` when asked with `logprobs=True`.

        ### Usage example
        ```python
        from haystack.dataclasses import ChatMessage
        from haystack_cfrag.adapters.llama_cpp_logprobs import LlamaCppLogprobsChatGenerator

        gen = LlamaCppLogprobsChatGenerator(model="embedded:qwen2.5-coder-1.5b-instruct", n_ctx=2048,
                                            model_kwargs={"logits_all": True},
                                            generation_kwargs={"logprobs": True, "max_tokens": 16})
        reply = gen.run([ChatMessage.from_user("Say hi")])["replies"][0]
        print(reply.text, len(reply.meta["logprobs"]["content"]))
        ```
        """

        def warm_up(self) -> None:
            """Resolve an `embedded:` model spec and load the model (once)."""
            if self._model is not None:
                return
            kwargs = self.model_kwargs
            self.model_kwargs = {**kwargs, "model_path": resolve_model(str(kwargs.get("model_path") or self.model_path))}
            try:
                LlamaCppChatGenerator.warm_up(self)
            finally:
                self.model_kwargs = kwargs

        @staticmethod
        def _convert_chat_completion_choice_to_chat_message(choice: Any, response: Any) -> Any:
            message = LlamaCppChatGenerator._convert_chat_completion_choice_to_chat_message(choice, response)
            logprobs = choice.get("logprobs") if isinstance(choice, dict) else None
            if logprobs:
                message.meta["logprobs"] = logprobs
            return message

else:  # pragma: no cover - exercised only without the optional dependency

    class LlamaCppLogprobsChatGenerator:  # type: ignore[no-redef]
        """Placeholder that explains the missing dependency."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            llama_import.check()
