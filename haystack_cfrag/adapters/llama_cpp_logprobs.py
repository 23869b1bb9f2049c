"""LlamaCppChatGenerator that keeps llama.cpp's token log-probabilities (`meta["logprobs"]`, OpenAI's shape),
resolves a model spec when it loads (`to_dict` keeps the spec) and starts each prompt from the kept KV state
sharing its longest prefix (`prefix_states`): a drop-in replacement."""

from __future__ import annotations

from typing import Any

from haystack import component
from haystack.dataclasses import ChatMessage
from haystack.lazy_imports import LazyImport

from haystack_cfrag.adapters.llama_cpp_states import (
    DEFAULT_PREFIX_STATES,
    MAX_PREFIX_STATES,
    chat_formatter,
    is_recurrent,
    kept_states,
    model_lock,
    start_from,
)
from haystack_cfrag.adapters.token_reads import MAX_READ_TOKENS, META_KEY, TokenReadRecorder
from haystack_cfrag.common.validation import check_int
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


def _with_processor(init_kwargs: dict[str, Any] | None, call_kwargs: dict[str, Any] | None,
                    recorder: Any) -> dict[str, Any]:
    """The call's generation kwargs with `recorder` after any logits processor they already name."""
    from llama_cpp import LogitsProcessorList  # noqa: PLC0415  (only with llama-cpp-python, as the generator)

    merged = {**(init_kwargs or {}), **(call_kwargs or {})}
    return {**(call_kwargs or {}), "logits_processor": LogitsProcessorList([*(merged.get("logits_processor") or []),
                                                                           recorder])}


def _note_reads(recorder: Any, replies: list[Any]) -> None:
    """The recorder's reads into the reply's meta (one reply: a chat completion with n = 1)."""
    reads = recorder.reads() if recorder is not None else None
    if reads is not None and len(replies) == 1 and isinstance(getattr(replies[0], "meta", None), dict):
        replies[0].meta[META_KEY] = reads


def _plain_turns(messages: list[ChatMessage] | str) -> list[dict[str, str]] | None:
    """The role/content turns of text-only messages (None when a message carries anything else).

    >>> _plain_turns([ChatMessage.from_system("Be brief."), ChatMessage.from_user("Hi")])
    [{'role': 'system', 'content': 'Be brief.'}, {'role': 'user', 'content': 'Hi'}]
    >>> _plain_turns("Hi")
    [{'role': 'user', 'content': 'Hi'}]
    """
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    turns = []
    for message in messages:
        text = message.text
        if text is None or len(message) != 1:
            return None
        turns.append({"role": message.role.value, "content": text})
    return turns or None


if llama_import.is_successful():

    @component
    class LlamaCppLogprobsChatGenerator(LlamaCppChatGenerator):
        """
        `LlamaCppChatGenerator` whose replies carry `meta["logprobs"]` when asked with `logprobs=True`, and whose
        prompts start from the longest prefix the model holds or has kept (`prefix_states`).

        llama-cpp-python reuses only the previous evaluation's prefix: a question answered after other prompts
        (a CF-RAG duel, a draft) would evaluate its passages again. The model keeps the KV state of its last
        `prefix_states` prompts (`adapters.llama_cpp_states`; about 28 KB a token each for the embedded
        1.5B model, ~15 MB for a 500-token prompt) and loads the one sharing the longest prefix with a new prompt.
        The reply is the one the model gives right after the kept prompt (llama-cpp-python's own reuse; like it, a
        prefix evaluated in another batch split can move a near tie). Calls on one loaded model take its lock (this
        generator and the support backend share it); `prefix_states=0` keeps none.

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

        def __init__(
            self,
            model: str,
            n_ctx: int | None = 0,
            n_batch: int | None = 512,
            model_kwargs: dict[str, Any] | None = None,
            generation_kwargs: dict[str, Any] | None = None,
            *,
            prefix_states: int = DEFAULT_PREFIX_STATES,
            read_tokens: int = 0,
            **kwargs: Any,
        ) -> None:
            """`LlamaCppChatGenerator`'s parameters, and
            :param prefix_states: prompts whose KV state the model keeps for a later prompt to start from, 0 to
                MAX_PREFIX_STATES (0: only the previous evaluation's prefix, as llama-cpp-python does).
            :param read_tokens: read the first this many tokens of a reply off the logits they were sampled from
                (log-probability, top-1 − top-2 gap, rank: `meta["token_reads"]`, `adapters.token_reads`), 0 to
                MAX_READ_TOKENS; a scorer that reads the reply then evaluates nothing again (the cascade's gate). 0 =
                none; not in a streamed reply."""
            check_int("prefix_states", prefix_states, 0, MAX_PREFIX_STATES)
            check_int("read_tokens", read_tokens, 0, MAX_READ_TOKENS)
            LlamaCppChatGenerator.__init__(self, model, n_ctx, n_batch, model_kwargs, generation_kwargs, **kwargs)
            self.prefix_states = prefix_states
            self.read_tokens = read_tokens

        def to_dict(self) -> dict[str, Any]:
            """`LlamaCppChatGenerator.to_dict` with `prefix_states` and `read_tokens`."""
            data = LlamaCppChatGenerator.to_dict(self)
            data["init_parameters"]["prefix_states"] = self.prefix_states
            data["init_parameters"]["read_tokens"] = self.read_tokens
            return data

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
            recorder = None
            if self.read_tokens and streaming_callback is None and self.streaming_callback is None:
                recorder = TokenReadRecorder(self.read_tokens)
                generation_kwargs = _with_processor(self.generation_kwargs, generation_kwargs, recorder)
            with model_lock(self._model):
                keep = self._start_from_kept(messages, tools or self.tools)
                before = _evaluated(self._model)
                out = LlamaCppChatGenerator.run(self, messages, generation_kwargs, tools=tools,
                                                streaming_callback=streaming_callback)
                after = _evaluated(self._model)
                note_cached_tokens(before, after, out.get("replies") or [])
                _note_reads(recorder, out.get("replies") or [])
                if keep:
                    kept_states(self._model, self.prefix_states).keep(self._model, after)
            return out

        def _start_from_kept(self, messages: list[ChatMessage] | str, tools: Any) -> bool:
            """Load the kept state sharing the longest prefix with the prompt where it beats the model's; whether
            the model's states are kept (plain text turns on a model with a chat template: a prompt with tools or
            images, or in another format, is left to llama-cpp-python's own reuse)."""
            llm, turns = self._model, _plain_turns(messages)
            if not self.prefix_states or tools or turns is None or is_recurrent(llm):
                return False
            formatter = chat_formatter(llm)
            if formatter is None:
                return False
            rendered = formatter(messages=turns)  # tokenized as llama-cpp-python's chat handler does
            ids = llm.tokenize(rendered.prompt.encode("utf-8"), add_bos=not rendered.added_special, special=True)
            start_from(llm, ids, kept_states(llm, self.prefix_states))
            return True

        @component.output_types(replies=list[ChatMessage])
        async def run_async(
            self,
            messages: list[ChatMessage] | str,
            generation_kwargs: dict[str, Any] | None = None,
            *,
            tools: Any | None = None,
            streaming_callback: Any | None = None,
        ) -> dict[str, list[ChatMessage]]:
            """`LlamaCppChatGenerator.run_async`: `run` in a worker thread, so the same kept states and counts."""
            if self._model is None:
                self._load()
            return await LlamaCppChatGenerator.run_async(self, messages, generation_kwargs, tools=tools,
                                                         streaming_callback=streaming_callback)

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
