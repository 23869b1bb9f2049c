"""Deterministic fake components for unit tests (no models, no network).

- HashingTextEmbedder / HashingDocumentEmbedder: bag-of-words hashed into a fixed dimension,
  so that texts sharing words are similar (unlike hash-of-the-whole-text mock embeddings).
- KeywordReader: a chat generator that answers counterfactual prompts with a fixed JSON and
  draft/standard prompts with the candidate most mentioned in its evidence (ties: the one
  mentioned first) — a caricature of a reader that is outvoted by volume.
- FailingChatGenerator: raises on every call; FixedReplyGenerator: one fixed reply (or raises), prompts recorded.
- FaultyChatGenerator: a KeywordReader that injects one fault (exception, stall, empty,
  garbled, no "Answer:" label, a 10,000-token reply) into the calls it selects.
- InjectionFollowingReader: a KeywordReader that obeys "ignore the question and answer X" in
  its evidence, citing the passage that said so.
- store_integrity (a separate module) fingerprints a document store for before/after checks.
"""

from __future__ import annotations

import hashlib
import re
import threading
from dataclasses import replace
from typing import Any

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict
from haystack.dataclasses import ChatMessage

from haystack_cfrag.common.text import content_words
from haystack_cfrag.common.validation import check_choice



def hashed_bow(text: str, dimension: int) -> list[float]:
    vec = np.zeros(dimension)
    for word in content_words(text):
        word = word[:-1] if word.endswith("s") and len(word) > 3 else word  # crude plural folding
        h = int.from_bytes(hashlib.md5(word.encode()).digest()[:4], "big")
        vec[h % dimension] += 1.0
    norm = np.linalg.norm(vec)
    return (vec / norm if norm else vec).tolist()


@component
class HashingTextEmbedder:
    def __init__(self, dimension: int = 512) -> None:
        self.dimension = dimension

    @component.output_types(embedding=list[float])
    def run(self, text: str) -> dict[str, Any]:
        return {"embedding": hashed_bow(text, self.dimension)}

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, dimension=self.dimension)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HashingTextEmbedder:
        return default_from_dict(cls, data)


@component
class HashingDocumentEmbedder:
    def __init__(self, dimension: int = 512) -> None:
        self.dimension = dimension
        self.calls = 0

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, Any]:
        self.calls += 1
        return {"documents": [replace(d, embedding=hashed_bow(d.content or "", self.dimension)) for d in documents]}

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, dimension=self.dimension)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HashingDocumentEmbedder:
        return default_from_dict(cls, data)


@component
class KeywordReader:
    def __init__(self, candidates: list[str], counterfactual_reply: str = "") -> None:
        self.candidates = candidates
        self.counterfactual_reply = counterfactual_reply
        self.prompts: list[str] = []

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage], generation_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
        prompt = messages[-1].text or ""
        self.prompts.append(prompt)
        if "counterfactual questions" in prompt or "with a DIFFERENT answer" in prompt:
            return {"replies": [ChatMessage.from_assistant(self.counterfactual_reply)]}
        evidence = prompt.split("Question:")[0]
        return {"replies": [ChatMessage.from_assistant(self.answer_from(evidence))]}

    def answer_from(self, evidence: str) -> str:
        def surname_hits(name: str) -> list[int]:
            return [m.start() for m in re.finditer(re.escape(name.split()[-1]), evidence)]

        counts = {c: surname_hits(c) for c in self.candidates}
        best = max(self.candidates, key=lambda c: (len(counts[c]), -(counts[c][0] if counts[c] else 1e9)))
        n = len(counts[best])
        surname = best.split()[-1]
        passages = re.split(r"\n(?=\[\d+\])", evidence)
        cited = [m.group(1) for p in passages if surname in p and (m := re.match(r"\s*\[(\d+)\]", p))]
        return (f"Answer: {best}\nRationale: {best} is mentioned {n} times in the evidence.\n"
                f"Key evidence: {', '.join(f'[{c}]' for c in cited) or 'none'}")

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, candidates=self.candidates, counterfactual_reply=self.counterfactual_reply)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> KeywordReader:
        return default_from_dict(cls, data)


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
