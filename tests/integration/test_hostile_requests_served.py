"""Issue #23, the served part: every case through a real `cfrag serve --mock` (REST and MCP processes).

1. the worst-case cleaning question (combining marks of two classes in reverse order, up to the
   body limit) is refused before it is normalised, on every route, and /status stays answered;
3. integers of hundreds or thousands of digits in numeric fields, and a lone surrogate as the
   OpenAI `model`, get a one-line 422 (never a 500 or a JSON-RPC error);
7. two Content-Type headers get a 400, whichever comes first;
8. 900 KB of zero-width characters are refused, nothing a request sends fills the log, and a
   client that leaves an SSE stream (OpenAI chat, responses, MCP /sse) leaves no traceback.

The server is the module fixture of test_serving.py (the same served pipelines and MCP port).
"""

import asyncio
import json
import socket
import threading
import time

import httpx
import pytest

from haystack_cfrag.serving.app import MAX_LOGGED_CHARS
from haystack_cfrag.serving.middleware import MAX_BODY_BYTES
from haystack_cfrag.serving.requests import MAX_RAW_QUESTION_CHARS
from haystack_cfrag.testing.hostile import HUGE_INT, LONE_SURROGATE, hostile_header_requests, worst_case_cleaning
from tests.integration.test_serving import _with_mcp_ready

QUESTION = "Who is the lead actor in The Dark Knight?"
WORST_AT_LIMIT = worst_case_cleaning((MAX_BODY_BYTES - 100) // 4)  # ~520,000 marks: minutes of NFKC before
TRACEBACKS = ("Exception in ASGI application", "Traceback", "Exception ignored")


def post(server, path, body: bytes, headers=(("content-type", "application/json"),), timeout=60):
    return httpx.post(f"{server.url}{path}", content=body, headers=list(headers), timeout=timeout)


def chat_body(**fields) -> dict:
    return {"model": "cf_rag", "messages": [{"role": "user", "content": QUESTION}], **fields}


def with_huge_int(body: dict, field: str, sign: str = "") -> bytes:
    """`body` as JSON with `field` set to an integer of 401 digits (no encoder writes one into a float field)."""
    return json.dumps(body)[:-1].encode() + f', "{field}": {sign}{HUGE_INT}}}'.encode()


def assert_one_line_4xx(response, status: int, *fragments: str) -> str:
    assert response.status_code == status, response.text[:300]
    detail = response.json()["detail"]
    assert isinstance(detail, str) and "\n" not in detail and len(detail) < 300, detail
    for fragment in fragments:
        assert fragment in detail, detail
    return detail


class StatusProbe:
    """GET /status every 0.1 s in a thread; the slowest answer, and any that failed."""

    def __init__(self, url: str) -> None:
        self.url, self.latencies, self.failures = url, [], []
        self.stop, self.started = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(timeout=10) as client:
            while not self.stop.is_set():
                start = time.perf_counter()
                try:
                    if client.get(f"{self.url}/status").status_code != 200:
                        self.failures.append("status")
                except httpx.HTTPError as exc:
                    self.failures.append(type(exc).__name__)
                self.latencies.append(time.perf_counter() - start)
                self.started.set()
                self.stop.wait(0.1)

    def __enter__(self):
        self.thread.start()
        self.started.wait(15)  # one answer before the work starts
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=15)


# ---------------------------------------------------------------- 1. one request stalls every client
def test_the_worst_case_cleaning_payload_is_refused_at_once_and_status_stays_answered(mock_server):
    """Before: 120 KB of such marks held /status for 4.6 s; at the body limit, minutes."""
    assert len(WORST_AT_LIMIT) <= MAX_BODY_BYTES
    with StatusProbe(mock_server.url) as probe:
        time.sleep(0.3)
        for body in (worst_case_cleaning(), WORST_AT_LIMIT, worst_case_cleaning(), WORST_AT_LIMIT):
            start = time.perf_counter()
            response = post(mock_server, "/cf_rag/run", body)
            assert time.perf_counter() - start < 5
            assert_one_line_4xx(response, 422, f"'question' is longer than {MAX_RAW_QUESTION_CHARS} characters "
                                               "before cleaning")
        time.sleep(0.3)
    assert not probe.failures and len(probe.latencies) >= 3
    assert max(probe.latencies) < 1.0, probe.latencies


@pytest.mark.parametrize(("path", "body", "field"), [
    ("/v1/chat/completions", chat_body(messages=[{"role": "user", "content": "a" + "\u0301\u0316" * 200_000}]),
     "messages[-1].content"),
    ("/v1/chat/completions", chat_body(messages=[{"role": "user", "content": [
        {"type": "text", "text": "a" + "\u0301" * 5000}, {"type": "text", "text": "\u0316" * 5000}]}]),
     "messages[-1].content"),
    ("/v1/responses", {"model": "cf_rag", "input": [{"role": "user", "content": "a" + "\u0316\u0301" * 100_000}]},
     "input[-1].content"),
    ("/cf_rag_fast_yaml/run", {"query": "a" + "\u0301" * 100_000 + "\u0316" * 100_000}, "query"),
    ("/standard_rag/run", {"question": "a" + "\u0301" * 100_000 + "\u0316" * 100_000}, "question"),
])
def test_every_route_bounds_the_raw_text_before_cleaning(mock_server, path, body, field):
    with StatusProbe(mock_server.url) as probe:
        response = post(mock_server, path, json.dumps(body, ensure_ascii=False).encode())
    assert_one_line_4xx(response, 422, f"'{field}' is longer than {MAX_RAW_QUESTION_CHARS} characters before cleaning")
    assert max(probe.latencies) < 1.0, probe.latencies


def test_a_long_bounded_question_with_many_marks_is_still_answered_quickly(mock_server):
    """Within the raw bound, runs of marks are capped (UAX #15) before NFKC: a real question with marks passes."""
    question = QUESTION + " " + ("e" + "\u0301\u0316" * 40 + " ") * 20  # 20 runs of 80 marks: ~1,700 characters
    start = time.perf_counter()
    response = post(mock_server, "/cf_rag/run", json.dumps({"question": question}).encode(), timeout=120)
    assert response.status_code == 200, response.text[:300]
    assert response.json()["result"]["question"].startswith(QUESTION)
    assert time.perf_counter() - start < 60


def test_mcp_refuses_the_worst_case_question_as_a_tool_error_and_its_status_stays_answered(mock_server):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    question = "a" + "\u0301" * 60_000 + "\u0316" * 60_000

    async def session_calls():
        async with streamablehttp_client(f"{mock_server.mcp_url}/mcp") as (read, write, _), ClientSession(
            read, write
        ) as session:
            await session.initialize()
            return [await session.call_tool("cf_rag", {"question": question}) for _ in range(3)]

    with StatusProbe(mock_server.mcp_url) as probe:  # the MCP process's own /status
        calls = asyncio.run(_with_mcp_ready(mock_server, session_calls))
    for call in calls:
        assert call.isError and "'question' is longer than 8000 characters before cleaning" in call.content[0].text
    assert not probe.failures and max(probe.latencies) < 1.0, probe.latencies


# ---------------------------------------------------------------- 3. 500s: huge integers, lone surrogates
@pytest.mark.parametrize(("path", "body", "fragments"), [
    ("/cf_rag/run", with_huge_int({"question": QUESTION}, "n_subsets"),
     ["'n_subsets' must be an integer in [1, 20]", "(401 digits)"]),
    ("/cf_rag/run", with_huge_int({"question": QUESTION}, "causal_weight", "-"),
     ["'causal_weight' must be a number in [0, 1]", "(401 digits)"]),
    ("/cf_rag/run", json.dumps({"question": QUESTION}).encode()[:-1] + b', "n_clusters": 1' + b"0" * 4000 + b"}",
     ["'n_clusters' must be an integer in [1, 20]", "(4001 digits)"]),
    ("/v1/chat/completions", with_huge_int(chat_body(), "n_counterfactuals"),
     ["'n_counterfactuals' must be an integer in [0, 10]"]),
    ("/v1/responses", with_huge_int({"model": "cf_rag", "input": QUESTION}, "causal_weight"),
     ["'causal_weight' must be a number in [0, 1]"]),
    ("/v1/chat/completions", json.dumps(chat_body(model=LONE_SURROGATE)).encode(), ["'model' is not Unicode text"]),
    ("/v1/responses", json.dumps({"model": LONE_SURROGATE, "input": QUESTION}).encode(),
     ["'model' is not Unicode text"]),
    ("/v1/chat/completions", json.dumps(chat_body(messages=[{"role": "user", "content": "Who\udc80?"}])).encode(),
     ["'messages[0].content' is not Unicode text"]),
], ids=["run-int", "run-negative-number", "run-4001-digits", "chat-int", "responses-int", "chat-model",
        "responses-model", "chat-content"])
def test_huge_integers_and_lone_surrogates_get_a_422_naming_the_field(mock_server, path, body, fragments):
    offset = mock_server.log_size()
    assert_one_line_4xx(post(mock_server, path, body), 422, *fragments)
    assert not any(t in mock_server.log_since(offset) for t in TRACEBACKS)


def test_in_range_numbers_are_still_accepted_after_the_overflow_free_check(mock_server):
    """2.0 and 2 are the integer 2; an in-range value is still accepted after the overflow-free check."""
    response = post(mock_server, "/cf_rag/run", json.dumps({"question": QUESTION, "n_subsets": 2.0,
                                                            "causal_weight": 1}).encode(), timeout=120)
    assert response.status_code == 200, response.text[:300]


def test_mcp_refuses_a_huge_integer_as_a_tool_error_not_a_json_rpc_error(mock_server):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    async def session_calls():
        async with streamablehttp_client(f"{mock_server.mcp_url}/mcp") as (read, write, _), ClientSession(
            read, write
        ) as session:
            await session.initialize()
            return [await session.call_tool("cf_rag", {"question": QUESTION, field: value})
                    for field, value in (("n_subsets", int(HUGE_INT)), ("causal_weight", -int(HUGE_INT)))]

    calls = asyncio.run(_with_mcp_ready(mock_server, session_calls))
    texts = [c.content[0].text for c in calls]
    assert all(c.isError for c in calls), texts
    assert "'n_subsets' must be an integer in [1, 20]" in texts[0]
    assert "'causal_weight' must be a number in [0, 1]" in texts[1]


# ---------------------------------------------------------------- 7. two Content-Type headers
@pytest.mark.parametrize("case", hostile_header_requests(), ids=lambda c: c.name)
def test_two_content_types_get_a_400_whichever_comes_first(mock_server, case):
    """Before: the guard read the last, FastAPI the first: a 25,000-character query was answered, top_k accepted."""
    assert_one_line_4xx(post(mock_server, case.path, case.body, case.headers), 400, "2 Content-Type headers")


def test_two_content_types_never_let_a_control_character_query_through(mock_server):
    """Before: a control-characters-only query got 503 (the pipeline ran on nothing) instead of 422."""
    body = json.dumps({"question": "\u0000\u0007\u202e"}).encode()
    for headers in ((("content-type", "application/json"), ("content-type", "text/plain")),
                    (("content-type", "text/plain"), ("content-type", "application/json"))):
        assert_one_line_4xx(post(mock_server, "/cf_rag/run", body, headers), 400, "send one")
    assert_one_line_4xx(post(mock_server, "/cf_rag/run", body), 422, "'question' is empty")


# ---------------------------------------------------------------- 8. zero-width floods, the log, SSE disconnects
def test_900_kb_of_zero_width_characters_are_refused_and_not_logged(mock_server):
    """Before: accepted and logged raw, 1.8 MB of log per request."""
    body = json.dumps({"question": "Who is Batman?" + "\u200b" * 300_000}, ensure_ascii=False).encode()
    assert len(body) > 900_000
    offset = mock_server.log_size()
    assert_one_line_4xx(post(mock_server, "/cf_rag/run", body), 422, "before cleaning")
    time.sleep(0.5)
    assert mock_server.log_size() - offset < 2_000


def test_an_accepted_question_is_logged_shortened(mock_server):
    """Within the raw bound a question may carry thousands of ignorable characters: the log line stays short."""
    raw = "Who is Batman?" + "\u200b" * (MAX_RAW_QUESTION_CHARS - 20)
    offset = mock_server.log_size()
    response = post(mock_server, "/cf_rag/run", json.dumps({"question": raw}, ensure_ascii=False).encode(), timeout=120)
    assert response.status_code == 200 and response.json()["result"]["question"] == "Who is Batman?"
    time.sleep(0.5)
    logged = mock_server.log_since(offset)
    assert "Running pipeline" in logged and "characters)" in logged  # Hayhooks' params line, cut
    assert max(len(line) for line in logged.splitlines()) < MAX_LOGGED_CHARS + 300
    assert len(logged) < 4_000


def _leave_sse_early(url: str, path: str, body: dict | None) -> None:
    with httpx.stream("POST" if body else "GET", f"{url}{path}", json=body, timeout=60) as response:
        assert response.status_code == 200
        for _line in response.iter_lines():
            break  # the client leaves after the first line


def _reset_mid_request(port: int, path: str, body: dict, wait: float) -> None:
    """Send the request, wait, then drop the connection with a RST (a killed client)."""
    raw = json.dumps(body).encode()
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {len(raw)}\r\n\r\n".encode() + raw)
        time.sleep(wait)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")


def test_sse_clients_that_leave_early_leave_no_traceback_in_the_log(mock_server):
    """Before: MCP's /sse logged "Exception in ASGI application"; chat streams "Exception ignored …"."""
    chat = chat_body(stream=True)
    responses = {"model": "cf_rag", "input": QUESTION, "stream": True}
    port = int(mock_server.url.rsplit(":", 1)[1])
    offset = mock_server.log_size()
    for _ in range(3):
        _leave_sse_early(mock_server.url, "/v1/chat/completions", chat)
        _leave_sse_early(mock_server.url, "/v1/responses", responses)
        _leave_sse_early(mock_server.mcp_url, "/sse", None)
    for wait in (0.05, 0.3, 0.8):
        _reset_mid_request(port, "/v1/chat/completions", chat, wait)
    time.sleep(6)  # a held disconnect is let go after the stream ends (at most DISCONNECT_GRACE_S)
    logged = mock_server.log_since(offset)
    assert "GET /sse" in logged and "POST /v1/chat/completions" in logged
    assert not any(t in logged for t in TRACEBACKS), logged[-3000:]
    # and a whole stream still ends as OpenAI's do
    with httpx.stream("POST", f"{mock_server.url}/v1/chat/completions", json=chat, timeout=120) as response:
        events = [line for line in response.iter_lines() if line.strip()]
    assert events[-1] == "data: [DONE]" and events.count("data: [DONE]") == 1
