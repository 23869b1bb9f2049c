"""Issue #43 through real `cfrag serve --mock` processes.

Item 4, the servers live no longer than `cfrag serve`. Before: after SIGHUP (a closed terminal)
it died at once, its Hayhooks children kept answering on the port and the temporary deploy
folder stayed; after SIGKILL the same. Items 1 and 7 (the served part): the body that cost about
+500 MB, the OpenAI fields that were misread, a YAML pipeline on chat and on MCP.
"""

import json
import os
import re
import signal
import socket
import sys
import time
from pathlib import Path

import pytest

from haystack_cfrag.serving.deploy import OWNER_FILE, remove_stale_run_folders
from tests.server import served

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")


def _deploy_folder(server) -> Path:
    match = re.search(r"\[serve\] deploy dir (\S+)/pipelines:", server.log.read_text(encoding="utf-8"))
    assert match, server.log.read_text(encoding="utf-8")[-2000:]
    return Path(match.group(1))


def _gone(pid: int, timeout: float = 40.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # a zombie of ours is gone too
            with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
                if fh.read().rpartition(")")[2].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.2)
    return False


def _port_closed(url: str) -> bool:
    host, port = url.removeprefix("http://").split(":")
    with socket.socket() as sock:
        sock.settimeout(2)
        return sock.connect_ex((host, int(port))) != 0


def test_sighup_stops_the_servers_and_removes_the_deploy_folder():
    with served(["--mock"], expect=["cf_rag"]) as server:
        child, folder = server.hayhooks_pid(), _deploy_folder(server)
        assert child is not None and folder.is_dir()
        os.kill(server.process.pid, signal.SIGHUP)
        server.process.wait(timeout=40)
        assert _gone(child), "the Hayhooks child outlived cfrag serve"
        assert _port_closed(server.url)
        assert not folder.exists(), f"{folder} was left behind"


def test_sigkill_of_cfrag_serve_stops_its_servers_and_the_next_start_removes_its_folder():
    with served(["--mock"], expect=["cf_rag"]) as server:
        child, folder = server.hayhooks_pid(), _deploy_folder(server)
        assert child is not None and (folder / OWNER_FILE).is_file()
        os.kill(server.process.pid, signal.SIGKILL)
        server.process.wait(timeout=10)
        assert _gone(child), "the Hayhooks child outlived a killed cfrag serve"
        assert _port_closed(server.url)
    assert folder.is_dir()  # nobody was left to remove it …
    assert folder in remove_stale_run_folders(folder.parent)  # … what the next cfrag serve does first
    assert not folder.exists()


# ---------------------------------------------------------------- items 1 and 7 through the real server
QUESTION = "Who is the lead actor in The Dark Knight?"


@pytest.fixture(scope="module")
def mock_server(tmp_path_factory):
    from haystack_cfrag.testing.hostile import SERVED_ARGS, SERVED_PIPELINES
    from tests.server import free_port

    args = [*SERVED_ARGS, "--deploy-dir", str(tmp_path_factory.mktemp("deploy") / "pipelines")]
    with served(args, expect=SERVED_PIPELINES, mcp_port=free_port()) as server:
        yield server


def _detail(response, status: int, fragment: str) -> None:
    assert response.status_code == status, response.text[:300]
    detail = response.json()["detail"]
    assert isinstance(detail, str) and "\n" not in detail and fragment in detail, detail


def test_the_quadratic_body_is_refused_at_a_linear_cost_and_status_stays_answered(mock_server):
    import httpx

    body = json.dumps({"k" * 24000: [0] * 24000}).encode()  # before: about +500 MB and a 1 s /status
    before = mock_server.rss()
    slowest = 0.0
    for path in ("/cf_rag/run", "/v1/chat/completions", "/cf_rag_fast_yaml/run"):
        response = httpx.post(f"{mock_server.url}{path}", content=body, timeout=60,
                              headers={"content-type": "application/json"})
        assert response.status_code in (404, 422), (path, response.status_code)
        start = time.monotonic()
        assert httpx.get(f"{mock_server.url}/status", timeout=30).status_code == 200
        slowest = max(slowest, time.monotonic() - start)
    assert slowest < 1.0, slowest
    assert mock_server.rss() - before < 100 * 1024 * 1024, (before, mock_server.rss())


def test_openai_routes_refuse_what_they_used_to_misread(mock_server):
    import httpx

    def chat(**fields):
        body = {"model": "cf_rag", "messages": [{"role": "user", "content": QUESTION}], **fields}
        return httpx.post(f"{mock_server.url}/v1/chat/completions", json=body, timeout=120)

    _detail(chat(stream="yes"), 422, "'stream' must be true or false")
    for stream in (False, True):
        _detail(chat(messages=[{"role": "user", "content": [{"type": "text", "text": {"q": QUESTION}}]}],
                     stream=stream), 422, "must be a string")
    _detail(chat(model="cf_rag_fast_yaml"), 422, "/cf_rag_fast_yaml/run")
    responses = httpx.post(f"{mock_server.url}/v1/responses", timeout=120,
                           json={"model": "cf_rag_fast_yaml", "input": QUESTION})
    _detail(responses, 422, "/cf_rag_fast_yaml/run")
    assert httpx.get(f"{mock_server.url}/status", headers={"Host": "[::1]anything"}, timeout=30).status_code == 400
    assert chat().status_code == 200


def test_mcp_answers_a_yaml_pipeline_with_json(mock_server):
    import asyncio

    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    from tests.integration.test_serving import _with_mcp_ready

    async def session_calls():
        async with streamablehttp_client(f"{mock_server.mcp_url}/mcp") as (read, write, _), ClientSession(
            read, write
        ) as session:
            await session.initialize()
            return await session.call_tool("cf_rag_fast_yaml", {"query": QUESTION})

    result = asyncio.run(_with_mcp_ready(mock_server, session_calls))
    text = result.content[0].text
    assert not result.isError, text[:300]  # before: "Object of type … is not JSON serializable"
    assert isinstance(json.loads(text), dict)
