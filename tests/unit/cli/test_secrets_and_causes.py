"""The CLI's errors show no password and say the cause (issue 62, D8 and D12).

D8: `cfrag ask` and `cfrag serve` printed the pgvector password for a malformed URI, a
`?password=` parameter, an empty user name and a raw '@' in the password. Each is now refused
before anything loads or connects, in one redacted line (exit 2). D12: a YAML pipeline Haystack
cannot build was reported by the first line of Haystack's message, cut before its cause.
"""

import pytest
from click.testing import CliRunner

import haystack_cfrag.cli.serve as cli_serve
from haystack_cfrag.cli import main

PASSWORD = "s3cr3t-P4ss"
HOST = "127.0.0.1:1"  # nothing listens: a store that would be opened fails at once, with no network

# (form, store spec): each printed the password on 6dca1af
SPECS = [
    ("malformed URI", f"pgvector:postgresql:/me:{PASSWORD}@{HOST}/rag"),
    ("?password= parameter", f"pgvector:postgresql://me@{HOST}/rag?password={PASSWORD}#drop table"),
    ("empty user", f"pgvector:postgresql://:{PASSWORD}@{HOST}/rag#drop table"),
    ("raw @ in the password", f"pgvector:postgresql://me:s3cr@t-P4ss@{HOST}/rag"),
    ("URI libpq cannot read", f"pgvector:postgresql://me:{PASSWORD}@[::1/rag"),
]


def leaked(text: str) -> list[str]:
    return [piece for piece in ("s3cr3t", "P4ss", "s3cr@t") if piece in text]


@pytest.fixture
def cli(tmp_path, monkeypatch):
    """`cfrag ARGS` in tmp_path; `serve` stops before starting the server."""
    monkeypatch.setattr(cli_serve, "run_children", lambda commands, env: 0)
    monkeypatch.delenv("PG_CONN_STR", raising=False)
    monkeypatch.delenv("CFRAG_DEBUG", raising=False)
    monkeypatch.chdir(tmp_path)
    return lambda *args: CliRunner().invoke(main, list(args))


@pytest.mark.parametrize("command", ["ask", "serve"])
@pytest.mark.parametrize(("form", "spec"), SPECS, ids=[s[0] for s in SPECS])
def test_no_form_of_pgvector_password_is_printed(cli, command, form, spec):
    if form in ("raw @ in the password", "URI libpq cannot read"):
        pytest.importorskip("psycopg", reason="libpq's own parser reads these (haystack-cfrag[stores])")
    args = ["ask", "Who?"] if command == "ask" else ["serve", "--mock"]
    result = cli(*args, "--store", spec)
    assert result.exit_code == 2, result.output
    assert result.output.startswith("Error: Invalid value for --store") and len(result.output.splitlines()) == 1
    assert leaked(result.output) == [], result.output


def test_an_unexpected_error_holding_a_password_is_printed_redacted(cli, monkeypatch):
    from haystack_cfrag.cli import app

    def fail(*_args, **_kwargs):
        raise KeyError(f"postgresql://me:{PASSWORD}@db/x")  # not one of the errors `ask` expects

    monkeypatch.setattr(app, "_runtime", fail)
    result = cli("ask", "Who?", "--llm", "openai:http://127.0.0.1:1/v1")
    assert result.exit_code == 1 and "postgresql://me:***@db/x" in result.output and leaked(result.output) == []


UNBUILDABLE = """
components:
  graph_retriever:
    type: haystack_cfrag.causal_rag.components.causal_graph_retriever.CausalGraphRetriever
    init_parameters:
      graph: "pgvector:postgresql://me:{password}@db.example/rag#docs"
      top_k: 0
      hops: 2
      max_edges: 50
      max_documents: 5
      filters: {{meta.kind: {{"$eq": "a long filter value that pads the data Haystack quotes past 300 characters"}}}}
connections: []
"""


def test_a_yaml_haystack_cannot_build_is_one_line_with_its_cause_and_no_password(cli, tmp_path):
    (tmp_path / "bad.yml").write_text(UNBUILDABLE.format(password=PASSWORD))
    result = cli("ask", "Who?", "--pipeline", "bad.yml")
    assert result.exit_code == 2 and len(result.output.splitlines()) == 1, result.output
    assert "Haystack cannot build this pipeline: Couldn't deserialize component 'graph_retriever'" in result.output
    assert "'top_k' must be" in result.output  # the cause, which the first line of Haystack's message leaves out
    assert leaked(result.output) == [], result.output
