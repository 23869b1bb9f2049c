"""Issue 62, "opening a store never trusts it": hostile files in a store or beside it, each refused in one line.

Every opening runs in a bounded child (`hostile_stores.opened_in_child`: 3 GB of address space, 30 s): before,
D1 and D2 hung for ever and D3 allocated what a file claimed. Each case asserts one line, within seconds, and that
the opening's memory grew by less than 200 MB.
"""

import os
import sqlite3
import struct
from pathlib import Path

import pytest

from haystack_cfrag.causal_rag.stored_graph import check_home, graph_home

from .hostile_stores import assert_refused_fast, graph_store, opened_in_child

pytest.importorskip("faiss")
pytest.importorskip("haystack_integrations.document_stores.faiss")

ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)"


def _graph_file(spec: str) -> Path:
    return graph_home(spec).sqlite


def _as_view(spec: str, table: str, select: str) -> None:
    with sqlite3.connect(_graph_file(spec)) as conn:
        conn.execute(f'DROP TABLE "cfrag_graph_{table}"')
        conn.execute(f'CREATE VIEW "cfrag_graph_{table}" AS {ENDLESS} {select}')


# ------------------------------------------------------------------ D1: a recursive view in the graph file
@pytest.mark.parametrize("table, select", [
    # never yields a row and never ends: `ask` and `serve` hung with Ctrl-C ignored
    ("meta", "SELECT 'format' AS key, 'x' AS value FROM c WHERE x = 0"),
    # rows without end: the variant that reached 3.5 GB in 17 s
    ("meta", "SELECT 'k' || x AS key, printf('%.2000c', 'x') AS value FROM c"),
    # the nodes table: counted when the graph opens
    ("nodes", "SELECT 'k' || x AS key, 'n' AS node_id, 'e' AS node_type, '[]' AS passage_ids FROM c"),
])
def test_d1_a_graph_file_holding_a_recursive_view_is_refused_before_it_runs(tmp_path, table, select):
    spec = graph_store(tmp_path)
    _as_view(spec, table, select)
    assert_refused_fast(opened_in_child(spec), "holds view", f"cfrag_graph_{table}", str(_graph_file(spec)))


def test_d1_a_trigger_or_an_extra_table_is_refused_and_a_slow_statement_is_interrupted(tmp_path):
    from haystack_cfrag.causal_rag import sqlite_guard

    spec = graph_store(tmp_path)
    path = _graph_file(spec)
    with sqlite3.connect(path) as conn:
        conn.execute('CREATE TRIGGER t AFTER INSERT ON "cfrag_graph_meta" BEGIN SELECT 1; END')
    with pytest.raises(ValueError, match="holds trigger 't'"):
        sqlite_guard.open_tables(path, readonly=True)
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TRIGGER t")
    tables = sqlite_guard.open_tables(path, readonly=True)  # exactly its tables again: opens
    sqlite_guard.deadline(tables.connection, 0.2)
    with pytest.raises(sqlite3.OperationalError, match="interrupted"):  # any statement past its deadline
        tables._rows(f"{ENDLESS} SELECT x FROM c WHERE x = 0")
    tables.close()


def test_d1_a_graph_opened_to_read_is_opened_read_only(tmp_path):
    from haystack_cfrag.causal_rag import sqlite_guard

    spec = graph_store(tmp_path)
    tables = sqlite_guard.open_tables(_graph_file(spec), readonly=True)
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        tables.set_meta(x="1")
    tables.close()


# ------------------------------------------------------------------ D2: a FIFO in place of a file
@pytest.mark.parametrize("kind, name", [("memory", "nodes.json"), ("faiss", "nodes.faiss"), ("faiss", "nodes.json")])
def test_d2_a_fifo_in_the_graph_folder_is_refused_without_waiting_for_a_writer(tmp_path, kind, name):
    spec = graph_store(tmp_path, kind)
    fifo = _graph_file(spec).parent / name
    fifo.unlink()
    os.mkfifo(fifo)
    assert_refused_fast(opened_in_child(spec), str(fifo), "FIFO")


def test_d2_a_fifo_as_the_stores_own_file_is_refused(tmp_path):
    spec = graph_store(tmp_path, "faiss")
    fifo = tmp_path / "s.faiss"
    fifo.unlink()
    os.mkfifo(fifo)
    assert_refused_fast(opened_in_child(spec, what="store"), str(fifo), "FIFO")


# ------------------------------------------------------------------ D3: files that claim or hold too much
def _claim(vectors: int, dim: int) -> bytes:
    """An IndexIDMap(IndexFlatL2) header claiming `vectors` × `dim` floats, and nothing after the claim."""
    header = struct.pack("<iqqqBi", dim, vectors, 1 << 20, 1 << 20, 1, 1)
    return b"IxMp" + header + b"IxF2" + header + struct.pack("<Q", vectors * dim)


def test_d3_a_faiss_header_claiming_more_than_its_file_holds_is_refused_before_faiss_allocates(tmp_path):
    spec = graph_store(tmp_path, "faiss")
    # 1,000,000 × 384 floats: 1.5 GB that faiss zero-filled before its read failed (3,000,000: 4.6 GB, past 5.6)
    (_graph_file(spec).parent / "nodes.faiss").write_bytes(_claim(1_000_000, 384))
    assert_refused_fast(opened_in_child(spec), "nodes.faiss", "claims 384000000 × 4 bytes")
    (tmp_path / "s.faiss").write_bytes(_claim(1_000_000, 384))  # the store's own index: the same reader
    assert_refused_fast(opened_in_child(spec, what="store"), "s.faiss", "claims")


def test_d3_dev_zero_linked_as_the_node_vectors_is_refused(tmp_path):
    spec = graph_store(tmp_path)
    nodes = _graph_file(spec).parent / "nodes.json"
    nodes.unlink()
    nodes.symlink_to("/dev/zero")
    assert_refused_fast(opened_in_child(spec), str(nodes), "link out of its folder")


@pytest.mark.parametrize("head", [b"", b'{"documents": ['])
def test_d3_a_sparse_gigabyte_is_refused_without_reading_it_into_memory(tmp_path, head):
    spec = graph_store(tmp_path, "faiss")  # faiss-haystack read its documents' JSON whole: 2.5 GB before its error
    nodes = _graph_file(spec).parent / "nodes.json"
    with nodes.open("wb") as fh:
        fh.write(head)
        fh.truncate(1 << 30)  # 1 GB of holes: read as NUL bytes
    assert_refused_fast(opened_in_child(spec), str(nodes), seconds=15)


# ------------------------------------------------------------------ D5: the graph folder is the package's
def test_d5_a_users_folder_named_like_the_graph_folder_is_refused_and_left_as_it_was(tmp_path):
    spec = f"faiss:{tmp_path / 's'}"
    folder = tmp_path / "s.graph"
    folder.mkdir()
    (folder / "nodes.json").write_text('{"mine": true}')
    home = graph_home(spec)
    with pytest.raises(ValueError, match=r"s\.graph was not created by cfrag .*nothing written") as info:
        check_home(spec, home)
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="was not created by cfrag"):
        home.tables(create=True)
    assert sorted(p.name for p in folder.iterdir()) == ["nodes.json"]
    assert (folder / "nodes.json").read_text() == '{"mine": true}'


def test_d5_a_link_at_the_graph_folder_is_refused_and_nothing_written_through_it(tmp_path):
    spec = f"faiss:{tmp_path / 's'}"
    target = tmp_path / "elsewhere"
    target.mkdir()
    (tmp_path / "s.graph").symlink_to(target, target_is_directory=True)
    home = graph_home(spec)
    for attempt in (lambda: check_home(spec, home), lambda: home.tables(create=True)):
        with pytest.raises(ValueError, match=r"s\.graph is a link"):
            attempt()
    assert list(target.iterdir()) == []


def test_d5_the_package_creates_and_marks_its_folder_and_keeps_a_graph_written_before_the_marker(tmp_path):
    from haystack_cfrag.causal_rag.graph_folder import MARKER

    spec = graph_store(tmp_path, "faiss")
    folder = tmp_path / "s.graph"
    assert (folder / MARKER).is_file()
    check_home(spec, graph_home(spec))
    (folder / MARKER).unlink()  # a graph folder from before the marker: its graph file is the package's
    graph_home(spec).tables(create=True).close()
    assert (folder / MARKER).is_file()
