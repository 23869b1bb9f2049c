"""Per-stage wall time and LLM usage of a pipeline run, through Haystack's tracing hooks."""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from haystack import tracing
from haystack.tracing import Span, Tracer


class _NullSpan(Span):
    def set_tag(self, key: str, value: Any) -> None:  # noqa: D102
        pass


class StageTimer(Tracer):
    """A Haystack tracer that sums the wall time of each component run, by component name."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    @contextlib.contextmanager
    def trace(
        self, operation_name: str, tags: dict[str, Any] | None = None, parent_span: Span | None = None
    ) -> Iterator[Span]:
        start = time.perf_counter()
        try:
            yield _NullSpan()
        finally:
            if operation_name == "haystack.component.run" and tags:
                self.seconds[str(tags.get("haystack.component.name"))] += time.perf_counter() - start

    def current_span(self) -> Span | None:
        return None


@contextlib.contextmanager
def timed_stages() -> Iterator[StageTimer]:
    """Enable a StageTimer for the duration of the block (the previous tracer is restored)."""
    timer = StageTimer()
    previous = tracing.tracer.actual_tracer
    tracing.enable_tracing(timer)
    try:
        yield timer
    finally:
        if previous is None:
            tracing.disable_tracing()
        else:
            tracing.enable_tracing(previous)


@dataclass
class LLMUsage:
    """Calls and tokens of chat generators, as reported in their replies' meta["usage"]."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def as_dict(self) -> dict[str, Any]:
        """Plain dict for printing and JSON."""
        return {
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "seconds": round(self.seconds, 3),
        }


@contextlib.contextmanager
def count_llm_usage(*generators: Any) -> Iterator[LLMUsage]:
    """Count calls and tokens of generator instances during the block, summed into one LLMUsage.

    Each instance's `run` is wrapped for the block and restored after it.
    """
    usage = LLMUsage()

    def wrap(original: Any) -> Any:
        @functools.wraps(original)
        def counted(*args: Any, **kwargs: Any) -> dict[str, Any]:
            start = time.perf_counter()
            result = original(*args, **kwargs)
            elapsed = time.perf_counter() - start
            with usage._lock:
                usage.calls += 1
                usage.seconds += elapsed
                for reply in result.get("replies") or []:
                    meta_usage = (reply.meta or {}).get("usage") or {}
                    usage.prompt_tokens += int(meta_usage.get("prompt_tokens") or 0)
                    usage.completion_tokens += int(meta_usage.get("completion_tokens") or 0)
            return result

        return counted

    unique = list({id(g): g for g in generators}.values())
    for generator in unique:
        generator.run = wrap(generator.run)
    try:
        yield usage
    finally:
        for generator in unique:
            del generator.run  # back to the class method
