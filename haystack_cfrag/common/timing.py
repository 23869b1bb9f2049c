"""Per-stage wall time and LLM usage of a pipeline run, through Haystack's tracing hooks.

`StageTimer` (a tracer) sums each component's wall time and records our LLM-call spans; `count_llm_usage` counts
the calls of given generators made in this context (each concurrent question its own); `timed_on` names the
machine that measured a second."""

from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import os
import platform
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from haystack import tracing
from haystack.tracing import Span, Tracer

from haystack_cfrag.common import tracing as lt

UNKNOWN_MACHINE = "unknown"
"""What seconds timed before replies and records said where (`timed_on`) are counted under."""


@functools.cache
def timed_on() -> str:
    """A short id of the machine as booted now (the boot id, host, processor and CPU count hashed): replies and
    records carry it, so the report can flag a ratio of seconds timed on two machines.

    >>> len(timed_on()), timed_on() == timed_on()
    (8, True)
    """
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="utf-8").strip()
    except OSError:
        boot = ""
    seed = "|".join([boot, platform.node(), platform.machine(), platform.processor(), str(os.cpu_count())])
    return hashlib.sha256(seed.encode()).hexdigest()[:8]


REPLAYED_META = "cfrag_replayed"
"""The reply meta key a replaying generator (the evaluation's reply cache) sets on a replayed reply:
{"seconds": the original call's seconds, "timed_on": the machine that timed them}."""


def replayed_call(meta: Any) -> tuple[str, float] | None:
    """(machine, seconds) of the original call when a reply's meta says it was replayed; else None.

    >>> replayed_call({REPLAYED_META: {"seconds": 9.5, "timed_on": "a1b2c3d4"}}), replayed_call({"usage": {}})
    (('a1b2c3d4', 9.5), None)
    """
    value = meta.get(REPLAYED_META) if isinstance(meta, dict) else None
    if not isinstance(value, dict):
        return None
    seconds, machine = value.get("seconds"), value.get("timed_on", UNKNOWN_MACHINE)
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 <= seconds < float("inf"):
        return None
    return (machine[:40] if isinstance(machine, str) and machine else UNKNOWN_MACHINE), float(seconds)


def by_machine(here: float, replayed: dict[str, float] | None = None) -> dict[str, float]:
    """Seconds measured on this machine (`timed_on`) plus replayed seconds by the machine that timed them.

    >>> by_machine(2.0, {UNKNOWN_MACHINE: 1.0, timed_on(): 0.5}) == {timed_on(): 2.5, UNKNOWN_MACHINE: 1.0}
    True
    """
    where = {timed_on(): here}
    for machine, seconds in (replayed or {}).items():
        where[machine] = where.get(machine, 0.0) + seconds
    return {machine: round(seconds, 3) for machine, seconds in where.items()}


class _NullSpan(Span):
    def set_tag(self, key: str, value: Any) -> None:  # noqa: D102
        pass


class _TagSpan(Span):
    """Keeps its tags (content tags only when content tracing is enabled, as any span)."""

    def __init__(self, tags: dict[str, Any] | None) -> None:
        self.tags = dict(tags or {})

    def set_tag(self, key: str, value: Any) -> None:  # noqa: D102
        self.tags[key] = value


@dataclass(frozen=True)
class LLMCallRecord:
    """One LLM call made inside a component, read from its span."""

    stage: str
    component: str
    index: int | None
    seconds: float
    prompt_tokens: int | None
    completion_tokens: int | None
    model: str | None
    error: str | None


class StageTimer(Tracer):
    """A Haystack tracer: each component's wall time (`seconds`) and our LLM calls (`llm_calls`)."""

    def __init__(self, progress: Callable[[str], None] | None = None) -> None:
        """:param progress: told what starts, e.g. "drafter" or "drafter: draft 2" (a status line)."""
        self.seconds: dict[str, float] = defaultdict(float)
        self.llm_calls: list[LLMCallRecord] = []
        self.progress = progress
        self._component = ""
        self._lock = threading.Lock()  # drafts end their spans on worker threads

    @contextlib.contextmanager
    def trace(
        self, operation_name: str, tags: dict[str, Any] | None = None, parent_span: Span | None = None
    ) -> Iterator[Span]:
        start = time.perf_counter()
        span: Span = _TagSpan(tags) if operation_name == lt.OPERATION else _NullSpan()
        if self.progress is not None:
            self._report(operation_name, tags or {})
        component = (_COMPONENT.set(str(tags.get("haystack.component.name")))
                     if operation_name == "haystack.component.run" and tags else None)
        try:
            yield span
        finally:
            if component is not None:
                _COMPONENT.reset(component)
            elapsed = time.perf_counter() - start
            if operation_name == "haystack.component.run" and tags:
                self.seconds[str(tags.get("haystack.component.name"))] += elapsed
            elif isinstance(span, _TagSpan):
                record = _llm_record(span.tags, elapsed)
                with self._lock:
                    self.llm_calls.append(record)

    def current_span(self) -> Span | None:
        return None

    def _report(self, operation_name: str, tags: dict[str, Any]) -> None:
        if operation_name == "haystack.component.run":
            self._component = message = str(tags.get("haystack.component.name"))
        elif operation_name == lt.OPERATION:  # inside the component that started last
            index = tags.get(lt.INDEX_TAG)
            stage = f"{tags.get(lt.STAGE_TAG) or 'LLM call'}{'' if index is None else f' {index}'}"
            message = f"{self._component}: {stage}" if self._component else stage
        else:
            return
        with contextlib.suppress(Exception):  # a status line never breaks a run
            self.progress(message)  # type: ignore[misc]

    @property
    def llm_seconds(self) -> dict[str, float]:
        """Seconds in LLM calls by stage (concurrent drafts each count theirs)."""
        out: dict[str, float] = defaultdict(float)
        with self._lock:
            for call in self.llm_calls:
                out[call.stage] += call.seconds
        return dict(out)

    def llm_usage(self) -> LLMUsage:
        """The recorded LLM calls summed as an LLMUsage."""
        usage = LLMUsage()
        with self._lock:
            for call in self.llm_calls:
                usage.calls += 1
                usage.seconds += call.seconds
                usage.prompt_tokens += call.prompt_tokens or 0
                usage.completion_tokens += call.completion_tokens or 0
        return usage


def _llm_record(tags: dict[str, Any], seconds: float) -> LLMCallRecord:
    def number(key: str) -> int | None:
        value = tags.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    return LLMCallRecord(stage=str(tags.get(lt.STAGE_TAG, "")), component=str(tags.get(lt.CALLER_TAG, "")),
                         index=number(lt.INDEX_TAG), seconds=seconds,
                         prompt_tokens=number(lt.INPUT_TOKENS_TAG),
                         completion_tokens=number(lt.OUTPUT_TOKENS_TAG), model=tags.get(lt.MODEL_TAG),
                         error=tags.get(lt.ERROR_TAG))


@contextlib.contextmanager
def timed_stages(progress: Callable[[str], None] | None = None) -> Iterator[StageTimer]:
    """A StageTimer enabled for the block (the previous tracer restored); `progress` is told what starts."""
    timer = StageTimer(progress)
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
    reported: int = 0  # replies that carried token counts (a server or the mock; 0: tokens unknown)
    scorings: int = 0  # the reader's support scorings (a forward pass over prompt + answer, no generation)
    scoring_tokens: int = 0  # tokens those scorings evaluated (the reused prefix not counted)
    scoring_seconds: float = 0.0
    cached_tokens: int = 0  # prompt tokens the model did not evaluate again (a shared prefix), as its replies say
    by_component: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per pipeline component ("" outside a `timed_stages` block): calls, tokens, scorings and the model."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def _entry(self, model: str | None = None) -> dict[str, Any]:
        entry = self.by_component.setdefault(_COMPONENT.get() or "", {
            "calls": 0, "prompt_tokens": 0, "cached_tokens": 0, "completion_tokens": 0,
            "scorings": 0, "scoring_tokens": 0, "scoring_answer_tokens": 0, "model": None})
        if model and not entry["model"]:
            entry["model"] = model
        return entry

    def as_dict(self) -> dict[str, Any]:
        """Plain dict for printing and JSON."""
        return {
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "seconds": round(self.seconds, 3),
            "reported": self.reported,
            "scorings": self.scorings,
            "scoring_tokens": self.scoring_tokens,
            "scoring_seconds": round(self.scoring_seconds, 3),
            "cached_tokens": self.cached_tokens,
            "by_component": {k: dict(v) for k, v in self.by_component.items()},
        }

    def add_call(self, seconds: float, replies: list[Any], model: str | None = None) -> None:
        """One finished call: its time and the tokens its replies report."""
        metas = [getattr(reply, "meta", None) or {} for reply in replies]
        prompt, completion = lt.token_counts(metas)
        cached = lt.cached_token_count(metas)
        with self._lock:
            self.seconds += seconds
            self.reported += sum(1 for meta in metas if meta.get("usage"))
            self.prompt_tokens += prompt or 0
            self.completion_tokens += completion or 0
            self.cached_tokens += cached
            entry = self._entry(model)
            entry["calls"] += 1
            entry["prompt_tokens"] += prompt or 0
            entry["cached_tokens"] += cached
            entry["completion_tokens"] += completion or 0


# the pipeline component running in this context (a `StageTimer` sets it): what a call is counted under
_COMPONENT: contextvars.ContextVar[str | None] = contextvars.ContextVar("cfrag_component", default=None)
# the usage of the question running in this context; worker threads of the drafter and the
# timed calls run in a copy of the context, so their calls land in the same LLMUsage
_CURRENT_USAGE: contextvars.ContextVar[LLMUsage | None] = contextvars.ContextVar("cfrag_llm_usage", default=None)


def watch_generators(*generators: Any) -> None:
    """Wrap each generator's `run` once, so that its calls (failed ones too) count into the current
    `count_llm_usage` block; outside one it runs as before."""
    for generator in {id(g): g for g in generators}.values():
        if getattr(generator, "_cfrag_usage_watched", False):
            continue
        generator.run = _counted(generator.run, model_name(generator))
        generator._cfrag_usage_watched = True


def model_name(generator: Any) -> str | None:
    """A generator's model as a record names it: the file name of a local model, the model id of a server's.

    >>> class G: model = "/cache/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    >>> model_name(G())
    'qwen2.5-coder-0.5b-instruct-q4_k_m.gguf'
    """
    inner = getattr(generator, "generator", None)  # a wrapper (the evaluation's reply cache): its generator's model
    model = (getattr(generator, "model", None) or getattr(generator, "model_path", None)
             or (model_name(inner) if inner is not None and inner is not generator else None))
    return Path(str(model)).name if model else None


def _counted(original: Any, model: str | None = None) -> Any:
    @functools.wraps(original)
    def counted(*args: Any, **kwargs: Any) -> dict[str, Any]:
        usage = _CURRENT_USAGE.get()
        if usage is None:
            return original(*args, **kwargs)
        with usage._lock:
            usage.calls += 1
        start = time.perf_counter()
        result = original(*args, **kwargs)
        usage.add_call(time.perf_counter() - start, (result or {}).get("replies") or [], model)
        return result

    return counted


def count_scoring(tokens_evaluated: int, seconds: float, answer_tokens: int | None = None) -> None:
    """Count one support scoring into the current `count_llm_usage` block (if any)."""
    usage = _CURRENT_USAGE.get()
    if usage is None:
        return
    with usage._lock:
        usage.scorings += 1
        usage.scoring_tokens += max(0, int(tokens_evaluated or 0))
        usage.scoring_seconds += max(0.0, float(seconds or 0.0))
        entry = usage._entry()
        entry["scorings"] += 1
        entry["scoring_tokens"] += max(0, int(tokens_evaluated or 0))
        entry["scoring_answer_tokens"] += max(0, int(answer_tokens or 0))


@contextlib.contextmanager
def count_llm_usage(*generators: Any) -> Iterator[LLMUsage]:
    """Count calls and tokens of these generators made in this context (this question) during the block
    (a context variable: concurrent blocks count their own)."""
    watch_generators(*generators)
    usage = LLMUsage()
    token = _CURRENT_USAGE.set(usage)
    try:
        yield usage
    finally:
        _CURRENT_USAGE.reset(token)
