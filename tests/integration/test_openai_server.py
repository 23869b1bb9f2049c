"""An OpenAI-compatible generator against a REAL local server: llama.cpp's server with the embedded GGUF.

The test starts `python -m llama_cpp.server` on a free port, talks to it through the `openai:URL#model`
spec (Haystack's OpenAIChatGenerator with `api_base_url`), runs cf_rag_fast with two drafts sent
concurrently, and stops the server. vLLM and TGI expose the same API (docs/deployment.md).
"""

import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import pytest
from haystack.dataclasses import ChatMessage

from haystack_cfrag import models
from haystack_cfrag.adapters import factories
from haystack_cfrag.cfrag.trace import duel_readings
from haystack_cfrag.pipelines import pipeline_path
from haystack_cfrag.runtime import Runtime
from haystack_cfrag.stores import open_model_store

QUESTION = "Who is the lead actor in The Dark Knight?"
ALIAS = "cfrag-qwen"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    """`python -m llama_cpp.server` serving the embedded GGUF on 127.0.0.1; killed after the module."""
    port = free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", models.resolve_model(models.EMBEDDED_LLM),
           "--model_alias", ALIAS, "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096",
           "--n_threads", str(min(4, os.cpu_count() or 1)), "--verbose", "False"]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"llama_cpp.server did not start (exit {proc.poll()}):\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_openai_spec_talks_to_the_server(llama_server):
    gen = factories.chat_generator(f"openai:{llama_server}#{ALIAS}", max_tokens=16)
    assert gen.api_base_url == llama_server and gen.model == ALIAS
    reply = gen.run(messages=[ChatMessage.from_user("Reply with one word: the capital of France?")])["replies"][0]
    assert "paris" in reply.text.lower()
    assert reply.meta["usage"]["prompt_tokens"] > 0


def test_cf_rag_fast_through_the_server_with_concurrent_drafts(llama_server):
    rt = Runtime(store=open_model_store(), llm=f"openai:{llama_server}#{ALIAS}", max_tokens=48)
    assert not rt.models.sequential  # a server: drafts may run at once
    calls: list[tuple[float, float]] = []
    inner = rt.generator.run
    lock = threading.Lock()

    def timed_run(*args, **kwargs):
        start = time.monotonic()
        try:
            return inner(*args, **kwargs)
        finally:
            with lock:
                calls.append((start, time.monotonic()))

    rt.generator.run = timed_run
    # cf_rag_fast asks no counterfactuals (N = 0); with two challengers, the baseline and the
    # challengers go to the server two at a time.
    params = {"n_subsets": 2, "draft_workers": 2}
    result = rt.ask("cf_rag_fast", QUESTION, params)
    assert rt.built(pipeline_path("cf_rag_fast"), {"draft_workers": 2}).get_component("drafter").max_workers == 2
    assert result.answer.strip() and len(result.trace["drafts"]) == 1 + 2
    assert not any(d.get("error") for d in result.trace["drafts"])
    # the baseline, two challengers (and the duel)
    assert result.llm["calls"] == len(calls) == 3 + duel_readings(result.trace)
    ordered = sorted(calls)
    assert any(b[0] < a[1] for a, b in zip(ordered, ordered[1:], strict=False)), f"drafts did not overlap: {calls}"
    assert rt.generator.timeout >= 120  # queued behind each other on a busy server
