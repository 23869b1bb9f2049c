"""Deterministic fake components for unit tests (no models, no network).

- HashingTextEmbedder / HashingDocumentEmbedder: bag-of-words hashed into a fixed dimension,
  so that texts sharing words are similar (unlike hash-of-the-whole-text mock embeddings).
- KeywordReader: a chat generator that answers counterfactual prompts with a fixed JSON and
  draft/standard prompts with the candidate most mentioned in its evidence (ties: the one
  mentioned first) — a caricature of a reader that is outvoted by volume.

The failing and fault-injecting fakes only tests use are in `tests/fakes.py`."""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace
from typing import Any

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict
from haystack.dataclasses import ChatMessage

from haystack_cfrag.common.text import content_words


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
