"""The Hayhooks pipeline wrapper of CF-RAG: `/<pipeline>/run`, OpenAI chat and responses, and an MCP tool.

One subclass per served pipeline shares one `CFRAGService`; `run_api`'s signature is generated from the
pipeline's request parameters. Values are checked once (`serving.requests`): a 422 naming the field, a failure
a 503, never a 500."""

from __future__ import annotations

import inspect
import time
import uuid
from collections.abc import Generator
from typing import Annotated, Any

from fastapi import HTTPException
from hayhooks import BasePipelineWrapper
from pydantic import WithJsonSchema

from haystack_cfrag.common.parameters import Parameter
from haystack_cfrag.registry import REGISTRY
from haystack_cfrag.serving.requests import (
    MAX_QUESTION_CHARS,
    RequestError,
    check_chat_request,
    check_responses_request,
    check_run_request,
)
from haystack_cfrag.serving.service import PipelineFailedError, get_service

NO_ANSWER = "I could not find an answer in the documents."


class CFRAGPipelineWrapper(BasePipelineWrapper):
    """Serves one registered pipeline (`pipeline_name`) through the shared service; `request_parameters` and
    `description` come from its registry entry unless set."""

    pipeline_name = "cf_rag"
    request_parameters: tuple[str, ...]  # set by `_configure` from the registry unless a subclass sets it
    request_table: dict[str, Parameter] = {}
    description: str

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _configure(cls)

    def setup(self) -> None:
        """Load the models and store (once per process) and build this pipeline."""
        self.service = get_service()
        self.pipeline = self.service.pipeline(self.pipeline_name)

    def run_chat_completion(self, model: str, messages: list[dict], body: dict) -> Any:
        """OpenAI-compatible chat: the last user message is the question, the reply is the answer (streamed as one
        chunk, then the usage chunk when asked)."""
        from fastapi_openai_compat import ChatCompletion  # noqa: PLC0415

        result = self._answer(lambda: check_chat_request(body, messages, self.request_table))
        usage = result["usage"]
        reply_id, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())
        common = {"id": reply_id, "created": created, "model": model}
        text = reply_text(result)
        if not body.get("stream"):
            choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            return ChatCompletion(object="chat.completion", choices=[choice], usage=_chat_usage(usage), **common)
        with_usage = bool((body.get("stream_options") or {}).get("include_usage"))

        def chunks() -> Generator:
            for content, finish in ((text, None), (None, "stop")):
                delta = {"role": "assistant", "content": content}
                choice = {"index": 0, "delta": delta, "finish_reason": finish}
                yield ChatCompletion(object="chat.completion.chunk", choices=[choice], **common)
            if with_usage:
                yield ChatCompletion(object="chat.completion.chunk", choices=[], usage=_chat_usage(usage), **common)

        return chunks()

    def run_response(self, model: str, input_items: list[dict], body: dict) -> Any:
        """OpenAI Responses API: the last user input item is the question, the output text the answer."""
        from fastapi_openai_compat.responses.models import Response  # noqa: PLC0415
        from fastapi_openai_compat.responses.streaming import response_from_text  # noqa: PLC0415

        result = self._answer(lambda: check_responses_request(body, input_items, self.request_table))
        text = reply_text(result)
        if body.get("stream"):
            return (chunk for chunk in [text])  # one chunk: the router builds the named events
        response: Response = response_from_text(text, f"resp_{uuid.uuid4().hex}", model)
        usage = result["usage"]
        if usage:
            response.usage = {"input_tokens": usage["prompt_tokens"], "output_tokens": usage["completion_tokens"],
                              "total_tokens": usage["total_tokens"]}
        return response

    def answer_body(self, body: Any) -> dict[str, Any]:
        """A `/run` body's or an MCP call's answer: its one check (`requests.check_run_request`), then
        the service's."""
        return self._answer(lambda: check_run_request(body, self.request_table))

    def _answer(self, check: Any) -> dict[str, Any]:
        try:
            question, params = check()  # the request's one check (`requests`)
            return self.service.answer_checked(self.pipeline_name, question, params)
        except RequestError as exc:
            raise HTTPException(status_code=422, detail=str(exc)) from exc
        except PipelineFailedError as exc:
            raise HTTPException(status_code=503, detail=str(exc)) from exc


def reply_text(result: dict[str, Any]) -> str:
    """The answer as a chat reply: a fixed sentence for no answer, the reasons after a degraded one."""
    text = result["answer"] or NO_ANSWER
    if result["degraded"]:
        text += "\n\n(degraded: " + "; ".join(result["warnings"]) + ")"
    return text


def _chat_usage(usage: dict[str, int] | None) -> dict[str, int] | None:
    if not usage:
        return None
    return {k: usage[k] for k in ("prompt_tokens", "completion_tokens", "total_tokens")}


_UNSET: Any = object()


def _configure(cls: type[CFRAGPipelineWrapper]) -> None:
    """The wrapper's request parameters, their table and description from the registry; then its `run_api`."""
    entry = REGISTRY.get(cls.pipeline_name)
    if entry is not None:  # a registered pipeline: its request parameters and description are the registry's
        if "request_parameters" not in cls.__dict__:
            cls.request_parameters = entry.request_parameters
        if "description" not in cls.__dict__:
            cls.description = entry.api_description or entry.description
        cls.request_table = {name: entry.parameters[name] for name in cls.request_parameters}
    else:  # a pipeline file of your own behind a wrapper: what the subclass says, no parameters otherwise
        cls.request_parameters = cls.__dict__.get("request_parameters", ())
        cls.description = cls.__dict__.get("description", f"Answer a question with {cls.pipeline_name}.")
        cls.request_table = {}
    _install_run_api(cls)


def _install_run_api(cls: type[CFRAGPipelineWrapper]) -> None:
    """Give `cls` a `run_api` whose signature (what Hayhooks reads) lists its request fields as JSON Schemas; it
    takes `**params`, so `requests.check_run_request` refuses an unknown field by name."""
    if "run_api" in cls.__dict__:
        return

    def run_api(self: CFRAGPipelineWrapper, question: Any = _UNSET, **params: Any) -> dict:
        return self.answer_body(params if question is _UNSET else {"question": question, **params})

    run_api.__doc__ = "\n".join([
        cls.description, "",
        f":param question: the question (1 to {MAX_QUESTION_CHARS} characters of text).",
        *(f":param {name}: {p.help}: {p.describe()}; default: the pipeline file's."
          for name, p in cls.request_table.items()),
        ":returns: the answer, whether it is degraded, the ranked alternatives, the trace and the LLM usage.",
    ])  # Hayhooks reads the descriptions of the request model and the MCP tool from it
    run_api.__signature__ = _request_signature(cls.request_table)  # type: ignore[attr-defined]
    cls.run_api = run_api  # type: ignore[method-assign]


def _request_signature(parameters: dict[str, Parameter]) -> inspect.Signature:
    question = {"type": "string", "minLength": 1}
    fields = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
              inspect.Parameter("question", inspect.Parameter.KEYWORD_ONLY,
                                annotation=Annotated[Any, WithJsonSchema(question)])]
    for name, p in parameters.items():
        fields.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None,
                                        annotation=Annotated[Any, WithJsonSchema(p.json_schema())]))
    return inspect.Signature(fields, return_annotation=dict)


_configure(CFRAGPipelineWrapper)
