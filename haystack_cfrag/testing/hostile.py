"""Hostile and careless requests to a served CF-RAG (raw bytes: NaN, Infinity, deep nesting), with the answer each
must get: for the HTTP tests and the load run (`benchmarks/load_test.py --hostile-share`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

SERVED_ARGS = ["--mock", "--pipeline", "cf_rag", "--pipeline", "standard_rag", "--yaml", "cf_rag_fast"]
SERVED_PIPELINES = ["cf_rag", "standard_rag", "cf_rag_fast_yaml"]
# a pipeline_wrapper.py that, when Hayhooks imports it, writes a marker file: proof that posted code ran
MARKER_CODE = """import pathlib
from hayhooks import BasePipelineWrapper
pathlib.Path({path!r}).write_text("ran")


class PipelineWrapper(BasePipelineWrapper):
    def setup(self) -> None:
        self.pipeline = None

    def run_api(self, text: str) -> str:
        return text
"""


@dataclass(frozen=True)
class Hostile:
    """One request (method POST) and the status and message fragment it must get."""

    name: str
    path: str
    body: bytes
    status: int
    message: str
    headers: tuple[tuple[str, str], ...] = field(default=(("content-type", "application/json"),))


JSON_HEADERS = (("content-type", "application/json"),)
HUGE_INT = "1" + "0" * 400  # 401 digits: an int, too large for a float (issue #23)
LONE_SURROGATE = "\ud800"


def worst_case_cleaning(marks: int = 30_000) -> bytes:
    """A `/cf_rag/run` body whose question is one letter and `marks` U+0301 then `marks` U+0316: combining marks
    NFKC sorts in quadratic time."""
    return json.dumps({"question": "a" + "\u0301" * marks + "\u0316" * marks}, ensure_ascii=False).encode()


def _json(data: Any) -> bytes:
    return json.dumps(data).encode()


def _chat(**extra: Any) -> dict[str, Any]:
    return {"model": "cf_rag", "messages": [{"role": "user", "content": "Who is Batman?"}], **extra}


def deploy_body(marker: str) -> dict[str, Any]:
    """A /deploy_files body whose wrapper writes `marker` when it is imported."""
    return {"name": "evil", "files": {"pipeline_wrapper.py": MARKER_CODE.format(path=marker)}, "overwrite": True}


def hostile_requests(marker: str = "/nonexistent/cfrag-marker") -> list[Hostile]:
    """Every case; `marker` is the file the deploy payload would write if it ran."""
    run = "/cf_rag/run"
    return [
        Hostile("NaN", run, b'{"question": "Who?", "causal_weight": NaN}', 422,
                "'causal_weight' must be a finite number"),
        Hostile("Infinity", run, b'{"question": "Who?", "n_counterfactuals": Infinity}', 422,
                "'n_counterfactuals' must be a finite number"),
        Hostile("1e309", run, b'{"question": "Who?", "causal_weight": 1e309}', 422, "got 1e309"),
        Hostile("string number", run, _json({"question": "Who?", "causal_weight": "0.5"}), 422,
                "'causal_weight' must be a number in [0, 1], got a string"),
        Hostile("fraction for an integer", run, _json({"question": "Who?", "n_subsets": 2.5}), 422,
                "'n_subsets' must be an integer in [1, 20], got 2.5"),
        Hostile("boolean", run, _json({"question": "Who?", "n_clusters": True}), 422, "'n_clusters' must be"),
        Hostile("out of range", run, _json({"question": "Who?", "n_counterfactuals": 99}), 422,
                "'n_counterfactuals' must be an integer in [0, 10], got 99"),
        Hostile("unknown field", run, _json({"question": "Who?", "top_k": 500}), 422, "Unknown field(s) 'top_k'"),
        Hostile("control characters only", run, _json({"question": "\u0000\u0007\u001b\u202e\u200b"}), 422,
                "'question' is empty"),
        Hostile("no question", run, _json({"n_subsets": 2}), 422, "'question' is required"),
        Hostile("not an object", run, _json(["Who?"]), 422, "must be a JSON object"),
        Hostile("malformed JSON", run, b'{"question": ', 422, "not valid JSON"),
        Hostile("deep nesting", run, b"[" * 50_000, 422, "nested too deeply"),
        Hostile("question too long", run, _json({"question": "x" * 2001}), 422, "longer than 2000"),
        Hostile("2 MB body", run, _json({"question": "x" * (2 << 20)}), 413, "larger than"),
        Hostile("N for standard RAG", "/standard_rag/run", _json({"question": "Who?", "n_subsets": 2}), 422,
                "Unknown field(s) 'n_subsets'"),
        Hostile("blank YAML query", "/cf_rag_fast_yaml/run", _json({"query": " \t"}), 422, "'query' is empty"),
        Hostile("unknown YAML input", "/cf_rag_fast_yaml/run", _json({"query": "Who?", "x": 1}), 422,
                "Unknown field(s) 'x'"),
        Hostile("chat NaN", "/v1/chat/completions",
                b'{"model": "cf_rag", "messages": [{"role": "user", "content": "Who?"}], "causal_weight": NaN}',
                422, "'causal_weight' must be a finite number"),
        Hostile("chat messages NaN", "/v1/chat/completions", b'{"model": "cf_rag", "messages": NaN}', 422,
                "'messages' must be a finite number"),
        Hostile("chat messages not a list", "/v1/chat/completions", _json({"model": "cf_rag", "messages": "hi"}),
                422, "messages"),
        Hostile("chat unknown field", "/v1/chat/completions", _json(_chat(causal_wieght=0.3)), 422,
                "Unknown field(s) 'causal_wieght'"),
        Hostile("chat string number", "/v1/chat/completions", _json(_chat(n_subsets="2")), 422,
                "'n_subsets' must be an integer"),
        Hostile("chat control characters only", "/v1/chat/completions",
                _json({"model": "cf_rag", "messages": [{"role": "user", "content": "\u0001\u202e"}]}), 422,
                "is empty"),
        Hostile("chat without user message", "/v1/chat/completions",
                _json({"model": "cf_rag", "messages": [{"role": "system", "content": "x"}]}), 422,
                "holds no user message"),
        Hostile("responses unknown field", "/v1/responses", _json({"model": "cf_rag", "input": "Who?", "foo": 1}),
                422, "Unknown field(s) 'foo'"),
        Hostile("deploy code", "/deploy_files", _json(deploy_body(marker)), 404, "Not Found"),
        Hostile("deploy YAML", "/deploy-yaml", _json({"name": "evil", "source_code": "components: {}"}), 404,
                "Not Found"),
        Hostile("undeploy", "/undeploy/cf_rag", b"", 404, "Not Found"),
        # issue #23: bounded before cleaning, numbers without float overflow, lone surrogates
        Hostile("worst-case cleaning 120 KB", run, worst_case_cleaning(), 422,
                "'question' is longer than 8000 characters before cleaning"),
        Hostile("worst-case cleaning 8000 characters", run, worst_case_cleaning(3999), 422,
                "'question' is longer than 2000 characters"),
        Hostile("chat worst-case cleaning", "/v1/chat/completions",
                _json({"model": "cf_rag", "messages": [{"role": "user", "content": "a" + "\u0301\u0316" * 30_000}]}),
                422, "'messages[-1].content' is longer than 8000 characters before cleaning"),
        Hostile("YAML worst-case cleaning", "/cf_rag_fast_yaml/run", _json({"query": "a" + "\u0301" * 9000}), 422,
                "'query' is longer than 8000 characters before cleaning"),
        Hostile("900 KB of zero-width characters", run,
                json.dumps({"question": "Who is Batman?" + "\u200b" * 300_000}, ensure_ascii=False).encode(), 422,
                "'question' is longer than 8000 characters before cleaning"),
        Hostile("huge integer", run, f'{{"question": "Who?", "n_subsets": {HUGE_INT}}}'.encode(), 422,
                "'n_subsets' must be an integer in [1, 20], got 100000000000"),
        Hostile("huge negative integer for a number", run,
                f'{{"question": "Who?", "causal_weight": -{HUGE_INT}}}'.encode(), 422,
                "'causal_weight' must be a number in [0, 1], got -10000000000"),
        Hostile("chat huge integer", "/v1/chat/completions",
                _json(_chat())[:-1] + f', "n_counterfactuals": {HUGE_INT}}}'.encode(), 422,
                "'n_counterfactuals' must be an integer in [0, 10]"),
        Hostile("responses huge integer", "/v1/responses",
                f'{{"model": "cf_rag", "input": "Who?", "causal_weight": {HUGE_INT}}}'.encode(), 422,
                "'causal_weight' must be a number in [0, 1]"),
        Hostile("YAML huge integer as the query", "/cf_rag_fast_yaml/run", f'{{"query": {HUGE_INT}}}'.encode(), 422,
                "'query' must be a string, got int"),
        Hostile("chat lone-surrogate model", "/v1/chat/completions", _json(_chat(model=LONE_SURROGATE)), 422,
                "'model' is not Unicode text"),
        Hostile("responses lone-surrogate model", "/v1/responses",
                _json({"model": LONE_SURROGATE, "input": "Who?"}), 422, "'model' is not Unicode text"),
        Hostile("lone-surrogate question", run, _json({"question": "Who\udc80?"}), 422,
                "'question' is not Unicode text"),
    ]


def hostile_header_requests() -> list[Hostile]:
    """Cases that need headers of their own: two Content-Type headers, each order (issue #23)."""
    run = "/cf_rag/run"
    json_then_text = (("content-type", "application/json"), ("content-type", "text/plain"))
    return [
        Hostile("two content types, JSON first", run, _json({"question": "x" * 25_000}), 400,
                "2 Content-Type headers", json_then_text),
        Hostile("two content types, text first", run, _json({"question": "Who?", "top_k": 500}), 400,
                "2 Content-Type headers", json_then_text[::-1]),
        Hostile("two content types, chat", "/v1/chat/completions", _json(_chat()), 400, "2 Content-Type headers",
                json_then_text),
    ]


def all_hostile_requests(marker: str = "/nonexistent/cfrag-marker") -> list[Hostile]:
    """`hostile_requests` and `hostile_header_requests`: what the load run mixes in."""
    return [*hostile_requests(marker), *hostile_header_requests()]
