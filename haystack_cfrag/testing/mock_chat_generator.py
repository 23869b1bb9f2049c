"""MockChatGenerator: a deterministic, fault-injecting stand-in for a chat model."""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import re
import threading
import time
from typing import Any

from haystack import component, default_from_dict, default_to_dict, logging
from haystack.dataclasses import ChatMessage, StreamingChunk

from haystack_cfrag.common.validation import check_choice, check_int, check_range

logger = logging.getLogger(__name__)

FAILURE_MODES = ("call", "prompt")
_EVIDENCE_LINE = re.compile(r"^\[(\d+)\]\s*(.*)$")


class InjectedFailureError(RuntimeError):
    """The failure a MockChatGenerator raises on purpose."""


@component
class MockChatGenerator:
    """
    A chat generator that answers CF-RAG prompts deterministically, with optional failures and delay.

    A counterfactual prompt gets valid JSON (variants with distinct hints); an evidence prompt "Answer: <title of
    passage [1]>" with a rationale; a synthesis prompt the first draft's answer. `failure_rate` makes a share of
    calls raise `InjectedFailureError`, by (seed, call number) or (seed, prompt) hash; `delay_s` sleeps before
    each reply; `support_backend()` gives a deterministic `MockSupportBackend`.

    ### Usage example
    ```python
    from haystack.dataclasses import ChatMessage
    from haystack_cfrag.testing import MockChatGenerator

    gen = MockChatGenerator(failure_rate=0.1, seed=1)
    prompt = "Evidence:\\n[1] (Christian Bale) Bale plays Batman.\\n\\nQuestion: Who?"
    out = gen.run(messages=[ChatMessage.from_user(prompt)])
    print(out["replies"][0].text)  # "Answer: Christian Bale ..."
    ```
    """

    def __init__(
        self,
        *,
        failure_rate: float = 0.0,
        delay_s: float = 0.0,
        seed: int = 0,
        failure_mode: str = "call",
        streaming_callback: Any | None = None,
    ) -> None:
        """
        :param failure_rate: share of calls that raise, in [0, 1].
        :param delay_s: seconds to wait before each reply, in [0, 60].
        :param seed: seed of the failure draws (an integer ≥ 0).
        :param failure_mode: "call" (by call count) or "prompt" (by prompt hash).
        :param streaming_callback: called with each chunk of the reply (word by word) when set.
        """
        check_range("failure_rate", failure_rate, 0.0, 1.0)
        check_range("delay_s", delay_s, 0.0, 60.0)
        check_int("seed", seed, 0)
        check_choice("failure_mode", failure_mode, FAILURE_MODES)
        if streaming_callback is not None and not callable(streaming_callback):
            raise ValueError("'streaming_callback' must be callable or None.")
        self.failure_rate = float(failure_rate)
        self.delay_s = float(delay_s)
        self.seed = seed
        self.failure_mode = failure_mode
        self.streaming_callback = streaming_callback
        self.calls = 0
        self.failures = 0
        self._lock = threading.Lock()

    def to_dict(self) -> dict[str, Any]:
        """Serialise (the streaming callback is a run-time object and is not kept)."""
        return default_to_dict(self, failure_rate=self.failure_rate, delay_s=self.delay_s, seed=self.seed,
                               failure_mode=self.failure_mode)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MockChatGenerator:
        """Deserialise."""
        return default_from_dict(cls, data)

    @component.output_types(replies=list[ChatMessage])
    def run(
        self,
        messages: list[ChatMessage],
        generation_kwargs: dict[str, Any] | None = None,
        streaming_callback: Any | None = None,
    ) -> dict[str, list[ChatMessage]]:
        """
        :param messages: the conversation; the last message's text is the prompt.
        :param generation_kwargs: accepted and ignored (the reply is deterministic).
        :param streaming_callback: overrides the init callback for this call.
        :returns: `replies`, one assistant message.
        :raises InjectedFailureError: on an injected failure.
        """
        prompt = self._prompt(messages)
        self._maybe_fail(prompt)
        if self.delay_s:
            time.sleep(self.delay_s)
        return self._reply(prompt, streaming_callback or self.streaming_callback)

    @component.output_types(replies=list[ChatMessage])
    async def run_async(
        self,
        messages: list[ChatMessage],
        generation_kwargs: dict[str, Any] | None = None,
        streaming_callback: Any | None = None,
    ) -> dict[str, list[ChatMessage]]:
        """Async twin of `run`, with the same sockets."""
        prompt = self._prompt(messages)
        self._maybe_fail(prompt)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        return self._reply(prompt, streaming_callback or self.streaming_callback)

    def support_backend(self) -> MockSupportBackend:
        """The stand-in for the reader's log-probabilities (see the class doc); no call counts, no failures."""
        return MockSupportBackend()

    # ------------------------------------------------------------------ steps
    @staticmethod
    def _prompt(messages: list[ChatMessage]) -> str:
        if not isinstance(messages, list) or not messages or not all(isinstance(m, ChatMessage) for m in messages):
            raise ValueError("MockChatGenerator: 'messages' must be a non-empty list of ChatMessage.")
        return messages[-1].text or ""

    def _maybe_fail(self, prompt: str) -> None:
        with self._lock:
            n = self.calls
            self.calls += 1
        if self.failure_rate <= 0.0:
            return
        key = f"{self.seed}:{n}" if self.failure_mode == "call" else f"{self.seed}:{prompt}"
        draw = random.Random(hashlib.sha256(key.encode()).hexdigest()).random()  # noqa: S311  (not crypto)
        if draw < self.failure_rate:
            with self._lock:
                self.failures += 1
            raise InjectedFailureError(f"MockChatGenerator: injected failure (call {n})")

    def _reply(self, prompt: str, callback: Any | None) -> dict[str, list[ChatMessage]]:
        text = reply_for(prompt)
        if callback is not None:
            words = text.split(" ")
            for i, word in enumerate(words):
                callback(StreamingChunk(content=word + (" " if i < len(words) - 1 else "")))
        meta = {
            "model": "mock",
            "finish_reason": "stop",
            "usage": {"prompt_tokens": len(prompt.split()), "completion_tokens": len(text.split())},
        }
        return {"replies": [ChatMessage.from_assistant(text, meta=meta)]}


class MockSupportBackend:
    """log P(answer | prompt) made up from word overlap: −0.5 per answer word the prompt holds, −4.0 otherwise.

    >>> MockSupportBackend().answer_logprobs("[1] Christian Bale plays Batman.", "Christian Bale").token_logprobs
    (-0.5, -0.5)
    """

    name = "mock"

    def warm_up(self) -> None:
        """Nothing to load."""

    def answer_logprobs(self, prompt: Any, answer: str, reply_prefix: str = "") -> Any:
        """One value per answer word (the `haystack_cfrag.support.backends.AnswerLogprobs` shape);
        `prompt` is a user turn or chat messages, the reply's prefix counts as prompt."""
        from haystack_cfrag.support.backends import AnswerLogprobs, chat_messages  # noqa: PLC0415

        prompt = "\n".join(m["content"] for m in chat_messages(prompt)) + reply_prefix
        seen = set(re.findall(r"\w+", prompt.lower()))
        words = re.findall(r"\w+", answer.lower()) or [""]
        values = tuple(-0.5 if w in seen else -4.0 for w in words)
        return AnswerLogprobs(values, len(prompt.split()) + len(words), 0, 0.0)


# ---------------------------------------------------------------- replies
def reply_for(prompt: str) -> str:
    """The deterministic reply to a prompt (see the class doc)."""
    if "counterfactual questions" in prompt or "with a DIFFERENT answer" in prompt:
        return _counterfactual_reply(prompt)
    if "Drafts (best score first):" in prompt:
        first = re.search(r"^\s*1\.\s*Answer:\s*(.*?)\s*\|", prompt, flags=re.MULTILINE)
        answer = first.group(1) if first else "unknown"
        return f"Answer: {answer}\nRationale: the highest-scoring draft."
    answer, cited = _answer_from_evidence(prompt)
    return (
        f"Answer: {answer}\nRationale: passage {cited or 'none'} names it.\n"
        f"Key evidence: {f'[{cited}]' if cited else 'none'}\nConflicts: none"
    )


def _question(prompt: str) -> str:
    found = re.findall(r"(?:Original question|Question):\s*(.+)", prompt)
    return found[-1].strip() if found else prompt.strip().splitlines()[-1] if prompt.strip() else "the question"


def _counterfactual_reply(prompt: str) -> str:
    found = re.search(r"(?:Give|Write) (\d+) (?:counterfactual )?questions", prompt)
    n = int(found.group(1)) if found else 2
    question = _question(prompt).rstrip("?").strip()
    variants = [("in the sequel released afterwards", "entity"),
                ("ten years earlier before production", "temporal"),
                ("in the original source novel", "scope"), ("as a supporting cast member", "role"),
                ("according to the newspaper critics", "categorical")]
    cfs = []
    for i in range(n):
        suffix, kind = variants[i % len(variants)]
        if i >= len(variants):
            suffix += f" (variant {i // len(variants) + 1})"
        cfs.append({"question": f"{question} {suffix}?", "type": kind, "answer_hint": f"alternative {i + 1}"})
    if "with a DIFFERENT answer" in prompt:  # the compact prompt: one question per line
        return "\n".join(c["question"] for c in cfs)
    return json.dumps({"original_answer_hint": "original", "counterfactuals": cfs})


def _answer_from_evidence(prompt: str) -> tuple[str, int | None]:
    for line in prompt.splitlines():
        match = _EVIDENCE_LINE.match(line.strip())
        if match:
            title, text = _split_title(match.group(2))
            return (title or " ".join(text.split()[:4]) or "unknown"), int(match.group(1))
    return "unknown", None


def _split_title(rest: str) -> tuple[str, str]:
    """("Title (2008 film)", "text") from "(Title (2008 film)) text"; ("", rest) without a title."""
    if not rest.startswith("("):
        return "", rest
    depth = 0
    for i, char in enumerate(rest):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0:
            return rest[1:i].strip(), rest[i + 1 :].strip()
    return "", rest
