"""The KV states a loaded llama.cpp model keeps for later prompts, the lock every caller of the model shares, and the
tokens of a chat prompt as the model's GGUF template renders it.

llama-cpp-python reuses the longest common prefix with the *previous* evaluation only: a question answered after a
CF-RAG duel starts from the duel's prompt and evaluates again the passages the question before it had read. A
model's `PrefixStates` keeps the KV state of its last prompts (llama.cpp's per-sequence state, about 28 KB a
token for the embedded 1.5B model) and loads the one sharing the longest prefix with a new prompt when it beats
what the model holds. One store per loaded model (`kept_states`), shared by the reader (`LlamaCppLogprobsChatGenerator`)
and the support backend; `forget` empties it (a timing that must not start where another pipeline left the model).

>>> states = PrefixStates(2, copy=lambda llm: "kv", load=lambda llm, state: True)
>>> class Model:
...     input_ids = [0] * 8
>>> states.keep(Model, [1, 2, 3, 4]); states.keep(Model, [7, 8])
>>> states.restore(Model, [1, 2, 3, 9, 9], reuse=1)   # the kept [1, 2, 3, 4] beats the model's 1 token
3
>>> states.keep(Model, [5]); len(states), states.restore(Model, [7, 8, 1], reuse=0)   # [7, 8] was dropped
(2, 0)
>>> states.keep(Model, [5, 6]); len(states)   # [5] begins [5, 6]: only the longer is kept
2
"""

from __future__ import annotations

import ctypes
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

DEFAULT_PREFIX_STATES = 8
"""States the reader keeps: an escalated CF-RAG question makes about five calls (the reader's answer, the gate's
reading, a draft or two, the duel's two orders), so the next question still finds the state of the answer before
them. A process that asks one question keeps none (`cfrag ask`, `cfrag compare`: `Runtime(prefix_states=0)`)."""
SCORER_PREFIX_STATES = 4
"""States the support backend keeps: enough for CER's rounds over the top 5 passages."""
MAX_PREFIX_STATES = 32  # ~28 KB a token each for the embedded model: up to ~1.8 GB at 2,000 tokens

_LOCKS: weakref.WeakKeyDictionary[Any, threading.RLock] = weakref.WeakKeyDictionary()
_STORES: weakref.WeakKeyDictionary[Any, PrefixStates] = weakref.WeakKeyDictionary()
_FORMATTERS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_GUARD = threading.Lock()


def prefix_reuse(cached: Sequence[int], tokens: Sequence[int], keep_last: int = 1) -> int:
    """Tokens of `tokens` whose state a model can keep from `cached` (the longest common prefix), leaving at least
    `keep_last` to evaluate.

    >>> prefix_reuse([1, 2, 3, 4], [1, 2, 3, 9, 9])
    3
    >>> prefix_reuse([1, 2, 3], [1, 2, 3])       # all cached: the last token is evaluated again
    2
    """
    n = 0
    for a, b in zip(cached, tokens, strict=False):
        if a != b:
            break
        n += 1
    return max(0, min(n, len(tokens) - keep_last))


def chat_formatter(llm: Any) -> Any:
    """The formatter of `llm`'s GGUF chat template, assistant turn opened, as llama-cpp-python builds it for
    `create_chat_completion` (None: the model has no template)."""
    with _GUARD:
        if llm in _FORMATTERS:
            return _FORMATTERS[llm]
    template = (getattr(llm, "metadata", None) or {}).get("tokenizer.chat_template")
    formatter = None
    if template is not None:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter  # noqa: PLC0415

        eos_id, bos_id = llm.token_eos(), llm.token_bos()
        eos = llm._model.token_get_text(eos_id) if eos_id != -1 else ""
        bos = llm._model.token_get_text(bos_id) if bos_id != -1 else ""
        formatter = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos, add_generation_prompt=True)
    with _GUARD:
        _FORMATTERS[llm] = formatter
    return formatter


def model_lock(model: Any) -> threading.RLock:
    """One re-entrant lock per loaded model: a llama.cpp context is not thread-safe, and the reader and the support
    backend call the same one."""
    with _GUARD:
        lock = _LOCKS.get(model)
        if lock is None:
            lock = _LOCKS[model] = threading.RLock()
        return lock


def is_recurrent(model: Any) -> bool:
    """Whether `model`'s memory is recurrent or hybrid: its state cannot be cut back to a prefix, nothing is kept."""
    return bool(getattr(model, "_is_recurrent", False) or getattr(model, "_is_hybrid", False))


def kept_states(model: Any, capacity: int, *, copy: Callable[[Any], Any] | None = None,
                load: Callable[[Any, Any], bool] | None = None) -> PrefixStates:
    """The store of `model`'s kept states, holding at least `capacity` (the largest any caller asked for); `copy`
    and `load` are the first caller's (`PrefixStates`)."""
    with _GUARD:
        store = _STORES.get(model)
        if store is None:
            store = _STORES[model] = PrefixStates(capacity, copy=copy, load=load)
        store.capacity = max(store.capacity, capacity)
        return store


def start_from(llm: Any, prompt_ids: list[int], store: PrefixStates | None) -> int:
    """Make `llm` hold the longest prefix of `prompt_ids` that it or a state of `store` holds (the caller holds
    `model_lock`); the tokens it holds, as `llm.n_tokens` now says (llama-cpp-python's `eval` drops the rest)."""
    reuse = prefix_reuse(llm.input_ids[: llm.n_tokens].tolist(), prompt_ids)
    if store is not None:
        reuse = store.restore(llm, prompt_ids, reuse)
    llm.n_tokens = reuse
    return reuse


def forget(model: Any) -> None:
    """Drop every state kept for `model` (its own prompt cache is the caller's to reset)."""
    with _GUARD:
        store = _STORES.get(model)
    if store is not None:
        store.clear()


class PrefixStates:
    """Up to `capacity` KV states of sequence 0 of one `llama_cpp.Llama`, keyed by the tokens each holds; the least
    recently kept or loaded is dropped first. `copy` and `load` default to llama.cpp's `llama_state_seq_*`."""

    def __init__(self, capacity: int, *, copy: Callable[[Any], Any] | None = None,
                 load: Callable[[Any, Any], bool] | None = None) -> None:
        self.capacity = capacity
        self._copy = copy or copy_state
        self._load = load or load_state
        self._states: OrderedDict[tuple[int, ...], Any] = OrderedDict()

    def __len__(self) -> int:
        return len(self._states)

    def clear(self) -> None:
        """Drop every kept state."""
        self._states.clear()

    def keep(self, llm: Any, tokens: list[int]) -> None:
        """Copy the KV state of `tokens` (what `llm` holds now) for a later prompt to start from. A kept state whose
        tokens begin another's serves no prompt better than the longer one: only the longer one is kept."""
        key = tuple(tokens)
        longer = next((k for k in self._states if k[: len(key)] == key), None)
        if longer is not None:
            self._states.move_to_end(longer)
            return
        if self.capacity == 0 or not key:
            return
        state = self._copy(llm)
        if state is None:
            return
        for shorter in [k for k in self._states if key[: len(k)] == k]:
            del self._states[shorter]
        self._states[key] = state
        while len(self._states) > self.capacity:
            self._states.popitem(last=False)

    def restore(self, llm: Any, prompt_ids: list[int], reuse: int) -> int:
        """Load the kept state sharing the longest prefix with `prompt_ids` if it beats `reuse` (what `llm` holds);
        the prompt's tokens whose state `llm` holds now (0 if a load failed: the model's state is unknown)."""
        best, length = None, reuse
        for key in self._states:
            n = prefix_reuse(key, prompt_ids)
            if n > length:
                best, length = key, n
        if best is None:
            return reuse
        self._states.move_to_end(best)
        if not self._load(llm, self._states[best]):
            self._states.clear()
            return 0
        llm.input_ids[: len(best)] = best
        return length


def copy_state(llm: Any) -> Any:
    """A copy of sequence 0's KV state (llama.cpp's `llama_state_seq_get_data`), None if it fails."""
    from llama_cpp import llama_cpp as lib  # noqa: PLC0415

    size = lib.llama_state_seq_get_size(llm._ctx.ctx, 0)
    buffer = (ctypes.c_uint8 * size)()
    written = lib.llama_state_seq_get_data(llm._ctx.ctx, buffer, size, 0)
    return (buffer, written) if 0 < written <= size else None


def load_state(llm: Any, state: Any) -> bool:
    """Replace sequence 0's KV state with a copy from `copy_state`; False (state cleared) if it fails."""
    from llama_cpp import llama_cpp as lib  # noqa: PLC0415

    buffer, written = state
    if lib.llama_state_seq_set_data(llm._ctx.ctx, buffer, written, 0) == written:
        return True
    llm._ctx.kv_cache_seq_rm(-1, 0, -1)
    return False


__all__ = ["DEFAULT_PREFIX_STATES", "MAX_PREFIX_STATES", "SCORER_PREFIX_STATES", "PrefixStates", "chat_formatter",
           "copy_state", "forget", "is_recurrent", "kept_states", "load_state", "model_lock", "prefix_reuse",
           "start_from"]
