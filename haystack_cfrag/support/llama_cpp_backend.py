"""The llama-cpp-python backend: log P(answer | prompt) from a `llama_cpp.Llama`'s logits, in process."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from haystack_cfrag.adapters.llama_cpp_states import (
    MAX_PREFIX_STATES,
    SCORER_PREFIX_STATES,
    PrefixStates,
    chat_formatter,
    copy_state,
    is_recurrent,
    kept_states,
    load_state,
    model_lock,
    start_from,
)
from haystack_cfrag.adapters.token_reads import answer_reads
from haystack_cfrag.common.validation import check_int
from haystack_cfrag.support.backend_common import (
    COMPONENT,
    AnswerLogprobs,
    Prompt,
    UnsupportedGeneratorError,
    chat_messages,
)
from haystack_cfrag.support.math import token_read

DEFAULT_PREFIX_STATES = SCORER_PREFIX_STATES


class LlamaCppBackend:
    """log P(answer | prompt) from a `llama_cpp.Llama`, computed from its logits.

    The prompt is rendered with the model's GGUF chat template, assistant turn opened, and the answer tokenized
    on its own. The longest common prefix with the previous evaluation (or with one of the model's kept prompt
    states, `prefix_states`) is reused; the rest is evaluated in one batch but for its last token, which is evaluated
    alone as is each answer token, so the answer's numbers do not depend on the reuse (no `logits_all`, no
    `echo=True`, which is off by one: llama-cpp-python #1983)."""

    name = "llama_cpp"

    def __init__(
        self, *, generator: Any | None = None, model: Any | None = None, prefix_states: int = DEFAULT_PREFIX_STATES
    ) -> None:
        """:param generator: a LlamaCppChatGenerator (its `_model` after warm_up); or
        :param model: a loaded `llama_cpp.Llama`.
        :param prefix_states: prompts whose KV state the model keeps for a later call to start from (a store shared
            with its reader: `adapters.llama_cpp_states`), 0 to MAX_PREFIX_STATES; 0 keeps and loads none."""
        if generator is None and model is None:
            raise ValueError(f"{COMPONENT}: LlamaCppBackend needs a generator or a model.")
        check_int("prefix_states", prefix_states, 0, MAX_PREFIX_STATES)
        self.generator = generator
        self._llm = model
        self.prefix_states = prefix_states

    def warm_up(self) -> None:
        """Warm up the generator (loads the model) and keep its `llama_cpp.Llama`."""
        if self._llm is None:
            if getattr(self.generator, "_model", None) is None:
                self.generator.warm_up()
            self._llm = self.generator._model

    def render(self, prompt: Prompt) -> str:
        """The chat prompt text of `prompt` (a user turn or messages) with the assistant turn opened."""
        self.warm_up()
        messages = chat_messages(prompt)
        formatter = chat_formatter(self._llm)  # cached per model
        if formatter is not None:
            return formatter(messages=messages).prompt
        from llama_cpp import llama_chat_format  # noqa: PLC0415

        fmt = getattr(self._llm, "chat_format", None) or "llama-2"
        formatter = getattr(llama_chat_format, "format_" + fmt.replace("-", "_").replace(".", "_"), None)
        if formatter is None:
            raise UnsupportedGeneratorError(f"{COMPONENT}: the model has no chat template and its chat format {fmt!r} "
                                            "has no formatter to render prompts.")
        return formatter(messages=messages).prompt

    def prompt_tokens(self, prompt: Prompt) -> list[int]:
        """The token ids of the rendered chat prompt, assistant turn opened (what the reader evaluates)."""
        self.warm_up()
        return list(self._llm.tokenize(self.render(prompt).encode("utf-8"), add_bos=True, special=True))

    def start_from_kept(self, prompt_ids: list[int]) -> int:
        """Make the model hold the longest prefix of `prompt_ids` that it or a kept state holds (the caller holds
        `model_lock`); the tokens it holds, as `llm.n_tokens` now says."""
        return start_from(self._llm, prompt_ids, self._kept() if self.prefix_states else None)

    def keep(self, tokens: list[int]) -> None:
        """Keep the KV state of `tokens`, what the model holds now, for a later prompt (the caller holds the lock)."""
        if self.prefix_states:
            self._kept().keep(self._llm, tokens)

    def _kept(self) -> PrefixStates:
        return kept_states(self._llm, self.prefix_states, copy=self._copy_state, load=self._load_state)

    def encode(self, prompt: Prompt, answer: str, reply_prefix: str = "") -> tuple[list[int], list[int]]:
        """(prompt token ids, answer token ids): the rendered chat prompt (then the reply's prefix, as
        the model would have written it) and the bare answer."""
        llm = self._llm
        prompt_ids = self.prompt_tokens(prompt)
        if reply_prefix:
            prompt_ids += llm.tokenize(reply_prefix.encode("utf-8"), add_bos=False, special=False)
        answer_ids = llm.tokenize(answer.encode("utf-8"), add_bos=False, special=False)
        return prompt_ids, list(answer_ids)

    def answer_logprobs(self, prompt: Prompt, answer: str, reply_prefix: str = "") -> AnswerLogprobs:
        """Score `answer` as the assistant's reply; reuse the cached prefix of the previous call
        (the generator's too: a prompt the reader has just answered is not evaluated again)."""
        self.warm_up()
        llm = self._llm
        start = time.perf_counter()
        with model_lock(llm):
            prompt_ids, answer_ids = self.encode(prompt, answer, reply_prefix)
            if not answer_ids:
                raise ValueError(f"{COMPONENT}: the answer {answer!r} has no tokens.")
            ids = prompt_ids + answer_ids
            if len(ids) > llm.n_ctx():
                raise ValueError(f"{COMPONENT}: the prompt and answer take {len(ids)} tokens, more than the model's "
                                 f"n_ctx={llm.n_ctx()}.")
            p = len(prompt_ids)
            recurrent = is_recurrent(llm)
            if recurrent:
                llm.reset()
            reuse = 0 if recurrent else self.start_from_kept(prompt_ids)
            if reuse < p - 1:
                llm.eval(ids[reuse : p - 1])
            if not recurrent:
                self.keep(prompt_ids[: p - 1])
            reads = []
            for k, token in enumerate([prompt_ids[-1]] + answer_ids[:-1]):
                llm.eval([token])  # one token at a time: the same arithmetic whatever was reused
                reads.append(token_read(self._last_logits(llm), answer_ids[k]))
        return AnswerLogprobs(token_logprobs=tuple(r[0] for r in reads),
                              tokens_evaluated=len(ids) - 1 - reuse, tokens_reused=reuse,
                              seconds=time.perf_counter() - start, token_margins=tuple(r[1] for r in reads),
                              token_ranks=tuple(r[2] for r in reads))

    def generated_logprobs(self, prompt: Prompt, answer: str, reply_prefix: str, reads: Any) -> AnswerLogprobs | None:
        """`answer_logprobs`' numbers read from `reads`, what the reader kept as it generated its reply to `prompt`
        (`adapters.token_reads`), with nothing evaluated; None where that reply's tokens are not `reply_prefix`
        then `answer` as `encode` makes them (the caller then scores it)."""
        self.warm_up()
        start = time.perf_counter()
        with model_lock(self._llm):
            prompt_ids, answer_ids = self.encode(prompt, answer, reply_prefix)
        read = answer_reads(reads, prompt_ids, answer_ids)
        if read is None:
            return None
        return AnswerLogprobs(token_logprobs=read[0], tokens_evaluated=0,
                              tokens_reused=len(prompt_ids) + len(read[0]) - 1,
                              seconds=time.perf_counter() - start, token_margins=read[1], token_ranks=read[2])

    _copy_state = staticmethod(copy_state)
    _load_state = staticmethod(load_state)

    @staticmethod
    def _last_logits(llm: Any) -> np.ndarray:
        """The logits after the last evaluated token (a copy: llama.cpp reuses the buffer)."""
        return np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(llm.n_vocab(),)).copy()


__all__ = ["DEFAULT_PREFIX_STATES", "MAX_PREFIX_STATES", "LlamaCppBackend"]
