"""The llama-cpp-python backend: log P(answer | prompt) from a `llama_cpp.Llama`'s logits, in process."""

from __future__ import annotations

import ctypes
import threading
import time
from collections import OrderedDict
from typing import Any

import numpy as np

from haystack_cfrag.common.validation import check_int
from haystack_cfrag.support.backend_common import (
    COMPONENT,
    AnswerLogprobs,
    Prompt,
    UnsupportedGeneratorError,
    chat_messages,
)
from haystack_cfrag.support.math import prefix_reuse, token_read

DEFAULT_PREFIX_STATES = 4  # enough for CER's rounds over the top 5 passages
MAX_PREFIX_STATES = 32  # kept KV states: ~28 KB a token each for the embedded model, so up to ~1.8 GB at 2,000 tokens
_LOCKS: dict[int, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def _model_lock(model: Any) -> threading.Lock:
    """One lock per loaded model: a llama.cpp context is not thread-safe."""
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(id(model), threading.Lock())


class LlamaCppBackend:
    """log P(answer | prompt) from a `llama_cpp.Llama`, computed from its logits.

    The prompt is rendered with the model's GGUF chat template, assistant turn opened, and the answer tokenized
    on its own. The longest common prefix with the previous evaluation (or with one of the last `prefix_states`
    kept prompt states) is reused; the rest is evaluated in one batch but for its last token, which is evaluated
    alone as is each answer token, so the answer's numbers do not depend on the reuse (no `logits_all`, no
    `echo=True`, which is off by one: llama-cpp-python #1983)."""

    name = "llama_cpp"

    def __init__(
        self, *, generator: Any | None = None, model: Any | None = None, prefix_states: int = DEFAULT_PREFIX_STATES
    ) -> None:
        """:param generator: a LlamaCppChatGenerator (its `_model` after warm_up); or
        :param model: a loaded `llama_cpp.Llama`.
        :param prefix_states: prompts whose KV state is kept for a later call to start from, 0 to MAX_PREFIX_STATES."""
        if generator is None and model is None:
            raise ValueError(f"{COMPONENT}: LlamaCppBackend needs a generator or a model.")
        check_int("prefix_states", prefix_states, 0, MAX_PREFIX_STATES)
        self.generator = generator
        self._llm = model
        self._template: Any = None
        self.prefix_states = prefix_states
        self._states: OrderedDict[tuple[int, ...], Any] = OrderedDict()

    def warm_up(self) -> None:
        """Warm up the generator (loads the model) and keep its `llama_cpp.Llama`."""
        if self._llm is None:
            if getattr(self.generator, "_model", None) is None:
                self.generator.warm_up()
            self._llm = self.generator._model
        if self._template is None:
            self._template = self._chat_template(self._llm)

    @staticmethod
    def _chat_template(llm: Any) -> Any:
        template = (getattr(llm, "metadata", None) or {}).get("tokenizer.chat_template")
        if template is None:
            return None
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter  # noqa: PLC0415

        eos_id, bos_id = llm.token_eos(), llm.token_bos()
        eos = llm._model.token_get_text(eos_id) if eos_id != -1 else ""
        bos = llm._model.token_get_text(bos_id) if bos_id != -1 else ""
        return Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos,
                                   add_generation_prompt=True)

    def render(self, prompt: Prompt) -> str:
        """The chat prompt text of `prompt` (a user turn or messages) with the assistant turn opened."""
        self.warm_up()
        messages = chat_messages(prompt)
        if self._template is not None:
            return self._template(messages=messages).prompt
        from llama_cpp import llama_chat_format  # noqa: PLC0415

        fmt = getattr(self._llm, "chat_format", None) or "llama-2"
        formatter = getattr(llama_chat_format, "format_" + fmt.replace("-", "_").replace(".", "_"), None)
        if formatter is None:
            raise UnsupportedGeneratorError(f"{COMPONENT}: the model has no chat template and its chat format {fmt!r} "
                                            "has no formatter to render prompts.")
        return formatter(messages=messages).prompt

    def encode(self, prompt: Prompt, answer: str, reply_prefix: str = "") -> tuple[list[int], list[int]]:
        """(prompt token ids, answer token ids): the rendered chat prompt (then the reply's prefix, as
        the model would have written it) and the bare answer."""
        llm = self._llm
        prompt_ids = list(llm.tokenize(self.render(prompt).encode("utf-8"), add_bos=True, special=True))
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
        with _model_lock(llm):
            prompt_ids, answer_ids = self.encode(prompt, answer, reply_prefix)
            if not answer_ids:
                raise ValueError(f"{COMPONENT}: the answer {answer!r} has no tokens.")
            ids = prompt_ids + answer_ids
            if len(ids) > llm.n_ctx():
                raise ValueError(f"{COMPONENT}: the prompt and answer take {len(ids)} tokens, more than the model's "
                                 f"n_ctx={llm.n_ctx()}.")
            p = len(prompt_ids)
            recurrent = getattr(llm, "_is_recurrent", False) or getattr(llm, "_is_hybrid", False)
            reuse = 0 if recurrent else prefix_reuse(llm.input_ids[: llm.n_tokens].tolist(), prompt_ids)
            if recurrent:
                llm.reset()
            else:
                reuse = self._restore(llm, prompt_ids, reuse)
            llm.n_tokens = reuse  # Llama.eval drops the KV cache from n_tokens on
            if reuse < p - 1:
                llm.eval(ids[reuse : p - 1])
            if not recurrent:
                self._keep(llm, prompt_ids[: p - 1])
            reads = []
            for k, token in enumerate([prompt_ids[-1]] + answer_ids[:-1]):
                llm.eval([token])  # one token at a time: the same arithmetic whatever was reused
                reads.append(token_read(self._last_logits(llm), answer_ids[k]))
        return AnswerLogprobs(token_logprobs=tuple(r[0] for r in reads),
                              tokens_evaluated=len(ids) - 1 - reuse, tokens_reused=reuse,
                              seconds=time.perf_counter() - start, token_margins=tuple(r[1] for r in reads),
                              token_ranks=tuple(r[2] for r in reads))

    def _keep(self, llm: Any, tokens: list[int]) -> None:
        """Copy the KV state of `tokens` (what the model holds now) for a later call to start from."""
        key = tuple(tokens)
        if key in self._states:
            self._states.move_to_end(key)
            return
        if self.prefix_states == 0 or not key:
            return
        state = self._copy_state(llm)
        if state is None:
            return
        self._states[key] = state
        while len(self._states) > self.prefix_states:
            self._states.popitem(last=False)

    def _restore(self, llm: Any, prompt_ids: list[int], reuse: int) -> int:
        """Load the kept state sharing the longest prefix with `prompt_ids` if it beats `reuse`; the tokens
        whose state the model now holds."""
        best, length = None, reuse
        for key in self._states:
            n = prefix_reuse(key, prompt_ids)
            if n > length:
                best, length = key, n
        if best is None:
            return reuse
        self._states.move_to_end(best)
        if not self._load_state(llm, self._states[best]):
            self._states.clear()  # the model's state is unknown now: evaluate the prompt from the start
            return 0
        llm.input_ids[: len(best)] = best
        return length

    @staticmethod
    def _copy_state(llm: Any) -> Any:
        """A copy of sequence 0's KV state (llama.cpp's `llama_state_seq_get_data`), None if it fails."""
        from llama_cpp import llama_cpp as lib  # noqa: PLC0415

        size = lib.llama_state_seq_get_size(llm._ctx.ctx, 0)
        buffer = (ctypes.c_uint8 * size)()
        written = lib.llama_state_seq_get_data(llm._ctx.ctx, buffer, size, 0)
        return (buffer, written) if 0 < written <= size else None

    @staticmethod
    def _load_state(llm: Any, state: Any) -> bool:
        """Replace sequence 0's KV state with a copy from `_copy_state`; False (state cleared) if it fails."""
        from llama_cpp import llama_cpp as lib  # noqa: PLC0415

        buffer, written = state
        if lib.llama_state_seq_set_data(llm._ctx.ctx, buffer, written, 0) == written:
            return True
        llm._ctx.kv_cache_seq_rm(-1, 0, -1)
        return False

    @staticmethod
    def _last_logits(llm: Any) -> np.ndarray:
        """The logits after the last evaluated token (a copy: llama.cpp reuses the buffer)."""
        return np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(llm.n_vocab(),)).copy()


__all__ = ["LlamaCppBackend"]
