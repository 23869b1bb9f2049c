"""LlamaCppChatGenerator that keeps llama.cpp's token log-probabilities (`meta["logprobs"]`, OpenAI's shape) and
resolves a model spec when it loads (`to_dict` keeps the spec): a drop-in replacement."""

from __future__ import annotations

from typing import Any

from haystack import component
from haystack.dataclasses import ChatMessage
from haystack.lazy_imports import LazyImport

from haystack_cfrag.models import resolve_model

with LazyImport("Run 'pip install llama-cpp-haystack' (and see the Makefile for llama-cpp-python).") as llama_import:
    from haystack_integrations.components.generators.llama_cpp import LlamaCppChatGenerator

def _evaluated(model: Any) -> list[int]:
    """The tokens a loaded `llama_cpp.Llama` holds evaluated now ([] before it loads)."""
    if model is None:
        return []
    return [int(t) for t in model.input_ids[: model.n_tokens]]


def note_cached_tokens(before: list[int], after: list[int], replies: list[Any]) -> None:
    """Write into each reply's usage how many prompt tokens were reused from the previous evaluation (the common
    prefix, less the last token).

    >>> class R:
    ...     meta = {"usage": {"prompt_tokens": 4, "completion_tokens": 1}}
    >>> reply = R(); note_cached_tokens([1, 2, 3, 9], [1, 2, 3, 4, 7], [reply])
    >>> reply.meta["usage"]["prompt_tokens_details"]
    {'cached_tokens': 3}
    """
    for reply in replies:
        usage = (getattr(reply, "meta", None) or {}).get("usage")
        prompt = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        if not isinstance(prompt, int) or prompt <= 0:
            continue
        shared = 0
        for a, b in zip(before, after[:prompt], strict=False):
            if a != b:
                break
            shared += 1
        usage["prompt_tokens_details"] = {"cached_tokens": min(shared, prompt - 1)}


if llama_import.is_successful():

    @component
    class LlamaCppLogprobsChatGenerator(LlamaCppChatGenerator):
        """
        `LlamaCppChatGenerator` whose replies carry `meta["logprobs"]` when asked with `logprobs=True`.

        ### Usage example
        ```python
        from haystack.dataclasses import ChatMessage
        from haystack_cfrag.adapters.llama_cpp_logprobs import LlamaCppLogprobsChatGenerator

        gen = LlamaCppLogprobsChatGenerator(model="embedded:qwen2.5-coder-1.5b-instruct", n_ctx=512,
                                            model_kwargs={"logits_all": True},
                                            generation_kwargs={"logprobs": True, "top_logprobs": 1,
                                                               "max_tokens": 2})
        reply = gen.run([ChatMessage.from_user("Say hi")])["replies"][0]
        print(reply.text, len(reply.meta["logprobs"]["content"]))
        ```
        """

        def warm_up(self) -> None:
            """Resolve an `embedded:` spec, load the model once (after `defer_load`: at the first call)."""
            if self._model is None and not getattr(self, "_deferred", False):
                self._load()

        def defer_load(self) -> LlamaCppLogprobsChatGenerator:
            """Load on the first call rather than at `warm_up`: a model only some questions need (a cascade's
            auxiliary model, which a question that does not escalate never calls) is not held for nothing."""
            self._deferred = True
            return self

        def _load(self) -> None:
            kwargs = self.model_kwargs
            path = resolve_model(str(kwargs.get("model_path") or self.model_path))
            self.model_kwargs = {**kwargs, "model_path": path}
            try:
                LlamaCppChatGenerator.warm_up(self)
            finally:
                self.model_kwargs = kwargs

        @component.output_types(replies=list[ChatMessage])
        def run(
            self,
            messages: list[ChatMessage] | str,
            generation_kwargs: dict[str, Any] | None = None,
            *,
            tools: Any | None = None,
            streaming_callback: Any | None = None,
        ) -> dict[str, list[ChatMessage]]:
            """`LlamaCppChatGenerator.run`, each reply's cached prompt tokens in its usage (`note_cached_tokens`)."""
            if self._model is None:
                self._load()
            before = _evaluated(self._model)
            out = LlamaCppChatGenerator.run(self, messages, generation_kwargs, tools=tools,
                                            streaming_callback=streaming_callback)
            note_cached_tokens(before, _evaluated(self._model), out.get("replies") or [])
            return out

        @component.output_types(replies=list[ChatMessage])
        async def run_async(
            self,
            messages: list[ChatMessage] | str,
            generation_kwargs: dict[str, Any] | None = None,
            *,
            tools: Any | None = None,
            streaming_callback: Any | None = None,
        ) -> dict[str, list[ChatMessage]]:
            """`LlamaCppChatGenerator.run_async`, with the reused prompt tokens as `run` reports them."""
            if self._model is None:
                self._load()
            before = _evaluated(self._model)
            out = await LlamaCppChatGenerator.run_async(self, messages, generation_kwargs, tools=tools,
                                                        streaming_callback=streaming_callback)
            note_cached_tokens(before, _evaluated(self._model), out.get("replies") or [])
            return out

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
