"""`cfrag serve` on a store or graph that fails to open: the one line `cfrag ask` prints, and its exit code (D4).

On 6dca1af the server process left the failure to Hayhooks, which logged it for each pipeline:
73-82 lines with three tracebacks, where `ask` says one line. The server process now opens the
store, the graph and the models before Hayhooks starts (`serving.app.open_service`). Here the
server's `main` runs in this process (it returns before Hayhooks or uvicorn start) beside `cfrag ask`
on the same store; neither loads a model. `tests/integration/test_cli_errors.py` runs `cfrag serve` whole.
"""

import pytest

pytest.importorskip("hayhooks", reason="cfrag serve needs haystack-cfrag[serve]")

from click.testing import CliRunner  # noqa: E402
from haystack import Document
from haystack.document_stores.in_memory import InMemoryDocumentStore

from haystack_cfrag.cli import main
from haystack_cfrag.serving import app as serving_app
from haystack_cfrag.serving.service import reset_service

DEAD_PG = "pgvector:postgresql://cfrag:s3cr3t-P4ss@127.0.0.1:1/rag"  # nothing listens: refused at once


def corrupt_graph_store(folder):
    """A saved store whose graph beside it (`cfrag index --graph`'s place) is not an SQLite file."""
    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    store.write_documents([Document(id=f"p{i}", content=f"passage {i}", embedding=[1.0, float(i), 0.0] + [0.0] * 381)
                           for i in range(3)])
    path = folder / "store.json"
    store.save_to_disk(str(path))
    (folder / "store.graph").mkdir()
    (folder / "store.graph" / "graph.sqlite").write_text("name,age\nann,3\n")
    (folder / "store.graph" / "nodes.json").write_text("{}")
    return str(path)


@pytest.fixture
def isolated(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    for name in ("PG_CONN_STR", "CFRAG_DEBUG", "CFRAG_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    reset_service()
    yield tmp_path
    reset_service()
    from hayhooks.server.logger import log

    log.configure(patcher=None)  # `main` patches loguru's records for its process


def ask_line(store, pipeline):
    result = CliRunner().invoke(
        main, ["ask", "Who?", "--store", store, "--pipeline", pipeline, "--llm", "openai:http://127.0.0.1:1/v1"])
    return result.exit_code, result.stderr.strip().splitlines()[-1]


def serve_line(monkeypatch, capsys, store, pipeline):
    for name, value in {"CFRAG_STORE": store, "CFRAG_GENERATOR": "mock", "CFRAG_PIPELINES": pipeline}.items():
        monkeypatch.setenv(name, value)
    code = serving_app.main(["rest", "--pipelines-dir", ".", "--port", "1"])
    out = capsys.readouterr()
    return code, out.out + out.err


@pytest.mark.parametrize("case", ["dead pgvector store", "corrupt graph"])
def test_the_server_says_the_one_line_ask_says_and_exits_as_ask_does(isolated, monkeypatch, capsys, case):
    store, pipeline = (DEAD_PG, "cf_rag") if case == "dead pgvector store" else (
        corrupt_graph_store(isolated), "causal_rag")
    ask_code, line = ask_line(store, pipeline)
    assert ask_code == 1 and line.startswith("Error: "), line
    code, output = serve_line(monkeypatch, capsys, store, pipeline)
    assert (code, output.strip().splitlines()) == (ask_code, [line]), output
    assert "Traceback" not in output and "s3cr3t" not in output


def test_cfrag_debug_shows_the_servers_traceback(isolated, monkeypatch, capsys):
    monkeypatch.setenv("CFRAG_DEBUG", "1")
    with pytest.raises(Exception, match="connection"):
        serve_line(monkeypatch, capsys, DEAD_PG, "cf_rag")
