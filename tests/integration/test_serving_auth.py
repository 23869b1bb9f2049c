"""`cfrag serve` with a bearer token (CFRAG_API_KEY), the deploy routes opted in, and one CORS origin.

One served mock (REST and MCP) for the module. The opted-in deploy route runs posted code only
with the token: the test shows the marker file appearing then, so its absence without the
token (and, in test_serving.py, without the opt-in) means the code did not run.
"""

import asyncio

import httpx
import pytest

from haystack_cfrag.testing.hostile import deploy_body
from tests.server import free_port, served

TOKEN = "test-token-0123456789"
UI = "http://ui.example:8080"
QUESTION = "Who is the lead actor in The Dark Knight?"


@pytest.fixture(scope="module")
def auth_server(tmp_path_factory):
    args = ["--mock", "--allow-deploy", "--cors-origin", UI,
            "--deploy-dir", str(tmp_path_factory.mktemp("deploy") / "pipelines")]
    with served(args, expect=["cf_rag"], mcp_port=free_port(), env={"CFRAG_API_KEY": TOKEN}) as server:
        yield server


def auth(token=TOKEN):
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/status"), ("GET", "/docs"), ("GET", "/openapi.json"), ("GET", "/v1/models"),
    ("POST", "/cf_rag/run"), ("POST", "/v1/chat/completions"), ("POST", "/deploy_files"),
    ("POST", "/undeploy/cf_rag"),
])
def test_every_route_needs_the_token(auth_server, method, path, tmp_path):
    marker = tmp_path / "ran.txt"
    body = deploy_body(str(marker)) if path == "/deploy_files" else {"question": QUESTION}
    for headers in ({}, auth("wrong-token"), {"Authorization": TOKEN}, auth(TOKEN + "x")):
        response = httpx.request(method, f"{auth_server.url}{path}", json=body if method == "POST" else None,
                                 headers=headers, timeout=60)
        assert response.status_code == 401, (headers, response.text)
        assert "bearer token" in response.json()["detail"] and response.headers["www-authenticate"] == "Bearer"
    assert not marker.exists()
    assert httpx.get(f"{auth_server.url}/status", headers=auth(), timeout=30).status_code == 200


def test_with_the_token_the_opted_in_deploy_route_runs_the_posted_code(auth_server, tmp_path):
    marker = tmp_path / "ran.txt"
    response = httpx.post(f"{auth_server.url}/deploy_files", json=deploy_body(str(marker)), headers=auth(),
                          timeout=120)
    assert response.status_code == 200, response.text
    assert marker.read_text() == "ran"  # the payload works: where the marker is absent, the code did not run
    answer = httpx.post(f"{auth_server.url}/cf_rag/run", json={"question": QUESTION}, headers=auth(), timeout=120)
    assert answer.status_code == 200 and answer.json()["result"]["answer"]


def test_only_the_named_cors_origin_is_allowed(auth_server):
    preflight = {"Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "authorization,content-type"}
    ok = httpx.options(f"{auth_server.url}/cf_rag/run", headers={"Origin": UI, **preflight}, timeout=30)
    assert ok.status_code == 200 and ok.headers["access-control-allow-origin"] == UI
    evil = httpx.options(f"{auth_server.url}/cf_rag/run", headers={"Origin": "http://evil.example", **preflight},
                         timeout=30)
    assert evil.status_code == 400 and "access-control-allow-origin" not in evil.headers


def test_mcp_needs_the_token_too(auth_server):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    async def tools():
        async with streamablehttp_client(f"{auth_server.mcp_url}/mcp", headers=auth()) as (read, write, _), \
                ClientSession(read, write) as session:
            await session.initialize()
            return {t.name for t in (await session.list_tools()).tools}

    for _ in range(60):  # the MCP server loads its own models
        try:
            names = asyncio.run(tools())
            break
        except Exception:  # noqa: BLE001
            asyncio.run(asyncio.sleep(2))
    else:
        names = asyncio.run(tools())
    assert {"cf_rag", "deploy_pipeline"} <= names  # opted in, behind the token
    refused = httpx.post(f"{auth_server.mcp_url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                         headers={"Accept": "application/json, text/event-stream"}, timeout=30)
    assert refused.status_code == 401 and "bearer token" in refused.json()["detail"]
