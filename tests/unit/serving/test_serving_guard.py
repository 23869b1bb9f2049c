"""The ASGI guard of `cfrag serve` around a small Starlette app: what it refuses, and how it changes answers."""

import pytest

pytest.importorskip("starlette")

from starlette.applications import Starlette  # noqa: E402
from starlette.responses import JSONResponse, PlainTextResponse, StreamingResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from haystack_cfrag.registry import REGISTRY  # noqa: E402
from haystack_cfrag.serving.middleware import Guard  # noqa: E402
from haystack_cfrag.serving.requests import check_fields, check_run_request  # noqa: E402


async def echo(request):
    return JSONResponse({"body": (await request.body()).decode()})


async def fails(_request):
    return PlainTextResponse("Pipeline execution failed: boom", status_code=500)


async def stream(_request):
    return StreamingResponse(iter(["data: {}\n\n", "data: {}\n\n"]), media_type="text/event-stream")


APP = Starlette(routes=[Route("/cf_rag/run", echo, methods=["POST"]), Route("/yaml/run", fails, methods=["POST"]),
                        Route("/other", fails, methods=["POST"]),
                        Route("/v1/chat/completions", stream, methods=["POST"]), Route("/status", echo)])


def client(**guard):
    return TestClient(Guard(APP, **guard), base_url="http://127.0.0.1:1416")


def test_a_checked_body_reaches_the_app_unchanged_and_a_bad_one_never_does():
    cf_rag = REGISTRY["cf_rag"].request_table
    check = lambda body: check_run_request(body, cf_rag)  # noqa: E731
    c = client(body_check=lambda path: check if path == "/cf_rag/run" else None)
    assert c.post("/cf_rag/run", content=b'{"question": "Who?"}').json() == {"body": '{"question": "Who?"}'}
    refused = c.post("/cf_rag/run", content=b'{"question": "Who?", "x": 1}')
    assert refused.status_code == 422 and refused.json() == {
        "detail": "Unknown field(s) 'x' (known: question, n_counterfactuals, n_clusters, n_subsets, causal_weight)."}
    assert c.post("/cf_rag/run", content=b"x" * 2_000_000).status_code == 413


def test_the_served_field_check_names_a_missing_question_before_hayhooks_model_answers_in_its_words():
    cf_rag = REGISTRY["cf_rag"].request_table
    c = client(body_check=lambda path: (lambda body: check_fields(body, cf_rag)))
    refused = c.post("/cf_rag/run", content=b'{"n_subsets": 2}')
    assert refused.status_code == 422 and refused.json() == {"detail": "'question' is required."}
    assert c.post("/cf_rag/run", content=b'{"question": "Who?", "n_subsets": 2}').status_code == 200


def test_a_pipeline_routes_500_becomes_503_and_other_routes_keep_theirs():
    c = client()
    assert c.post("/yaml/run", json={"query": "q"}).status_code == 503
    assert c.post("/other", json={}).status_code == 500


def test_chat_streams_get_one_done_at_the_end():
    text = client().post("/v1/chat/completions", json={}).text
    assert text.endswith("data: [DONE]\n\n") and text.count("[DONE]") == 1


@pytest.mark.parametrize(("host", "status"), [("127.0.0.1:1416", 200), ("localhost", 200), ("[::1]:8080", 200),
                                              ("evil.example:1416", 400), ("127.0.0.1.evil.example", 400)])
def test_only_loopback_host_names_pass_when_listening_on_loopback(host, status):
    c = client(allowed_hosts=("127.0.0.1", "localhost", "::1"))
    assert c.get("/status", headers={"Host": host}).status_code == status


def test_the_token_is_required_except_for_cors_preflights():
    c = client(api_key="s3cret")
    assert c.get("/status").status_code == 401
    assert c.get("/status", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    assert c.get("/status", headers={"Authorization": "Basic s3cret"}).status_code == 401
    preflight = c.options("/status", headers={"Origin": "http://ui.example", "Access-Control-Request-Method": "GET"})
    assert preflight.status_code != 401  # answered by the app (its CORS middleware), not refused for lack of a token
