"""CF-RAG served by a real Hayhooks process (`cfrag serve`) on 127.0.0.1: REST, OpenAI chat, MCP, YAML deploys.

Most tests use the shipped MockChatGenerator (with the real embedder and the demo store), so they
exercise Hayhooks, the wrapper, validation and the pipelines without paying for the LLM; one test
serves cf_rag_fast with the real embedded models. Every server runs in its own process group
and is stopped when its fixture ends (haystack_cfrag.testing.server.served).
"""

import asyncio
import json

import httpx
import pytest

from haystack_cfrag.testing.server import free_port, served

QUESTION = "Who is the lead actor in The Dark Knight?"


@pytest.fixture(scope="module")
def mock_server(tmp_path_factory):
    args = ["--mock", "--pipeline", "cf_rag", "--pipeline", "standard_rag", "--yaml", "cf_rag_fast",
            "--deploy-dir", str(tmp_path_factory.mktemp("deploy") / "pipelines")]
    # hayhooks[mcp] comes with the `serve` extra (make setup): a missing one fails, it is not skipped
    with served(args, expect=["cf_rag", "standard_rag", "cf_rag_fast_yaml"], mcp_port=free_port()) as server:
        yield server


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
    assert result["answer"] and result["degraded"] is False and result["pipeline"] == "cf_rag"
    assert len(result["trace"]["drafts"]) == 2 and result["trace"]["counterfactuals"]
    assert result["alternatives"][0]["answer"] == result["answer"] and result["alternatives"][0]["psi"] is not None
    # the mock answers with the title of the first passage it was shown: a document of the demo store
    titles = {d["title"] for d in result["documents"]}
    assert result["answer"] in titles | {a["answer"] for a in result["alternatives"]}
    assert any("Dark Knight" in (t or "") for t in titles)


def test_run_time_parameters_reach_the_components(mock_server):
    result = post(mock_server, "/cf_rag/run", {"question": QUESTION, "n_counterfactuals": 0, "n_subsets": 1}).json()
    assert result["result"]["trace"]["counterfactuals"] == [] and len(result["result"]["trace"]["drafts"]) == 1


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


# ---------------------------------------------------------------- OpenAI-compatible chat
def test_chat_completion_returns_the_answer(mock_server):
    answer = post(mock_server, "/cf_rag/run", {"question": QUESTION}).json()["result"]["answer"]
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": QUESTION}]
    response = post(mock_server, "/v1/chat/completions", {"model": "cf_rag", "messages": messages})
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == answer


def test_chat_completion_streams(mock_server):
    answer = post(mock_server, "/cf_rag/run", {"question": QUESTION}).json()["result"]["answer"]
    payload = {"model": "cf_rag", "stream": True, "messages": [{"role": "user", "content": QUESTION}]}
    with httpx.stream("POST", f"{mock_server.url}/v1/chat/completions", json=payload, timeout=120) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = [line[len("data: "):] for line in response.iter_lines() if line.startswith("data: ")]
    chunks = [json.loads(e) for e in events if e != "[DONE]"]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert text == answer and chunks[-1]["choices"][0]["finish_reason"] == "stop"


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
    ranker = result["ranker"]
    assert ranker["answer"] and ranker["trace"]["drafts"]
    # the YAML's in-memory store reads the service's documents (the shared index)
    assert any("dark-knight" in e["id"] for d in ranker["trace"]["drafts"] for e in d["evidence"])


# ---------------------------------------------------------------- model failures
def test_failing_model_gives_a_degraded_answer_not_a_5xx(failing_server):
    response = post(failing_server, "/cf_rag/run", {"question": QUESTION})
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result["degraded"] is True and result["answer"] == ""
    assert result["trace"]["decision"] == "all_drafts_failed" and result["warnings"]
    chat = post(failing_server, "/v1/chat/completions", {"model": "cf_rag", "messages": [{"role": "user", "content": QUESTION}]})
    assert chat.status_code == 200 and "degraded" in chat.json()["choices"][0]["message"]["content"]
    # the server is still up and still validates
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
    assert not good.isError and "answer" in good.content[0].text
    assert bad.isError and "empty" in bad.content[0].text


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
        chat = post(server, "/v1/chat/completions", {"model": "cf_rag_fast", "messages": [{"role": "user", "content": " "}]})
        assert chat.status_code == 422
