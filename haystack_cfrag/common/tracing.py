"""A child span `OPERATION` for each LLM call made inside a component's run, through `haystack.tracing`.

Opened by `plumbing.call_with_timeout` as Haystack's `_trace_chat_generator_run` does: tags for the stage, draft
index, caller, model, token counts (OpenTelemetry GenAI names) and error type; prompt and reply only as content
tags; nothing at all with tracing disabled."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from haystack import tracing
from haystack.tracing import Span

OPERATION = "haystack_cfrag.llm_call"

STAGE_TAG = "haystack_cfrag.stage"  # "counterfactuals", "draft", "duel" or "synthesis"
INDEX_TAG = "haystack_cfrag.draft_index"  # drafts only: the draft's index
CALLER_TAG = "haystack_cfrag.component"  # the class of the component that made the call
ERROR_TAG = "haystack_cfrag.error"  # the exception's type when the call failed or was abandoned
NAME_TAG = "haystack.component.name"  # the generator's init parameter: "chat_generator" or "synthesizer"
TYPE_TAG = "haystack.component.type"  # the generator's class
MODEL_TAG = "gen_ai.request.model"
INPUT_TOKENS_TAG = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS_TAG = "gen_ai.usage.output_tokens"
INPUT_CONTENT_TAG = "haystack.component.input"  # content only: the generator's inputs (the prompt)
OUTPUT_CONTENT_TAG = "haystack.component.output"  # content only: the generator's result (the reply)


@dataclass(frozen=True)
class LLMCall:
    """What one LLM call is for: its span's stage, caller and draft index, and its parent span (None: the tracer's
    current one; a fan-out to worker threads passes the span it captured before)."""

    stage: str
    component: str
    generator_name: str = "chat_generator"
    index: int | None = None
    parent_span: Span | None = None


def current_span() -> Span | None:
    """The tracer's current span (None when tracing is disabled), to hand to calls made on other threads."""
    return tracing.tracer.current_span() if tracing.is_tracing_enabled() else None


class _Recorder:
    """Sets the reply's tags on the span (a no-op without a span)."""

    def __init__(self, span: Span | None, model_known: bool) -> None:
        self.span = span
        self.model_known = model_known

    def reply(self, result: Any) -> Any:
        """Tag the token counts (and, as content, the result); returns `result`."""
        if self.span is None:
            return result
        replies = result.get("replies") if isinstance(result, dict) else None
        metas = [getattr(r, "meta", None) or {} for r in replies or []]
        tokens_in, tokens_out = token_counts(metas)
        if tokens_in is not None:
            self.span.set_tag(INPUT_TOKENS_TAG, tokens_in)
        if tokens_out is not None:
            self.span.set_tag(OUTPUT_TOKENS_TAG, tokens_out)
        if not self.model_known:
            model = next((m["model"] for m in metas if isinstance(m.get("model"), str) and m["model"]), None)
            if model:
                self.span.set_tag(MODEL_TAG, model)
        self.span.set_content_tag(OUTPUT_CONTENT_TAG, result)
        return result


@contextlib.contextmanager
def llm_span(generator: Any, call: LLMCall | None, inputs: dict[str, Any]) -> Iterator[_Recorder]:
    """A child span around one LLM call (none when `call` is None or tracing is off); hand the result to the
    yielded recorder's `reply`. An exception is tagged with its type and re-raised."""
    if call is None or not tracing.is_tracing_enabled():
        yield _Recorder(None, True)
        return
    tags: dict[str, Any] = {STAGE_TAG: call.stage, CALLER_TAG: call.component, NAME_TAG: call.generator_name,
                            TYPE_TAG: type(generator).__name__}
    if call.index is not None:
        tags[INDEX_TAG] = call.index
    model = model_name(generator)
    if model:
        tags[MODEL_TAG] = model
    parent = call.parent_span or tracing.tracer.current_span()
    with tracing.tracer.trace(OPERATION, tags=tags, parent_span=parent) as span:
        span.set_content_tag(INPUT_CONTENT_TAG, inputs)
        try:
            yield _Recorder(span, model is not None)
        except BaseException as exc:
            span.set_tag(ERROR_TAG, type(exc).__name__)
            raise


def model_name(generator: Any, _depth: int = 0) -> str | None:
    """The generator's model: its `model`/`model_name`/`model_path`, a wrapped generator's, or its `to_dict()`'s.

    >>> class Gen:
    ...     model = "qwen2.5-1.5b"
    >>> class Cache:
    ...     generator = Gen()
    >>> model_name(Gen()), model_name(Cache()), model_name(object())
    ('qwen2.5-1.5b', 'qwen2.5-1.5b', None)
    """
    for attr in ("model", "model_name", "model_path"):
        value = getattr(generator, attr, None)
        if isinstance(value, str) and value:
            return value
    if _depth < 2:
        for attr in ("generator", "chat_generator"):
            inner = getattr(generator, attr, None)
            found = model_name(inner, _depth + 1) if inner is not None else None
            if found:
                return found
    to_dict = getattr(generator, "to_dict", None)
    if not callable(to_dict):
        return None
    try:
        data = to_dict()
    except Exception:  # noqa: BLE001  (a tag is not worth a failed call)
        return None
    return _find_model(data.get("init_parameters") if isinstance(data, dict) else None, 0)


def _find_model(params: Any, depth: int) -> str | None:
    if not isinstance(params, dict) or depth > 3:
        return None
    if isinstance(params.get("model"), str) and params["model"]:
        return params["model"]
    for value in params.values():
        inner = value.get("init_parameters", value) if isinstance(value, dict) else None
        found = _find_model(inner, depth + 1)
        if found:
            return found
    return None


def cached_token_count(metas: list[dict[str, Any]]) -> int:
    """Cached prompt tokens summed over the replies (OpenAI's `usage.prompt_tokens_details.cached_tokens`).

    >>> cached_token_count([{"usage": {"prompt_tokens": 9, "prompt_tokens_details": {"cached_tokens": 4}}}, {}])
    4
    """
    total = 0
    for meta in metas:
        usage = meta.get("usage")
        details = usage.get("prompt_tokens_details") if isinstance(usage, dict) else None
        value = details.get("cached_tokens") if isinstance(details, dict) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            total += value
    return total


def token_counts(metas: list[dict[str, Any]]) -> tuple[int | None, int | None]:
    """(prompt, completion) tokens summed over the replies' meta["usage"]; None where none reports them."""
    totals: list[int | None] = [None, None]
    for meta in metas:
        usage = meta.get("usage")
        if not isinstance(usage, dict):
            continue
        for k, keys in enumerate((("prompt_tokens", "input_tokens"), ("completion_tokens", "output_tokens"))):
            value = next((usage[key] for key in keys if isinstance(usage.get(key), int)), None)
            if value is not None and not isinstance(value, bool):
                totals[k] = (totals[k] or 0) + value
    return totals[0], totals[1]
