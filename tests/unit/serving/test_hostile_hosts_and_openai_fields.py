"""Issue #43, item 7, the served part: Host names, OpenAI fields, YAML pipelines on chat/responses and MCP.

Before: `Host: [::1]anything` passed as `::1`; `"stream": "yes"` streamed; a content part whose
`text` was an object was answered as its `str()`; a YAML pipeline named as a chat `model` got
Hayhooks' 501; an MCP call of a YAML pipeline failed with "not JSON serializable".
"""

import asyncio
import json

import pytest

pytest.importorskip("starlette")

from haystack import Document  # noqa: E402
from haystack.dataclasses import ChatMessage  # noqa: E402
from starlette.applications import Starlette  # noqa: E402
from starlette.responses import JSONResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from haystack_cfrag.registry import REGISTRY  # noqa: E402
from haystack_cfrag.serving.app import check_openai_model, json_safe, json_safe_results  # noqa: E402
from haystack_cfrag.serving.middleware import LOOPBACK_HOSTS, Guard  # noqa: E402
from haystack_cfrag.serving.requests import RequestError, check_chat_request, check_responses_request  # noqa: E402

TABLE = REGISTRY["cf_rag"].request_table
MESSAGES = [{"role": "user", "content": "Who?"}]


async def ok(_request):
    return JSONResponse({"ok": True})


@pytest.mark.parametrize(("host", "status"), [
    ("[::1]:8080", 200), ("[::1]", 200), ("localhost:1416", 200),
    ("[::1]anything", 400), ("[::1]:80x", 400), ("[::1]evil.example", 400), ("localhost:80:90", 400),
    ("localhost:", 400), ("127.0.0.1:port", 400), ("[127.0.0.1.evil.example]", 400),
])
def test_a_host_header_is_a_name_and_at_most_a_port(host, status):
    app = Guard(Starlette(routes=[Route("/status", ok)]), allowed_hosts=LOOPBACK_HOSTS)
    assert TestClient(app).get("/status", headers={"Host": host}).status_code == status


@pytest.mark.parametrize("stream", ["yes", 1, "true", [], {}])
def test_stream_must_be_a_boolean(stream):
    for check, field in ((check_chat_request, MESSAGES), (check_responses_request, MESSAGES)):
        with pytest.raises(RequestError, match="'stream' must be true or false"):
            check({"model": "cf_rag", "stream": stream}, field, TABLE)


@pytest.mark.parametrize("stream", [True, False, None])
def test_a_boolean_stream_or_none_is_accepted(stream):
    assert check_chat_request({"model": "cf_rag", "stream": stream}, MESSAGES, TABLE)[0] == "Who?"


@pytest.mark.parametrize("text", [{"question": "Who?"}, ["Who?"], 7, None])
def test_a_content_parts_text_must_be_a_string(text):
    messages = [{"role": "user", "content": [{"type": "text", "text": "Who is"}, {"type": "text", "text": text}]}]
    with pytest.raises(RequestError, match=r"content\[\]\.text' must be a string"):
        check_chat_request({"model": "cf_rag"}, messages, TABLE)
    parts = [{"role": "user", "content": [{"type": "text", "text": "Who"}, {"type": "input_text", "text": "is?"}]}]
    assert check_chat_request({"model": "cf_rag"}, parts, TABLE)[0] == "Who is?"


class _Registry:
    def __init__(self, wrappers):
        self.wrappers = wrappers

    def get(self, name):
        return self.wrappers.get(name)

    def get_names(self):
        return list(self.wrappers)


class _Chat:
    _is_run_chat_completion_implemented = True
    _is_run_response_implemented = True


class _Yaml:
    _is_run_chat_completion_implemented = False


def test_a_yaml_pipeline_named_as_model_is_a_422_naming_its_route():
    registry = _Registry({"cf_rag": _Chat(), "cf_rag_fast_yaml": _Yaml()})
    for method in ("run_chat_completion", "run_response"):
        with pytest.raises(RequestError, match=r"'cf_rag_fast_yaml' answers at /cf_rag_fast_yaml/run only.*cf_rag\)"):
            check_openai_model(registry, {"model": "cf_rag_fast_yaml"}, method)
        check_openai_model(registry, {"model": "cf_rag"}, method)  # served there
        check_openai_model(registry, {"model": "nope"}, method)  # unknown: Hayhooks' 404
        check_openai_model(registry, {"model": ["x"]}, method)


def test_yaml_results_reach_mcp_as_json():
    pytest.importorskip("hayhooks")
    from hayhooks.server.utils.yaml_pipeline_wrapper import YAMLPipelineWrapper

    wrapper = YAMLPipelineWrapper.__new__(YAMLPipelineWrapper)

    async def run_api_async(*, query: str) -> dict:
        return {"prompt": {"prompt": [ChatMessage.from_user(query)]},
                "retriever": {"documents": [Document(content="Bale", score=float("inf"))]}}

    wrapper.run_api_async = run_api_async
    json_safe_results(_Registry({"yaml": wrapper}))
    result = asyncio.run(wrapper.run_api_async(query="Who?"))
    text = json.dumps(result)  # before: "Object of type ChatMessage is not JSON serializable"
    assert "Who?" in text and "Bale" in text
    assert result["retriever"]["documents"][0]["score"] is None
    assert json_safe({1: (1.5, "x")}) == {"1": [1.5, "x"]}
