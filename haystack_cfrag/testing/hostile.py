"""Hostile and careless requests to a served CF-RAG, with the answer each must get (issue #18).

Shared by the HTTP tests (`tests/integration/test_serving.py`) and the load run
(`scripts/load_test.py --hostile-share`), against `cfrag serve --mock --pipeline cf_rag
--pipeline standard_rag --yaml cf_rag_fast`. Bodies are raw bytes: NaN, Infinity and deep
nesting cannot be written by a JSON encoder, which is the point.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
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
    ]
