"""Issue 70, item 5: a served request is checked once, where it enters, by its pipeline's request model.

Before (58316b0): a `/run` body was checked by the guard, by the wrapper's `run_api` and again by the
service (three times: its question cleaned three times, `gate_threshold` checked three times and a
fourth in the gate); an OpenAI body twice; an MCP call three times.
"""

import asyncio
import json

import pytest

from haystack_cfrag.common.parameters import Parameter
from haystack_cfrag.registry import REGISTRY
from haystack_cfrag.serving import requests
from haystack_cfrag.serving.requests import RequestError, check_run_request, request_model
from tests import dark_knight as dk
from tests.unit.serving.test_serving import service

pytest.importorskip("hayhooks")


@pytest.fixture
def counted(monkeypatch):
    """How many times a request's question was cleaned and its parameters checked."""
    calls = {"question": 0, "parameter": 0}
    clean, check = requests.clean_query, Parameter.check

    def counted_clean(text):
        calls["question"] += 1
        return clean(text)

    def counted_check(self, value):
        calls["parameter"] += 1
        return check(self, value)

    monkeypatch.setattr(requests, "clean_query", counted_clean)
    monkeypatch.setattr(Parameter, "check", counted_check)
    return calls


@pytest.fixture(scope="module")
def wrapper():
    from haystack_cfrag.serving.wrapper import CFRAGPipelineWrapper

    w = CFRAGPipelineWrapper()
    w.pipeline_name, w.service = "cf_rag", service()
    return w


def test_a_run_body_is_checked_once_from_the_guard_to_the_answer(wrapper, counted):
    from haystack_cfrag.serving.app import pipeline_body_check

    body = {"question": dk.QUESTION, "n_subsets": 2}
    pipeline_body_check(wrapper, None)(body)  # the guard: the names Hayhooks' own model would drop
    assert wrapper.run_api(**body)["answer"]
    assert counted == {"question": 1, "parameter": 1}
    with pytest.raises(RequestError, match=r"Unknown field\(s\) 'bogus'"):
        pipeline_body_check(wrapper, None)({**body, "bogus": 1})


def test_a_chat_body_is_checked_once(wrapper, counted):
    messages = [{"role": "user", "content": dk.QUESTION}]
    body = {"model": "cf_rag", "messages": messages, "n_subsets": 2}
    reply = wrapper.run_chat_completion("cf_rag", messages, body)
    assert reply.choices[0].message.content
    assert counted == {"question": 1, "parameter": 1}


def test_an_mcp_call_is_checked_once_and_a_refusal_is_the_tools_one_line_error(wrapper, counted):
    import mcp.types as types

    from haystack_cfrag.serving.app import checked_tool_calls

    class Registry:
        def get(self, name):
            return wrapper if name == "cf_rag" else None

        def get_metadata(self, name):
            return None

    async def hayhooks_call_tool(request):
        raise AssertionError("a CF-RAG pipeline's call is answered by its wrapper")

    handler = checked_tool_calls(Registry(), hayhooks_call_tool)

    def call(arguments):
        params = types.CallToolRequestParams(name="cf_rag", arguments=arguments)
        request = types.CallToolRequest(method="tools/call", params=params)
        return asyncio.run(handler(request)).root

    good = call({"question": dk.QUESTION, "n_subsets": 2})
    assert not good.isError and json.loads(good.content[0].text)["answer"]
    assert counted == {"question": 1, "parameter": 1}
    for arguments, fragment in (({"question": " "}, "'question' is empty"),
                                ({"question": "q?", "n_subsets": 10**400}, "'n_subsets' must be an integer"),
                                ({"question": "q?", "self": 1}, "Unknown field(s) 'self'")):
        refused = call(arguments)
        assert refused.isError and fragment in refused.content[0].text and "\n" not in refused.content[0].text


def test_the_request_model_is_made_from_the_pipelines_table_once():
    table = REGISTRY["cf_rag_auto"].request_table
    model = request_model(table)
    assert model is request_model(dict(table)) and list(model.model_fields) == ["question", *table]
    checked = check_run_request({"question": " q? ", "gate_threshold": 0}, table)
    assert checked == ("q?", {"gate_threshold": 0.0})
    with pytest.raises(RequestError, match=r"'gate_threshold' must be a number in \[0, 1\], got 2"):
        check_run_request({"question": "q?", "gate_threshold": 2}, table)
