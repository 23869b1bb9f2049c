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
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
from haystack.lazy_imports import LazyImport

from haystack_cfrag.support.math import (
    answer_token_span,
    offsets_from_text_offsets,
    prefix_reuse,
    shifted_token_logprobs,
    token_logprob,
)

with LazyImport("Run 'pip install jinja2' (a Haystack dependency).") as jinja_import:
    from jinja2.sandbox import ImmutableSandboxedEnvironment

with LazyImport("Run 'pip install torch' for the transformers backend.") as torch_import:
    import torch

with LazyImport("Run 'pip install httpx' for the OpenAI-compatible backend.") as httpx_import:
    import httpx

COMPONENT = "ReaderSupportScorer"

CHATML_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""ChatML: the client-side template for servers whose template the client cannot read (Qwen's turns)."""

Prompt = str | list[dict[str, str]]
"""A user turn, or chat messages as `{"role": …, "content": …}` dicts (what the reader was sent)."""


def chat_messages(prompt: Prompt) -> list[dict[str, str]]:
    """The messages a prompt stands for: a string is one user turn.

    >>> chat_messages("Hi")
    [{'role': 'user', 'content': 'Hi'}]
    """
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    if (
        not isinstance(prompt, list)
        or not prompt
        or not all(isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
                   for m in prompt)
    ):
        raise ValueError(f"{COMPONENT}: a prompt is a string or a non-empty list of {{'role', 'content'}} strings.")
    return [{"role": m["role"], "content": m["content"]} for m in prompt]


class UnsupportedGeneratorError(ValueError):
    """The injected generator gives no way to read the log-probabilities of a given answer."""


class NoPromptLogprobsError(RuntimeError):
    """A server answered without prompt log-probabilities (llama.cpp's server does)."""


@dataclass(frozen=True)
class AnswerLogprobs:
    """One scoring: the answer tokens' log-probabilities and what the call cost."""

    token_logprobs: tuple[float, ...]
    tokens_evaluated: int
    tokens_reused: int
    seconds: float


@runtime_checkable
class SupportBackend(Protocol):
    """What the scorer needs: log P(answer tokens | chat prompt with `prompt` as the user turn)."""

    name: str

    def warm_up(self) -> None:
        """Load what the backend needs (the model); safe to call again."""

    def answer_logprobs(self, prompt: Prompt, answer: str, reply_prefix: str = "") -> AnswerLogprobs:
        """Score `answer` as the assistant's reply to `prompt`, after `reply_prefix` (not scored)."""


def _class_names(obj: Any) -> set[str]:
    return {cls.__name__ for cls in type(obj).__mro__}


def backend_for(generator: Any, *, chat_template: str | None = None) -> SupportBackend:
    """The backend that reads answer log-probabilities from `generator` (see the module's table).

    `chat_template` (Jinja) renders prompts for the OpenAI-compatible backend (default ChatML).
    Raises UnsupportedGeneratorError (one line) for any other generator.
    """
    own = getattr(generator, "support_backend", None)
    if callable(own):
        return own()
    names = _class_names(generator)
    if "LlamaCppChatGenerator" in names:
        return LlamaCppBackend(generator=generator)
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


# ------------------------------------------------------------------ llama-cpp-python
_LOCKS: dict[int, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def _model_lock(model: Any) -> threading.Lock:
    """One lock per loaded model: a llama.cpp context is not thread-safe."""
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(id(model), threading.Lock())


class LlamaCppBackend:
    """log P(answer | prompt) from a `llama_cpp.Llama`, computed from its logits.

    The prompt is rendered with the model's own chat template (GGUF metadata
    `tokenizer.chat_template`, as llama-cpp-python's "chat_template.default" format does) with
    the assistant turn opened; the answer is tokenized on its own (no special tokens) and
    appended, so its tokens are exactly those the model would emit for it. The model keeps its
    state between calls: the longest common prefix with the previous evaluation is reused
    (`prefix_reuse`), the rest of the prompt evaluated in one batch with `Llama.eval`
    except its last token, which is evaluated alone, as is each answer token after it,
    reading the last logits after each: no `logits_all` needed (the generator's generation
    stays as fast as it was), and the answer's log-probabilities do not depend on how much
    was reused (llama.cpp's CPU arithmetic differs by batch size: up to ~0.3 nats per token
    measured on the embedded Qwen model between a batched and a single-token decode). `create_completion(echo=True)` is not
    used (llama-cpp-python #1983: its echo log-probs are reported off by one).

    Beyond the previous call, the KV state of the last `prefix_states` prompts (each up to its
    last token; llama.cpp's per-sequence state copy, ~28 KB a token for the embedded model) is
    kept, and a call whose prompt shares a longer prefix with one of them than with the model's
    current state starts from that copy: CER's round k + 1 scores C ∪ {d*} ∪ {d} after round
    k's last candidate, and reads C ∪ {d*} from the copy made when it was scored instead of
    evaluating d* again. The copy holds the numbers that call computed; a prefix computed in
    another batch split can differ in the last digits (12 CER-like scorings of the embedded
    model with and without kept states: at most 0.0034 nats a token apart, as a different
    previous call makes them too). 0 keeps only the previous call's prefix.
    """

    name = "llama_cpp"

    def __init__(
        self, *, generator: Any | None = None, model: Any | None = None, prefix_states: int = 4
    ) -> None:
        """:param generator: a LlamaCppChatGenerator (its `_model` after warm_up); or
        :param model: a loaded `llama_cpp.Llama`.
        :param prefix_states: prompts whose KV state is kept for a later call to start from, ≥ 0."""
        if generator is None and model is None:
            raise ValueError(f"{COMPONENT}: LlamaCppBackend needs a generator or a model.")
        if isinstance(prefix_states, bool) or not isinstance(prefix_states, int) or prefix_states < 0:
            raise ValueError(f"{COMPONENT}: 'prefix_states' must be an integer >= 0, got {prefix_states!r}.")
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
        return Jinja2ChatFormatter(
            template=template, eos_token=eos, bos_token=bos, add_generation_prompt=True
        )

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
            raise UnsupportedGeneratorError(
                f"{COMPONENT}: the model has no chat template and its chat format {fmt!r} has no formatter to render prompts."
            )
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
                raise ValueError(
                    f"{COMPONENT}: the prompt and answer take {len(ids)} tokens, more than the model's n_ctx={llm.n_ctx()}."
                )
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
            values = []
            for k, token in enumerate([prompt_ids[-1]] + answer_ids[:-1]):
                llm.eval([token])  # one token at a time: the same arithmetic whatever was reused
                values.append(token_logprob(self._last_logits(llm), answer_ids[k]))
        return AnswerLogprobs(
            token_logprobs=tuple(float(v) for v in values),
            tokens_evaluated=len(ids) - 1 - reuse,
            tokens_reused=reuse,
            seconds=time.perf_counter() - start,
        )

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
        """Load the kept state sharing the longest prefix with `prompt_ids` if it beats `reuse`.

        Returns the tokens of the prompt whose state the model now holds."""
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


# ------------------------------------------------------------------ transformers
class TransformersBackend:
    """log P(answer | prompt) from a transformers causal LM in one forward pass.

    The prompt is rendered with the tokenizer's chat template (assistant turn opened), the
    answer appended, the whole text tokenized once with offsets (a fast tokenizer) and the
    answer's tokens picked by their characters (`answer_token_span`); with a slow tokenizer
    the prompt and the answer are tokenized apart and concatenated. No prefix is reused.
    """

    name = "transformers"

    def __init__(
        self, *, generator: Any | None = None, model: Any | None = None, tokenizer: Any | None = None
    ) -> None:
        """:param generator: a HuggingFaceLocalChatGenerator/TransformersChatGenerator; or
        :param model: a causal LM and :param tokenizer: its tokenizer."""
        if generator is None and (model is None or tokenizer is None):
            raise ValueError(
                f"{COMPONENT}: TransformersBackend needs a generator, or a model and its tokenizer."
            )
        self.generator = generator
        self.model = model
        self.tokenizer = tokenizer

    def warm_up(self) -> None:
        """Warm up the generator and keep its pipeline's model and tokenizer."""
        if self.model is None:
            if getattr(self.generator, "pipeline", None) is None:
                self.generator.warm_up()
            self.model = self.generator.pipeline.model
            self.tokenizer = self.generator.pipeline.tokenizer

    def render(self, prompt: Prompt) -> str:
        """The chat prompt text of `prompt` (a user turn or messages) with the assistant turn opened."""
        self.warm_up()
        template = getattr(self.generator, "chat_template", None)
        return self.tokenizer.apply_chat_template(
            chat_messages(prompt),
            tokenize=False,
            add_generation_prompt=True,
            chat_template=template,
        )

    def encode(self, prompt: Prompt, answer: str, reply_prefix: str = "") -> tuple[list[int], tuple[int, int]]:
        """(token ids of prompt + reply prefix + answer, the answer's token span)."""
        rendered = self.render(prompt) + reply_prefix
        text = rendered + answer
        if getattr(self.tokenizer, "is_fast", False):
            enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
            span = answer_token_span([tuple(o) for o in enc["offset_mapping"]], len(rendered), len(text))
            return list(enc["input_ids"]), span
        head = list(self.tokenizer(rendered, add_special_tokens=False)["input_ids"])
        tail = list(self.tokenizer(answer, add_special_tokens=False)["input_ids"])
        return head + tail, (len(head), len(head) + len(tail))

    def answer_logprobs(self, prompt: Prompt, answer: str, reply_prefix: str = "") -> AnswerLogprobs:
        """Score `answer` with one forward pass over prompt + answer."""
        torch_import.check()
        self.warm_up()
        start = time.perf_counter()
        ids, (i, j) = self.encode(prompt, answer, reply_prefix)
        if i < 1 or j <= i:
            raise ValueError(f"{COMPONENT}: the answer {answer!r} has no tokens after the prompt.")
        device = getattr(self.model, "device", "cpu")
        with torch.no_grad():
            logits = self.model(input_ids=torch.tensor([ids], device=device)).logits[0, :j]
        values = shifted_token_logprobs(logits.float().cpu().numpy(), ids[:j])[i - 1 : j - 1]
        return AnswerLogprobs(
            token_logprobs=tuple(float(v) for v in values),
            tokens_evaluated=len(ids),
            tokens_reused=0,
            seconds=time.perf_counter() - start,
        )


# ------------------------------------------------------------------ OpenAI-compatible servers
class OpenAICompatibleBackend:
    """log P(answer | prompt) from an OpenAI-compatible server that echoes prompt log-probabilities.

    One `POST {api_base_url}/completions` per scoring with `echo=true, logprobs=1,
    max_tokens=1` (vLLM returns the prompt's token log-probabilities and offsets this way).
    The prompt is rendered client-side with `chat_template` (Jinja; default ChatML, the
    embedded Qwen model's turns): `/completions` applies no template. The first reply is
    checked: a server that echoes no prompt log-probabilities (llama.cpp's server) is refused
    with `NoPromptLogprobsError`. Token counts come from the reply (`usage`); the server's own
    prefix cache is not visible, so `tokens_reused` is 0.
    """

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
        body = {
            "model": self.model,
            "prompt": text,
            "max_tokens": 1,
            "temperature": 0,
            "echo": True,
            "logprobs": 1,
        }
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
        return AnswerLogprobs(
            token_logprobs=values,
            tokens_evaluated=int(usage) if isinstance(usage, int) else 0,
            tokens_reused=0,
            seconds=time.perf_counter() - start,
        )

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
        i, j = answer_token_span(
            offsets_from_text_offsets(offsets, len(choice["text"])), answer_start, len(text)
        )
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
