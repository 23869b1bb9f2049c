"""CF-RAG served by a real Hayhooks process (`cfrag serve`) on 127.0.0.1: REST, OpenAI chat, MCP, YAML deploys.

Most tests use the shipped MockChatGenerator (with the real embedder and the demo store), so they
exercise Hayhooks, the wrapper, validation and the pipelines without paying for the LLM; one test
serves cf_rag_fast with the real embedded models. Every server runs in its own process group
and is stopped when its fixture ends (tests.server.served).
"""

import asyncio
import json

import httpx
import pytest

from haystack_cfrag.testing.hostile import SERVED_PIPELINES, deploy_body, hostile_requests
from tests.server import served

QUESTION = "Who is the lead actor in The Dark Knight?"


@pytest.fixture(scope="module")
def failing_server(tmp_path_factory):
    args = ["--mock", "--mock-failure-rate", "1.0", "--deploy-dir", str(tmp_path_factory.mktemp("deploy") / "p")]
    with served(args, expect=["cf_rag"]) as server:
        yield server


def post(server, path, payload, timeout=120, **kwargs):
    return httpx.post(f"{server.url}{path}", json=payload, timeout=timeout, **kwargs)


# ---------------------------------------------------------------- /<pipeline>/run
def test_run_answers_with_alternatives_and_trace(mock_server):
    response = post(mock_server, "/cf_rag/run", {"question": QUESTION, "n_subsets": 2, "causal_weight": 0.5})
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result["answer"] and result["pipeline"] == "cf_rag" and result["trace"]["drafts"]
    assert result["alternatives"][0]["answer"] == result["answer"] and result["alternatives"][0]["psi"] is not None
    assert result["usage"]["total_tokens"] > 0 and result["usage"]["llm_calls"] >= len(result["trace"]["drafts"])
    # the mock answers with the title of the first passage it was shown: a document of the demo store
    titles = {d["title"] for d in result["documents"]}
    assert result["answer"] in titles | {a["answer"] for a in result["alternatives"]}
    assert any("Dark Knight" in (t or "") for t in titles)


def test_run_time_parameters_reach_the_components(mock_server):
    low = post(mock_server, "/cf_rag/run", {"question": QUESTION, "n_counterfactuals": 0, "causal_weight": 0.1}).json()
    high = post(mock_server, "/cf_rag/run", {"question": QUESTION, "n_counterfactuals": 3, "causal_weight": 0.9}).json()
    assert low["result"]["trace"]["counterfactuals"] == []
    assert low["result"]["trace"]["weights"] != high["result"]["trace"]["weights"]


def test_standard_rag_wrapper(mock_server):
    response = post(mock_server, "/standard_rag/run", {"question": QUESTION})
    assert response.status_code == 200 and response.json()["result"]["answer"]


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({}, "question"),
        ({"question": ""}, "question"),
        ({"question": "   "}, "question"),
        ({"question": 42}, "question"),
        ({"question": ["a"]}, "question"),
        ({"question": "q?", "n_counterfactuals": 11}, "n_counterfactuals"),
        ({"question": "q?", "n_counterfactuals": -1}, "n_counterfactuals"),
        ({"question": "q?", "n_clusters": 0}, "n_clusters"),
        ({"question": "q?", "n_clusters": "three"}, "n_clusters"),
        ({"question": "q?", "n_subsets": 2.5}, "n_subsets"),
        ({"question": "q?", "n_subsets": 21}, "n_subsets"),
        ({"question": "q?", "causal_weight": 1.5}, "causal_weight"),
        ({"question": "q?", "causal_weight": "high"}, "causal_weight"),
        ({"question": "x" * 2001}, "question"),
    ],
)
def test_bad_requests_are_422_naming_the_field(mock_server, payload, field):
    response = post(mock_server, "/cf_rag/run", payload)
    assert response.status_code == 422, response.text
    assert field in response.text


def test_malformed_json_and_unknown_pipeline_are_4xx(mock_server):
    bad = httpx.post(f"{mock_server.url}/cf_rag/run", content=b"{not json", timeout=30,
                     headers={"content-type": "application/json"})
    assert bad.status_code == 422
    assert post(mock_server, "/nope/run", {"question": QUESTION}).status_code == 404


@pytest.mark.parametrize("case", hostile_requests(), ids=lambda c: c.name)
def test_hostile_requests_get_a_4xx_with_a_json_message_naming_the_problem(mock_server, case):
    response = httpx.post(f"{mock_server.url}{case.path}", content=case.body, timeout=60,
                          headers={"content-type": "application/json"})
    assert response.status_code == case.status, response.text[:300]
    assert case.message in response.text
    assert json.loads(response.text, parse_constant=lambda c: pytest.fail(f"{c} in the error body"))


def test_numbers_that_are_integers_count_as_integers_everywhere(mock_server):
    """The one rule: 2.0 is the integer 2 on every route (JSON Schema's integer), 2.5 is refused on every route."""
    run = post(mock_server, "/cf_rag/run", {"question": QUESTION, "n_subsets": 2.0, "causal_weight": 1})
    chat = post(mock_server, "/v1/chat/completions", {"model": "cf_rag", "n_subsets": 2.0,
                                                      "messages": [{"role": "user", "content": QUESTION}]})
    assert (run.status_code, chat.status_code) == (200, 200), run.text + chat.text


def test_the_echoed_question_is_the_cleaned_text(mock_server):
    raw = "  Who \x1b[31mis\x1b[0m the\u202e lead\u200b actor\x00 in The Dark Knight?\n"
    result = post(mock_server, "/cf_rag/run", {"question": raw}).json()["result"]
    assert result["question"] == "Who [31mis [0m the lead actor in The Dark Knight?"
    assert not any(ord(c) < 32 or c in "\u202e\u200b" for c in json.dumps(result, ensure_ascii=False))


# ---------------------------------------------------------------- only the served pipelines, no CORS, local hosts
def test_deploy_routes_do_not_exist_and_posted_code_never_runs(mock_server, tmp_path):
    marker = tmp_path / "ran.txt"
    for path in ("/deploy_files", "/deploy-yaml", "/undeploy/cf_rag"):
        body = deploy_body(str(marker)) if path == "/deploy_files" else {"name": "evil", "source_code": "x"}
        response = post(mock_server, path, body, headers={"Origin": "http://evil.example"})
        assert response.status_code == 404, response.text
    paths = set(httpx.get(f"{mock_server.url}/openapi.json", timeout=30).json()["paths"])
    assert paths == {f"/{name}/run" for name in SERVED_PIPELINES} | {
        "/status", "/status/{pipeline_name}", "/v1/models", "/models", "/v1/chat/completions", "/chat/completions",
        "/v1/responses", "/responses"}
    assert httpx.get(f"{mock_server.url}/draw/cf_rag", timeout=30).status_code == 404
    assert post(mock_server, "/cf_rag/run", {"question": QUESTION}).status_code == 200  # still serving
    assert not marker.exists()


def test_cors_is_off_by_default(mock_server):
    preflight = httpx.options(f"{mock_server.url}/cf_rag/run", timeout=30, headers={
        "Origin": "http://evil.example", "Access-Control-Request-Method": "POST"})
    assert preflight.status_code == 400 and "access-control-allow-origin" not in preflight.headers
    simple = httpx.get(f"{mock_server.url}/status", timeout=30, headers={"Origin": "http://evil.example"})
    assert simple.status_code == 200 and "access-control-allow-origin" not in simple.headers


def test_a_foreign_host_header_is_refused_on_loopback(mock_server):
    """A page of evil.example that DNS-rebinds to 127.0.0.1 sends Host: evil.example."""
    response = httpx.get(f"{mock_server.url}/status", timeout=30, headers={"Host": "evil.example:1416"})
    assert response.status_code == 400 and "is not served here" in response.json()["detail"]


# ---------------------------------------------------------------- OpenAI-compatible chat
def test_chat_completion_returns_the_answer_and_usage_to_the_openai_client(mock_server):
    from openai import OpenAI

    answer = post(mock_server, "/cf_rag/run", {"question": QUESTION}).json()["result"]["answer"]
    client = OpenAI(base_url=f"{mock_server.url}/v1", api_key="unused", max_retries=0)
    reply = client.chat.completions.create(model="cf_rag", messages=[
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": QUESTION}])
    assert reply.choices[0].message.content.startswith(answer) and reply.choices[0].finish_reason == "stop"
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens > 0


def test_chat_streams_end_with_done_as_openai_streams_do(mock_server):
    from openai import OpenAI

    client = OpenAI(base_url=f"{mock_server.url}/v1", api_key="unused", max_retries=0)
    chunks = list(client.chat.completions.create(model="cf_rag", stream=True, stream_options={"include_usage": True},
                                                 messages=[{"role": "user", "content": QUESTION}]))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text and chunks[-1].usage.total_tokens > 0 and chunks[-2].choices[0].finish_reason == "stop"
    payload = {"model": "cf_rag", "stream": True, "messages": [{"role": "user", "content": QUESTION}]}
    with httpx.stream("POST", f"{mock_server.url}/v1/chat/completions", json=payload, timeout=120) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        events = [line for line in response.iter_lines() if line.strip()]
    assert events[-1] == "data: [DONE]" and events.count("data: [DONE]") == 1


def test_responses_api_answers_the_openai_client(mock_server):
    from openai import OpenAI

    client = OpenAI(base_url=f"{mock_server.url}/v1", api_key="unused", max_retries=0)
    response = client.responses.create(model="cf_rag", input=QUESTION)
    assert response.output_text and response.usage.total_tokens > 0


@pytest.mark.parametrize(
    "payload",
    [
        {"model": "cf_rag", "messages": [{"role": "user", "content": "  "}]},
        {"model": "cf_rag", "messages": [{"role": "system", "content": "no user message"}]},
        {"model": "cf_rag", "messages": [{"role": "user", "content": QUESTION}], "n_clusters": 99},
    ],
)
def test_bad_chat_requests_are_4xx(mock_server, payload):
    response = post(mock_server, "/v1/chat/completions", payload)
    assert 400 <= response.status_code < 500, response.text


# ---------------------------------------------------------------- YAML deployed as a Hayhooks YAML pipeline
def test_shipped_yaml_is_deployed_with_its_inputs_and_outputs(mock_server):
    response = post(mock_server, "/cf_rag_fast_yaml/run", {"query": QUESTION})
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    ranker = result["duel"]
    assert ranker["answer"] and ranker["trace"]["drafts"]
    # the YAML's in-memory store reads the service's documents (the shared index)
    assert any("dark-knight" in e["id"] for d in ranker["trace"]["drafts"] for e in d["evidence"])


# ---------------------------------------------------------------- model failures
def test_a_failing_model_never_gets_a_500_and_the_server_keeps_validating(failing_server):
    response = post(failing_server, "/cf_rag/run", {"question": QUESTION})
    if response.status_code == 200:  # degraded call by call down to no answer
        result = response.json()["result"]
        assert result["degraded"] is True and result["answer"] == "" and result["warnings"]
    else:  # nothing could answer: 503 with the reason
        assert response.status_code == 503 and "failed" in response.json()["detail"], response.text
    chat = post(failing_server, "/v1/chat/completions",
                {"model": "cf_rag", "messages": [{"role": "user", "content": QUESTION}]})
    assert chat.status_code == response.status_code, chat.text
    assert post(failing_server, "/cf_rag/run", {"question": " "}).status_code == 422


# ---------------------------------------------------------------- MCP
def test_mcp_lists_and_calls_the_pipeline_tool(mock_server):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    async def session_calls():
        async with streamablehttp_client(f"{mock_server.mcp_url}/mcp") as (read, write, _), ClientSession(
            read, write
        ) as session:
            await session.initialize()
            tools = {t.name: t for t in (await session.list_tools()).tools}
            good = await session.call_tool("cf_rag", {"question": QUESTION, "n_subsets": 1})
            bad = await session.call_tool("cf_rag", {"question": "  "})
            return tools, good, bad

    tools, good, bad = asyncio.run(_with_mcp_ready(mock_server, session_calls))
    assert "Counterfactual RAG" in tools["cf_rag"].description
    assert "question" in tools["cf_rag"].inputSchema["properties"]
    assert tools["cf_rag"].inputSchema["required"] == ["question"]
    assert tools["cf_rag"].inputSchema["properties"]["n_clusters"]["anyOf"][0] == {
        "type": "integer", "minimum": 1, "maximum": 20}
    assert not good.isError and "answer" in good.content[0].text
    assert bad.isError and "empty" in bad.content[0].text


def test_mcp_refuses_what_rest_refuses_and_has_no_deploy_tools(mock_server, tmp_path):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    marker = tmp_path / "ran.txt"

    async def session_calls():
        async with streamablehttp_client(f"{mock_server.mcp_url}/mcp") as (read, write, _), ClientSession(
            read, write
        ) as session:
            await session.initialize()
            names = {t.name for t in (await session.list_tools()).tools}
            calls = [await session.call_tool(tool, args) for tool, args in (
                ("cf_rag", {"question": QUESTION, "bogus": 1}),
                ("cf_rag", {"question": QUESTION, "n_clusters": "3"}),
                ("cf_rag", {"question": QUESTION, "causal_weight": 2}),
                ("cf_rag", {"question": "\u0000\u202e"}),
                ("standard_rag", {"question": QUESTION, "n_subsets": 2}),
                ("deploy_pipeline", {k: v for k, v in deploy_body(str(marker)).items() if k != "overwrite"}),
            )]
            return names, calls

    names, calls = asyncio.run(_with_mcp_ready(mock_server, session_calls))
    assert {"cf_rag", "standard_rag"} <= names and not names & {"deploy_pipeline", "undeploy_pipeline"}
    texts = [c.content[0].text for c in calls]
    assert all(c.isError for c in calls), texts
    for fragment, text in zip(["Unknown field(s) 'bogus'", "'n_clusters' must be", "'causal_weight' must be",
                               "'question' is empty", "Unknown field(s) 'n_subsets'", "cannot be deployed"], texts,
                              strict=True):
        assert fragment in text
    assert not marker.exists()


async def _with_mcp_ready(server, calls, attempts=60):
    for _ in range(attempts):  # the MCP server deploys the pipelines on its own; wait for it
        try:
            return await calls()
        except Exception:  # noqa: BLE001
            await asyncio.sleep(2)
    return await calls()


# ---------------------------------------------------------------- the real embedded models
def test_real_models_answer_through_the_served_cf_rag_fast(tmp_path):
    args = ["--pipeline", "cf_rag_fast", "--max-tokens", "160", "--deploy-dir", str(tmp_path / "pipelines")]
    with served(args, expect=["cf_rag_fast"], timeout=600) as server:
        response = post(server, "/cf_rag_fast/run", {"question": QUESTION}, timeout=600)  # ~30-200 s on 2 busy cores
        assert response.status_code == 200, response.text
        result = response.json()["result"]
        assert result["answer"].strip() and result["trace"]["drafts"] and result["trace"]["decision"]
        assert not any(d.get("error") for d in result["trace"]["drafts"])
        chat = post(server, "/v1/chat/completions",
                    {"model": "cf_rag_fast", "messages": [{"role": "user", "content": " "}]})
        assert chat.status_code == 422
