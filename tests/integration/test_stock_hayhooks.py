"""The shipped YAML files on stock Hayhooks (`hayhooks run --pipelines-dir`), with no code of ours in the server.

Only the documented allowlist setting (`HAYSTACK_DESERIALIZATION_ALLOWLIST=haystack_cfrag`) is
set: the `embedded:` model names are resolved by the components themselves when their models
load, so the first request answers. The folder served is the checkout's top-level `pipelines/`,
unchanged: `hayhooks run --pipelines-dir pipelines`, as docs/serving.md says.
"""

from pathlib import Path

import httpx
import pytest

from haystack_cfrag.registry import REGISTRY
from tests.server import stock_hayhooks

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"


@pytest.fixture(scope="module")
def stock_server():
    # flat YAML and nothing else: Hayhooks deploys every *.y*ml and takes every subfolder for a wrapper
    assert sorted(p.name for p in PIPELINES.iterdir()) == sorted(f"{name}.yml" for name in REGISTRY)
    with stock_hayhooks(PIPELINES, expect=list(REGISTRY),
                        env={"HAYSTACK_DESERIALIZATION_ALLOWLIST": "haystack_cfrag"}) as server:
        yield server


def test_first_request_answers_with_the_embedded_models(stock_server):
    reply = httpx.post(f"{stock_server.url}/standard_rag/run", json={"query": "Who directed the film Heat?"},
                       timeout=300)
    assert reply.status_code == 200, reply.text
    answers = reply.json()["result"]["answer_builder"]["answers"]
    assert answers and answers[0]["data"].strip()
    # the store is the file's empty in-memory store: an answer without evidence, from the model alone
    assert answers[0]["documents"] == []


def test_cf_rag_runs_and_reports_its_trace(stock_server):
    reply = httpx.post(f"{stock_server.url}/cf_rag_fast/run", json={"query": "Who directed the film Heat?"},
                       timeout=300)
    assert reply.status_code == 200, reply.text
    trace = reply.json()["result"]["duel"]["trace"]
    assert trace["query"] == "Who directed the film Heat?"
    # the baseline and the challenger were drafted; with an empty store both say why they have no answer
    assert sorted(d["index"] for d in trace["drafts"]) == [0, 1]
    assert all(d["error"] == "no evidence" for d in trace["drafts"])


@pytest.mark.parametrize("body", ['{"quer": "Who directed Heat?"}', '{"query": ', '{"query": 5}', "[]"])
def test_malformed_bodies_get_a_4xx(stock_server, body):
    reply = httpx.post(f"{stock_server.url}/standard_rag/run", content=body,
                       headers={"Content-Type": "application/json"}, timeout=60)
    assert 400 <= reply.status_code < 500, (body, reply.status_code, reply.text)
