"""A chat generator wrapper that answers a repeated prompt (greedy decoding) from a cache (evaluation only).

Each hit counts the original call's seconds and machine; a replayed reply's meta says so (`timing.REPLAYED_META`).

Usage:
    >>> from haystack.dataclasses import ChatMessage
    >>> from haystack_cfrag.evaluation.llm_cache import CachingChatGenerator
    >>> from haystack_cfrag.testing.fakes import KeywordReader
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
from pathlib import Path, PurePath
from typing import Any

from haystack import component, default_to_dict
from haystack.dataclasses import ChatMessage

from haystack_cfrag.common.serialization import deserialize_component, serialize_component
from haystack_cfrag.common.timing import REPLAYED_META, UNKNOWN_MACHINE, timed_on


class _CacheState:
    """Entries and hit counters of one cache file."""

    def __init__(self, path: str | None) -> None:
        self.lock = threading.Lock()
        self.hits = 0
        self.hit_seconds_by: dict[str, float] = {}  # replayed seconds by the machine that timed them
        self.entries: dict[str, dict[str, Any]] = {}
        if path and Path(path).exists():
            with Path(path).open(encoding="utf-8") as fh:
                for line in fh:
                    try:
                        entry = json.loads(line)
                    except json.JSONDecodeError:
                        continue  # a line cut by an interrupted run
                    self.entries[entry["key"]] = entry


MACHINE_LOCAL = ("model", "model_path", "n_threads", "n_threads_batch", "verbose", "main_gpu", "use_mmap")
"""Generator settings that locate a model or use a machine, and do not shape a greedy reply."""


NEWER_SETTINGS = ("use_mmap",)
"""Settings a generator's serialisation gained later: left out of the full-serialisation key (older replies found)."""


def _without(params: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """`params` without `keys`, at any depth."""
    return {k: _without(v, keys) if isinstance(v, dict) else v for k, v in params.items() if k not in keys}


def without_newer(described: dict[str, Any]) -> dict[str, Any]:
    """A serialised generator without `NEWER_SETTINGS`, at any depth of its init parameters.

    >>> without_newer({"type": "Gen", "init_parameters": {"model_kwargs": {"use_mmap": False, "seed": 0}}})
    {'type': 'Gen', 'init_parameters': {'model_kwargs': {'seed': 0}}}
    """
    return {**described, "init_parameters": _without(described.get("init_parameters") or {}, NEWER_SETTINGS)}


def portable(described: dict[str, Any] | None, model_id: str) -> dict[str, Any]:
    """A serialised generator without `MACHINE_LOCAL` and the class's module, its model named by `model_id`.

    >>> portable({"type": "pkg.adapters.Gen", "init_parameters": {"model": "models/m.gguf", "n_ctx": 4096,
    ...     "model_kwargs": {"n_threads": 2, "seed": 0}, "generation_kwargs": {"temperature": 0.0}}}, "sha:1")
    {'type': 'Gen', 'model_id': 'sha:1', 'init_parameters': {'n_ctx': 4096, 'model_kwargs': {'seed': 0}, \
'generation_kwargs': {'temperature': 0.0}}}
    """
    described = described or {}
    return {"type": str(described.get("type", "")).rsplit(".", 1)[-1], "model_id": model_id,
            "init_parameters": _without(described.get("init_parameters") or {}, MACHINE_LOCAL)}


def stored_reply(message: ChatMessage) -> dict[str, Any]:
    """A reply as the cache file keeps it: its meta's `model` cut to the file name (no machine's path).

    >>> stored_reply(ChatMessage.from_assistant("Bale", meta={"model": "/opt/models/m.gguf"}))["meta"]["model"]
    'm.gguf'
    """
    data = message.to_dict()
    model = data.get("meta", {}).get("model")
    if isinstance(model, str) and ("/" in model or "\\" in model):
        data["meta"] = {**data["meta"], "model": PurePath(model.replace("\\", "/")).name}
    return data


def _with_meta(message: ChatMessage, extra: dict[str, Any]) -> ChatMessage:
    """A copy of `message` with `extra` added to its meta (stored replies may be in an older serialised format)."""
    data = message.to_dict()
    data["meta"] = {**message.meta, **extra}
    return ChatMessage.from_dict(data)


_STATES: dict[str, _CacheState] = {}
_STATES_LOCK = threading.Lock()


@component
class CachingChatGenerator:
    """Wraps a chat generator; replies to identical (messages, generation_kwargs) come from the cache.

    :param generator: the generator to wrap (named so that usage counters do not count it twice).
    :param path: a JSONL file that keeps the cache across runs (appended, never rewritten).
    :param model_id: a fingerprint of the model (its sha256): replies are then keyed by `portable`, so a run
        folder replays on another machine; replies under the full-serialisation key are found too.
    """

    def __init__(self, *, generator: Any, path: str | None = None, model_id: str | None = None) -> None:
        if model_id is not None and (not isinstance(model_id, str) or not model_id):
            raise ValueError(f"'model_id' must be a non-empty string or None, got {model_id!r}.")
        self.generator = generator
        self.path = path
        self.model_id = model_id
        # instances with the same file share one cache and one set of counters: a pipeline
        # built from YAML holds its own copy of the generator, and its hits must count too
        key = str(Path(path).resolve()) if path else f"instance-{id(self)}"
        with _STATES_LOCK:
            if key not in _STATES:
                _STATES[key] = _CacheState(path)
            self._state = _STATES[key]

    @property
    def hits(self) -> int:
        """Calls answered from the cache since the last `reset_counters`."""
        return self._state.hits

    @property
    def hit_seconds(self) -> float:
        """Seconds the cached calls took when they were made."""
        with self._state.lock:
            return sum(self._state.hit_seconds_by.values())

    @property
    def hit_seconds_by_machine(self) -> dict[str, float]:
        """`hit_seconds` by the machine that timed them (`timing.timed_on`; replies stored before it: "unknown")."""
        with self._state.lock:
            return dict(self._state.hit_seconds_by)

    def warm_up(self) -> None:
        """Warm the wrapped generator."""
        if hasattr(self.generator, "warm_up"):
            self.generator.warm_up()

    def support_backend(self) -> Any:
        """The wrapped generator's support backend (`haystack_cfrag.support`): scorings read the model, not a cache."""
        from haystack_cfrag.support.backends import backend_for  # noqa: PLC0415

        return backend_for(self.generator)

    def reset_counters(self) -> None:
        """Zero the hit counters (the evaluation does it before each question)."""
        with self._state.lock:
            self._state.hits, self._state.hit_seconds_by = 0, {}

    def _keys(self, messages: list[ChatMessage], generation_kwargs: dict[str, Any] | None) -> list[str]:
        """The key a new reply is stored under, then the older key it may have been stored under."""
        described = without_newer(serialize_component(self.generator))
        generators = [described] if self.model_id is None else [portable(described, self.model_id), described]
        call = {"messages": [m.to_dict() for m in messages], "kwargs": generation_kwargs or {}}
        return [hashlib.sha256(json.dumps({**call, "generator": g}, sort_keys=True, default=str).encode()).hexdigest()
                for g in generators]

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage], generation_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
        """Reply from the cache, or call the wrapped generator and remember its replies."""
        keys = self._keys(messages, generation_kwargs)
        key = keys[0]
        state = self._state
        with state.lock:
            entry = next((state.entries[k] for k in keys if k in state.entries), None)
            if entry is not None:
                state.hits += 1
                machine = entry.get("timed_on", UNKNOWN_MACHINE)
                state.hit_seconds_by[machine] = state.hit_seconds_by.get(machine, 0.0) + entry["seconds"]
                replayed = {REPLAYED_META: {"seconds": entry["seconds"], "timed_on": machine}}
                return {"replies": [_with_meta(ChatMessage.from_dict(r), replayed) for r in entry["replies"]]}
        start = time.perf_counter()
        kwargs = {"generation_kwargs": generation_kwargs} if generation_kwargs else {}
        result = self.generator.run(messages=messages, **kwargs)
        entry = {"key": key, "seconds": time.perf_counter() - start, "timed_on": timed_on(),
                 "replies": [stored_reply(r) for r in result["replies"]]}
        with state.lock:
            state.entries[key] = entry
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
        return default_to_dict(self, generator=serialize_component(self.generator), path=self.path,
                               model_id=self.model_id)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CachingChatGenerator:
        """Deserialise with the wrapped generator."""
        params = dict(data.get("init_parameters", {}))
        params["generator"] = deserialize_component(params["generator"])
        return cls(**params)
