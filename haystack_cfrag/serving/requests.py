"""The one validation of a served request (REST, OpenAI chat/responses, MCP): `RequestError` (422), one sentence
naming the field.

A request is checked once where it enters, by the pipeline's pydantic `request_model` (made from its family's
table); the guard checks only what Hayhooks' parsing would lose. The question is cleaned only when its raw text
is bounded; bodies are strict JSON (no NaN, ±Infinity, overflowing numbers or lone surrogates)."""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, create_model

from haystack_cfrag.common.parameters import Parameter, ParameterError, check_parameters
from haystack_cfrag.common.text import clean_query

MAX_QUESTION_CHARS = 2000
MAX_RAW_QUESTION_CHARS = 4 * MAX_QUESTION_CHARS
"""The longest question text accepted before cleaning (room for spaces and control characters)."""
# OpenAI's request fields: accepted and ignored (CF-RAG decodes greedily, answers once)
OPENAI_CHAT_FIELDS = frozenset(
    "model messages stream stream_options temperature top_p n stop max_tokens max_completion_tokens "
    "presence_penalty frequency_penalty logit_bias logprobs top_logprobs user seed response_format tools "
    "tool_choice parallel_tool_calls functions function_call metadata store service_tier reasoning_effort "
    "modalities audio prediction web_search_options prompt_cache_key safety_identifier verbosity".split()
)
OPENAI_RESPONSES_FIELDS = frozenset(
    "model input instructions stream stream_options temperature top_p max_output_tokens max_tool_calls "
    "previous_response_id conversation parallel_tool_calls text reasoning store service_tier metadata tools "
    "tool_choice top_logprobs truncation include background prompt prompt_cache_key safety_identifier user".split()
)


class RequestError(ValueError):
    """A request the service refuses (the caller's mistake): HTTP 422."""


def check_question(value: Any, field: str = "question") -> str:
    """The cleaned question (raw text at most `MAX_RAW_QUESTION_CHARS`); RequestError unless 1 to 2000 characters."""
    if not isinstance(value, str):
        raise RequestError(f"'{field}' must be a string, got {type(value).__name__}.")
    if len(value) > MAX_RAW_QUESTION_CHARS:
        raise RequestError(f"'{field}' is longer than {MAX_RAW_QUESTION_CHARS} characters before cleaning "
                           f"({len(value)}); at most {MAX_QUESTION_CHARS} characters of text are answered.")
    text = clean_query(value)
    if not text:
        raise RequestError(f"'{field}' is empty (nothing but white space or control characters).")
    if len(text) > MAX_QUESTION_CHARS:
        raise RequestError(f"'{field}' is longer than {MAX_QUESTION_CHARS} characters ({len(text)}).")
    return text


RequestTable = Mapping[str, Parameter]
"""The parameters a request may set, with their ranges (`registry.ShippedPipeline.request_table`)."""


class RunRequest(BaseModel):
    """A `/<pipeline>/run` body or an MCP tool call's arguments: the question and the pipeline's request
    parameters, nothing else (each served pipeline has its subclass: `request_model`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    question: Annotated[str, BeforeValidator(check_question)]

    def params(self) -> dict[str, Any]:
        """The parameters that are set (None: the pipeline file's value)."""
        return {k: v for k, v in self if k != "question" and v is not None}


def request_model(parameters: RequestTable) -> type[RunRequest]:
    """The request model of a pipeline, made once from its table (`Parameter.check`: the ranges' one home).

    >>> from haystack_cfrag.registry import REGISTRY
    >>> request_model(REGISTRY["cer_auto"].request_table)(question=" Who? ", gate_threshold=1).params()
    {'gate_threshold': 1.0}
    """
    return _model(tuple(dict(parameters).values()))


@functools.cache
def _model(parameters: tuple[Parameter, ...]) -> type[RunRequest]:
    fields: dict[str, Any] = {p.name: (Annotated[Any, BeforeValidator(_checked(p))], None)
                              for p in parameters}
    return create_model("RunRequest", __base__=RunRequest, **fields)


def _checked(parameter: Parameter) -> Callable[[Any], Any]:
    return lambda value: None if value is None else parameter.check(value)


def check_params(values: Mapping[str, Any], parameters: RequestTable) -> dict[str, Any]:
    """The per-request parameters that are set, checked against `parameters` (any other name is refused)."""
    try:
        return check_parameters(values, dict(parameters))
    except ParameterError as exc:
        raise RequestError(str(exc)) from exc


def check_run_request(body: Any, parameters: RequestTable) -> tuple[str, dict[str, Any]]:
    """(question, parameters) of a `/<pipeline>/run` body or an MCP tool call's arguments: the one check of
    either, by the pipeline's request model (`request_model`)."""
    model = request_model(parameters)
    try:
        request = model.model_validate(_object(body))
    except ValidationError as exc:
        errors = exc.errors()
        unknown = [str(e["loc"][0]) for e in errors if e["type"] == "extra_forbidden"]
        if unknown:
            known = ", ".join(model.model_fields)
            raise RequestError(f"Unknown field(s) {_listed(unknown)} (known: {known}).") from None
        first = errors[0]
        if first["type"] == "missing":
            raise RequestError(f"'{first['loc'][0]}' is required.") from None
        raise RequestError(str((first.get("ctx") or {}).get("error") or first["msg"])) from None
    return request.question, request.params()


def check_fields(body: Any, parameters: RequestTable) -> None:
    """Only the field names of a `/<pipeline>/run` body, as sent: what the guard checks, since Hayhooks' own
    model drops an unknown field (and refuses a missing question in its own words) before the wrapper's
    `check_run_request` could refuse it."""
    fields = _object(body)
    _known(fields, ("question", *parameters))
    if "question" not in fields:
        raise RequestError("'question' is required.")


def check_pipeline_inputs(body: Any, inputs: Iterable[str]) -> dict[str, Any]:
    """The body of a YAML pipeline's `/run`: only its declared inputs; a `query` is checked as a question."""
    fields = _object(body)
    inputs = tuple(inputs)
    _known(fields, inputs)
    if "query" in inputs:
        fields = {**fields, "query": check_question(fields.get("query"), "query")}
    return fields


def check_chat_request(body: Mapping[str, Any], messages: Any,
                       parameters: RequestTable) -> tuple[str, dict[str, Any]]:
    """(question, parameters) of an OpenAI chat completion body: the last user message is the question."""
    return _check_openai(body, OPENAI_CHAT_FIELDS, dict(parameters), messages, "messages")


def check_responses_request(body: Mapping[str, Any], input_items: Any,
                            parameters: RequestTable) -> tuple[str, dict[str, Any]]:
    """(question, parameters) of an OpenAI Responses body: the last user input item is the question."""
    return _check_openai(body, OPENAI_RESPONSES_FIELDS, dict(parameters), input_items, "input")


def _check_openai(body: Mapping[str, Any], fields: frozenset[str], parameters: RequestTable, messages: Any,
                  field: str) -> tuple[str, dict[str, Any]]:
    unknown = [name for name in body if name not in fields and name not in parameters]
    if unknown:
        raise RequestError(f"Unknown field(s) {_listed(unknown)} (known: OpenAI's request fields"
                           + (f" and {', '.join(parameters)})." if parameters else ")."))
    check_openai_fields(body)
    return question_from_messages(messages, field), check_params({k: body[k] for k in parameters if k in body},
                                                                 parameters)


def check_openai_fields(body: Any) -> None:
    """The OpenAI fields CF-RAG reads, as sent (the guard runs it on the raw body: Hayhooks' model would
    turn `"stream": "yes"` into true): `stream` a boolean or null, `stream_options` an object."""
    if not isinstance(body, dict):
        return  # the route's own model refuses it
    if not isinstance(body.get("stream_options") or {}, dict):
        raise RequestError("'stream_options' must be an object.")
    if body.get("stream") is not None and not isinstance(body["stream"], bool):
        raise RequestError(f"'stream' must be true or false, got {type(body['stream']).__name__}.")


def question_from_messages(messages: Any, field: str = "messages") -> str:
    """The cleaned text of the last user message of an OpenAI message (or input item) list."""
    if not isinstance(messages, list) or not messages:
        raise RequestError(f"'{field}' must be a non-empty list.")
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):  # parts: {"type": "text" | "input_text", "text": "…"}
                texts = [p.get("text", "") for p in content
                         if isinstance(p, dict) and p.get("type") in ("text", "input_text")]
                if not all(isinstance(text, str) for text in texts):  # never a dict's str()
                    raise RequestError(f"'{field}[-1].content[].text' must be a string.")
                content = " ".join(texts)
            return check_question(content, f"{field}[-1].content")
    raise RequestError(f"'{field}' holds no user message.")


# ---------------------------------------------------------------- strict JSON
class _NonFinite(str):
    """NaN, Infinity or an overflowing number, kept as its text until the check names its field."""


def _parse_float(text: str) -> float | _NonFinite:
    value = float(text)
    return value if math.isfinite(value) else _NonFinite(text)


def load_json(raw: bytes) -> Any:
    """A JSON body, strictly: RequestError, naming the field, for invalid JSON, non-finite numbers, lone surrogates."""
    try:
        data = json.loads(raw, parse_constant=_NonFinite, parse_float=_parse_float)
    except RecursionError as exc:
        raise RequestError("The body is not valid JSON: it is nested too deeply.") from exc
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, an integer with too many digits
        raise RequestError(f"The body is not valid JSON: {str(exc)[:200]}.") from exc
    problem = _refused_value(data)
    if problem is not None:
        raise RequestError(problem)
    return data


_SURROGATE = re.compile("[\ud800-\udfff]")


_Where = tuple[Any, str | int]
"""(parent node or None, key or index): a path kept as parent pointers, shared by siblings."""
MAX_PATH_CHARS = 200


def _refused_value(data: Any) -> str | None:
    """The first non-finite number or string with a lone surrogate in a parsed body, as a message (linear)."""
    stack: list[tuple[Any, _Where | None]] = [(data, None)]
    while stack:
        value, where = stack.pop()
        if isinstance(value, _NonFinite):
            return f"'{_path(where)}' must be a finite number, got {value[:40]}."
        if isinstance(value, str):
            if _SURROGATE.search(value):
                return f"'{_path(where)}' is not Unicode text: it holds a lone surrogate."
        elif isinstance(value, dict):
            for k, v in value.items():
                if _SURROGATE.search(k):
                    return f"'{_path(where)}' has a key that is not Unicode text (a lone surrogate)."
                stack.append((v, (where, k)))
        elif isinstance(value, list):
            stack.extend((v, (where, i)) for i, v in enumerate(value))
    return None


def _path(where: _Where | None) -> str:
    """`a.b[3].c` of a node (`body` for the root), at most MAX_PATH_CHARS characters."""
    parts: list[str] = []
    while where is not None:
        where, key = where
        parts.append(f"[{key}]" if isinstance(key, int) else f".{key[:MAX_PATH_CHARS]}")
    text = "".join(reversed(parts)).removeprefix(".") or "body"
    return text if len(text) <= MAX_PATH_CHARS else text[:MAX_PATH_CHARS] + "…"


# ---------------------------------------------------------------- helpers
def _object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise RequestError(f"The body must be a JSON object, got {type(body).__name__}.")
    return body


def _known(fields: Mapping[str, Any], known: tuple[str, ...]) -> None:
    unknown = [name for name in fields if name not in known]
    if unknown:
        raise RequestError(f"Unknown field(s) {_listed(unknown)} (known: {', '.join(known)}).")


def _listed(names: list[str]) -> str:
    return ", ".join(repr(n[:40]) for n in names[:5]) + (" …" if len(names) > 5 else "")
