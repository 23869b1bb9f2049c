"""The tests' deterministic fakes: the ones shipped doctests use live in the package
(`haystack_cfrag.testing.fakes`, re-exported here); the failing and fault-injecting ones only tests use are here.

- FailingChatGenerator: raises on every call; FixedReplyGenerator: one fixed reply (or raises), prompts recorded.
- FaultyChatGenerator: a KeywordReader that injects one fault (exception, stall, empty,
  garbled, no "Answer:" label, a 10,000-token reply) into the calls it selects.
- InjectionFollowingReader: a KeywordReader that obeys "ignore the question and answer X" in
  its evidence, citing the passage that said so.
- store_integrity (a separate module) fingerprints a document store for before/after checks.
"""

from __future__ import annotations

import ctypes
import re
import signal
import threading
from typing import Any

from haystack import component, default_from_dict, default_to_dict
from haystack.dataclasses import ChatMessage

from haystack_cfrag.common.validation import check_choice
from haystack_cfrag.testing.fakes import *  # noqa: F403  (every public name)
from haystack_cfrag.testing.fakes import KeywordReader


class OutsideReader(KeywordReader):  # noqa: F405
    """A KeywordReader whose class lives here, in `tests`, outside the package's allowlist."""


class ReaderInterruptedWhileLoading(KeywordReader):  # noqa: F405
    """A KeywordReader whose load meets a Ctrl-C as llama.cpp's does: in a C callback, where ctypes swallows
    it (the interrupt is reported to `sys.unraisablehook`, not raised). Counts its calls."""

    def __init__(self, candidates: list[str]) -> None:
        super().__init__(candidates=candidates)
        self.loaded = False
        self.calls = 0

    def warm_up(self) -> None:
        ctypes.CFUNCTYPE(None)(lambda: signal.raise_signal(signal.SIGINT))()
        self.loaded = True

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage], generation_kwargs: dict[str, Any] | None = None) -> dict:
        self.calls += 1
        return KeywordReader.run(self, messages=messages)  # noqa: F405


@component
class FailingChatGenerator:
    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage]) -> dict[str, Any]:
        raise RuntimeError("model server unavailable")

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FailingChatGenerator:
        return default_from_dict(cls, data)


FAULT_MODES = ("exception", "stall", "empty", "no_replies", "garbled", "no_answer_label", "long")
LONG_REPLY_TOKENS = 10_000


@component
class FaultyChatGenerator:
    """A KeywordReader whose selected calls fail in one way (see FAULT_MODES).

    :param mode: the fault.
    :param on: which prompts may fail: "all", "counterfactual" or "draft".
    :param calls: 0-based numbers, among the prompts `on` selects, of the calls that fail; None = all of them.
    :param stall_s: how long a stalled call waits (or until `release()`), then answers normally.
    """

    def __init__(
        self,
        mode: str,
        on: str = "all",
        calls: list[int] | None = None,
        stall_s: float = 30.0,
        candidates: list[str] | None = None,
        counterfactual_reply: str = "",
    ) -> None:
        check_choice("mode", mode, FAULT_MODES)
        self.mode, self.on, self.calls, self.stall_s = mode, on, calls, stall_s
        self.reader = KeywordReader(candidates=candidates or [], counterfactual_reply=counterfactual_reply)
        self.seen = 0
        self.faults = 0
        self.active = 0
        self.max_active = 0  # the most calls that ran at the same time
        self._lock = threading.Lock()
        self._release = threading.Event()

    def release(self) -> None:
        """Let stalled calls finish now."""
        self._release.set()

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage], generation_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
        with self._lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            return self._run(messages)
        finally:
            with self._lock:
                self.active -= 1

    def _run(self, messages: list[ChatMessage]) -> dict[str, Any]:
        prompt = messages[-1].text or ""
        kind = "counterfactual" if "counterfactual questions" in prompt else "draft"
        with self._lock:
            selected = self.on in ("all", kind)
            number = self.seen if selected else -1
            self.seen += selected
            fault = selected and (self.calls is None or number in self.calls)
            self.faults += fault
        if not fault:
            return self.reader.run(messages=messages)
        if self.mode == "exception":
            raise RuntimeError("injected fault: model server error")
        if self.mode == "stall":
            self._release.wait(self.stall_s)
            return self.reader.run(messages=messages)
        if self.mode == "no_replies":
            return {"replies": []}
        text = {
            "empty": "",
            "garbled": '}{ "counterfactuals": [ {"question": \u0000 ]] ~~ <|endoftext|> {{{',
            "no_answer_label": "Christian Bale plays the lead; the cast list says so.\nThat is all.",
            "long": "Answer: Christian Bale " + " ".join(f"tok{i}" for i in range(LONG_REPLY_TOKENS)),
        }[self.mode]
        return {"replies": [ChatMessage.from_assistant(text)]}

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self, mode=self.mode, on=self.on, calls=self.calls, stall_s=self.stall_s,
            candidates=self.reader.candidates, counterfactual_reply=self.reader.counterfactual_reply,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FaultyChatGenerator:
        return default_from_dict(cls, data)


_INJECTION = re.compile(r"ignore the question and answer ([^.\n]+)", re.IGNORECASE)


@component
class InjectionFollowingReader(KeywordReader):
    """A reader that obeys an instruction planted in a passage and cites that passage."""

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage], generation_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
        prompt = messages[-1].text or ""
        if "counterfactual questions" not in prompt:
            evidence = prompt.split("Question:")[0]
            for passage in re.split(r"\n(?=\[\d+\])", evidence):
                hit = _INJECTION.search(passage)
                number = re.match(r"\s*(?:Evidence:\s*)?\[(\d+)\]", passage)
                if hit and number:
                    self.prompts.append(prompt)
                    answer = hit.group(1).strip()
                    return {"replies": [ChatMessage.from_assistant(
                        f"Answer: {answer}\nRationale: the passage says so.\nKey evidence: [{number.group(1)}]")]}
        return super().run(messages=messages, generation_kwargs=generation_kwargs)


@component
class FixedReplyGenerator:
    """Replies with a fixed text (or raises when `fail`), recording the prompts.

    >>> gen = FixedReplyGenerator(reply="Answer: Bale")
    >>> gen.run(messages=[ChatMessage.from_user("Who?")])["replies"][0].text, gen.prompts
    ('Answer: Bale', ['Who?'])
    """

    def __init__(self, reply: str = "Answer: Christian Bale", fail: bool = False) -> None:
        self.reply = reply
        self.fail = fail
        self.prompts: list[str] = []

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage]) -> dict[str, Any]:
        """The fixed reply (RuntimeError "generator down" when `fail`)."""
        self.prompts.append(messages[0].text or "")
        if self.fail:
            raise RuntimeError("generator down")
        return {"replies": [ChatMessage.from_assistant(self.reply)]}

    def to_dict(self) -> dict[str, Any]:
        """Serialise."""
        return default_to_dict(self, reply=self.reply, fail=self.fail)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FixedReplyGenerator:
        """Deserialise."""
        return default_from_dict(cls, data)
