"""A chat generator wrapper that answers a repeated prompt from a cache (evaluation only).

With greedy decoding the same messages give the same reply, so systems that differ only after
generation (the λ sweep, the λ=0 ablation) and resumed runs reuse replies instead of paying for
them again. Every hit is counted with the seconds the original call took, so that reports can
show latency as if the call had been made.

Usage:
    >>> from haystack.dataclasses import ChatMessage
    >>> from haystack_cfrag.evaluation.llm_cache import CachingChatGenerator
    >>> from tests.fakes import KeywordReader
    >>> cached = CachingChatGenerator(generator=KeywordReader(candidates=["Ann", "Bob"]))
    >>> first = cached.run(messages=[ChatMessage.from_user("Question: Ann or Bob? Evidence: Ann")])
    >>> again = cached.run(messages=[ChatMessage.from_user("Question: Ann or Bob? Evidence: Ann")])
    >>> cached.hits, again["replies"][0].text == first["replies"][0].text
    (1, True)
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from pathlib import Path
from typing import Any

from haystack import component, default_to_dict
from haystack.dataclasses import ChatMessage

from haystack_cfrag.components._common import deserialize_component, serialize_component


@component
class CachingChatGenerator:
    """Wraps a chat generator; replies to identical (messages, generation_kwargs) come from the cache.

    :param generator: the generator to wrap (named so that usage counters do not count it twice).
    :param path: a JSONL file that keeps the cache across runs (appended, never rewritten).
    """

    def __init__(self, *, generator: Any, path: str | None = None) -> None:
        self.generator = generator
        self.path = path
        self.hits = 0
        self.hit_seconds = 0.0
        self._lock = threading.Lock()
        self._cache: dict[str, dict[str, Any]] = {}
        if path and Path(path).exists():
            with Path(path).open(encoding="utf-8") as fh:
                for line in fh:
                    if line.strip():
                        entry = json.loads(line)
                        self._cache[entry["key"]] = entry

    def warm_up(self) -> None:
        """Warm the wrapped generator."""
        if hasattr(self.generator, "warm_up"):
            self.generator.warm_up()

    def reset_counters(self) -> None:
        """Zero the hit counters (the evaluation does it before each question)."""
        with self._lock:
            self.hits, self.hit_seconds = 0, 0.0

    def _key(self, messages: list[ChatMessage], generation_kwargs: dict[str, Any] | None) -> str:
        payload = json.dumps(
            {"messages": [m.to_dict() for m in messages], "kwargs": generation_kwargs or {},
             "generator": serialize_component(self.generator)},
            sort_keys=True, default=str,
        )
        return hashlib.sha256(payload.encode()).hexdigest()

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage], generation_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
        """Reply from the cache, or call the wrapped generator and remember its replies."""
        key = self._key(messages, generation_kwargs)
        with self._lock:
            entry = self._cache.get(key)
            if entry is not None:
                self.hits += 1
                self.hit_seconds += entry["seconds"]
                return {"replies": [ChatMessage.from_dict(r) for r in entry["replies"]]}
        start = time.perf_counter()
        kwargs = {"generation_kwargs": generation_kwargs} if generation_kwargs else {}
        result = self.generator.run(messages=messages, **kwargs)
        entry = {"key": key, "seconds": time.perf_counter() - start,
                 "replies": [r.to_dict() for r in result["replies"]]}
        with self._lock:
            self._cache[key] = entry
            if self.path:
                with Path(self.path).open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(entry, default=str) + "\n")
        return result

    @component.output_types(replies=list[ChatMessage])
    async def run_async(
        self, messages: list[ChatMessage], generation_kwargs: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Same as `run` (the evaluation runs one question at a time)."""
        return self.run(messages=messages, generation_kwargs=generation_kwargs)

    def to_dict(self) -> dict[str, Any]:
        """Serialise with the wrapped generator."""
        return default_to_dict(self, generator=serialize_component(self.generator), path=self.path)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CachingChatGenerator:
        """Deserialise with the wrapped generator."""
        params = dict(data.get("init_parameters", {}))
        params["generator"] = deserialize_component(params["generator"])
        return cls(**params)
