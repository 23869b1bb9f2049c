"""Issue 62, D1 and D2 through the real command: `cfrag ask` and `cfrag serve` on a store whose stored graph is hostile
end with one line naming the file, where before they hung (Ctrl-C ignored, killed at 60 s).

The store is a FAISS store with its graph beside it (`tests/unit/stores/hostile_stores.graph_store`, no model);
the graph is opened before any model loads (`Runtime.prepare_stores`), so the reader is never reached. A hang
shows here as `subprocess.TimeoutExpired`.
"""

import os
import sqlite3

import pytest

from haystack_cfrag.causal_rag.stored_graph import graph_home
from tests.integration.test_cli_errors import QUESTION, cfrag
from tests.server import free_port
from tests.unit.stores.hostile_stores import graph_store

pytest.importorskip("faiss")
DEAD_LLM = "openai:http://127.0.0.1:{port}/v1"


def _fifo_nodes(tmp_path):
    spec = graph_store(tmp_path, "faiss")
    fifo = graph_home(spec).sqlite.parent / "nodes.faiss"
    fifo.unlink()
    os.mkfifo(fifo)
    return spec, fifo


def _endless_meta(tmp_path):
    spec = graph_store(tmp_path, "faiss")
    path = graph_home(spec).sqlite
    with sqlite3.connect(path) as conn:
        conn.execute('DROP TABLE "cfrag_graph_meta"')
        conn.execute('CREATE VIEW "cfrag_graph_meta" AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 '
                     "FROM c) SELECT 'format' AS key, 'x' AS value FROM c WHERE x = 0")
    return spec, path


@pytest.mark.parametrize("make, part", [(_fifo_nodes, "FIFO"), (_endless_meta, "holds view 'cfrag_graph_meta'")])
def test_ask_on_a_hostile_stored_graph_is_one_line_not_a_hang(tmp_path, make, part):
    spec, path = make(tmp_path)
    code, output = cfrag("ask", QUESTION, "--pipeline", "causal_rag", "--store", spec,
                         "--llm", DEAD_LLM.format(port=free_port()), cwd=tmp_path, timeout=300)
    last = output.strip().splitlines()[-1]
    assert code == 1 and last.startswith("Error: ") and part in last and str(path) in last, output
    assert "Traceback" not in output


def test_serve_on_a_graph_file_holding_a_recursive_view_exits_instead_of_hanging(tmp_path):
    spec, path = _endless_meta(tmp_path)
    code, output = cfrag("serve", "--mock", "--pipeline", "causal_rag", "--store", spec, "--port", str(free_port()),
                         cwd=tmp_path, timeout=300)
    assert code != 0 and "holds view 'cfrag_graph_meta'" in output and str(path) in output, output
    assert "Traceback" not in output
