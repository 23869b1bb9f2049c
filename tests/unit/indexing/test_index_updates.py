"""Issue 62 (D16, D17, D6, D14): `cfrag index` replaces, removes and keeps passages so that the store and its
graph hold exactly what the files hold now; it refuses in one line, before writing anything, a graph it
cannot write, and a store another `cfrag index` is writing.

Before: a changed JSONL line was "kept" (the edit dropped), an edited file added its new passage beside the
old one, nothing removed a passage; duplicate ids in one file left a vector no passage owned; a read-only
graph failed with "OperationalError: attempt to write a readonly database" after the passages were
written; a second run into a store wrote over the first's passages.
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import time

import pytest
from click.testing import CliRunner

from haystack_cfrag.adapters import factories
from haystack_cfrag.cli import main
from haystack_cfrag.stores import open_document_store
from tests.fakes import HashingDocumentEmbedder, HashingTextEmbedder
from tests.store_integrity import store_fingerprint
from tests.unit.indexing.child import WordGraphExtractor


@pytest.fixture
def fakes(monkeypatch, tmp_path):
    """Seeded hashing embedders and the word-graph extractor in place of the models and spaCy."""
    from haystack_cfrag.causal_rag import extraction_run

    embedder = HashingDocumentEmbedder(dimension=16)
    embedder.warm_up = lambda: None
    monkeypatch.setattr(factories, "document_embedder", lambda *_a, **_k: embedder)
    monkeypatch.setattr(factories, "text_embedder", lambda *_a, **_k: HashingTextEmbedder(dimension=16))
    monkeypatch.setattr(extraction_run, "make_extractor", lambda *_a, **_k: WordGraphExtractor())
    monkeypatch.setenv("CFRAG_CACHE_DIR", str(tmp_path / "cache"))
    return embedder


def index(*args, code=0):
    result = CliRunner().invoke(main, ["index", *map(str, args)])
    assert result.exit_code == code, result.output
    return result


def summary(result) -> str:
    return next(line for line in result.stdout.splitlines() if " files → " in line)


def jsonl(path, rows):
    path.write_text("".join(json.dumps({"source": path.stem, **r}) + "\n" for r in rows), encoding="utf-8")
    return path


def contents(spec):
    store = open_document_store(spec, faiss_device=-1) if spec.startswith("faiss:") else open_document_store(spec)
    if spec.startswith("faiss:"):  # no vector without its passage
        assert store.index.ntotal == store.count_documents()
    return sorted(d.content for d in store.filter_documents())


SPECS = {"memory": "store.json", "faiss": "faiss:{tmp}/store", "faiss-hnsw": "faiss:{tmp}/store#HNSW32"}


@pytest.fixture(params=list(SPECS))
def spec(request, tmp_path):
    if request.param.startswith("faiss"):
        pytest.importorskip("faiss")
    return SPECS[request.param].format(tmp=tmp_path) if "{" in SPECS[request.param] else str(
        tmp_path / SPECS[request.param])


def test_d16_a_changed_line_replaces_its_passage(fakes, tmp_path, spec):
    a = jsonl(tmp_path / "a.jsonl", [{"id": "x", "content": "Rain causes floods."},
                                     {"id": "y", "content": "Floods close roads."}])
    assert "2 added, 0 replaced, 0 removed, 0 kept" in summary(index(a, "--store", spec))
    jsonl(a, [{"id": "x", "content": "Rain causes landslides."}, {"id": "y", "content": "Floods close roads."}])
    line = summary(index(a, "--store", spec))
    assert "0 added, 1 replaced, 0 removed, 1 kept" in line, line
    assert contents(spec) == ["Floods close roads.", "Rain causes landslides."]


def test_d16_an_edited_or_shortened_file_leaves_nothing_stale(fakes, tmp_path, spec):
    pytest.importorskip("mdit_plain", reason="Markdown files are converted by haystack-cfrag[files]")
    notes, other = tmp_path / "notes.md", jsonl(tmp_path / "other.jsonl", [{"id": "o", "content": "Kept apart."}])
    notes.write_text("# Rivers\n\nThe river flooded the valley in spring.\n", encoding="utf-8")
    lines = jsonl(tmp_path / "lines.jsonl", [{"id": f"l{i}", "content": f"Line {i} of three."} for i in range(3)])
    index(notes, lines, other, "--store", spec)
    notes.write_text("# Bridges\n\nThe new bridge opened in autumn.\n", encoding="utf-8")
    jsonl(lines, [{"id": "l0", "content": "Line 0 of three."}])
    line = summary(index(notes, lines, "--store", spec))
    assert "1 added, 0 replaced, 3 removed, 1 kept" in line, line
    assert [c for c in contents(spec) if "river" in c or "Line" in c] == ["Line 0 of three."]
    assert any("bridge" in c for c in contents(spec)) and "Kept apart." in contents(spec)


def test_d16_prune_removes_the_passages_of_files_gone_and_only_with_prune(fakes, tmp_path, spec):
    a = jsonl(tmp_path / "a.jsonl", [{"id": "a", "content": "From a file that stays."}])
    b = jsonl(tmp_path / "b.jsonl", [{"id": "b1", "content": "From a file that goes."},
                                     {"id": "b2", "content": "Also from it."}])
    index(a, b, "--store", spec)
    b.unlink()
    assert "0 removed, 1 kept" in summary(index(a, "--store", spec))  # not read, not asked to prune: kept
    assert len(contents(spec)) == 3
    line = summary(index("--prune", "--store", spec))
    assert "0 added, 0 replaced, 2 removed, 0 kept" in line and "store has 1" in line, line
    assert contents(spec) == ["From a file that stays."]


def test_d17_duplicate_ids_keep_the_last_line_and_leave_no_orphan_vector(fakes, tmp_path, spec):
    a = jsonl(tmp_path / "a.jsonl", [{"id": "x", "content": "First version."}, {"id": "y", "content": "Other."},
                                     {"id": "x", "content": "Second version."}])
    line = summary(index(a, "--store", spec))
    assert "1 passage(s) shared an id with a later one: the last of each kept" in line, line
    assert "2 added" in line and contents(spec) == ["Other.", "Second version."]  # FAISS: one vector each


def test_paths_or_prune_are_needed(fakes, tmp_path):
    result = index("--store", str(tmp_path / "s.json"), code=2)
    assert "--prune" in result.output and "Traceback" not in result.output


# ------------------------------------------------------------------ the graph follows the files
def graph_state(spec):
    from haystack_cfrag.causal_rag.stored_graph import graph_home

    home = graph_home(spec)
    with sqlite3.connect(home.sqlite) as db:
        nodes = {r[0] for r in db.execute('SELECT node_id FROM "cfrag_graph_nodes"')}
        passages = {r[0] for r in db.execute('SELECT id FROM "cfrag_graph_passages"')}
        meta = dict(db.execute('SELECT key, value FROM "cfrag_graph_meta"').fetchall())
    node_store = open_document_store(home.nodes, faiss_device=-1)
    vectors = {d.content for d in node_store.filter_documents()}
    if hasattr(node_store, "index"):
        assert node_store.index.ntotal == node_store.count_documents()
    return nodes, passages, vectors, meta


def test_the_graph_holds_exactly_the_current_files(fakes, tmp_path):
    pytest.importorskip("faiss")
    spec = f"faiss:{tmp_path / 'store'}"
    a = jsonl(tmp_path / "a.jsonl", [{"id": "x", "content": "Storms damaged harbour cranes."},
                                     {"id": "y", "content": "Tourism collapsed afterwards."}])
    b = jsonl(tmp_path / "b.jsonl", [{"id": "z", "content": "Glaciers feed mountain rivers."}])
    index(a, b, "--store", spec, "--graph")
    jsonl(a, [{"id": "x", "content": "Storms damaged fishing boats."}])  # x changed, y gone
    b.unlink()
    index(a, "--store", spec, "--graph", "--prune")
    nodes, passages, vectors, meta = graph_state(spec)
    assert passages == {"x"} and meta["state"] == "complete"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "cache", "store.faiss", "store.graph",
                                                          "store.json"]  # no lock file left behind
    assert nodes == vectors == {"Storms", "damaged", "fishing", "boats"}  # no node (or vector) of a text gone
    from haystack_cfrag.causal_rag.stored_graph import open_stored_graph

    graph = open_stored_graph(spec)
    try:  # retrieval: a word of the removed text reaches nothing, one of the current text its passage
        assert graph.tables.node_documents(["Glaciers", "Tourism", "harbour"]) == []
        assert graph.tables.node_documents(["boats"])[0].meta["passage_ids"] == ["x"]
    finally:
        graph.close()


def test_d6_a_graph_that_cannot_be_written_is_refused_before_any_passage_is_written(fakes, tmp_path, monkeypatch):
    pytest.importorskip("faiss")
    from haystack_cfrag.causal_rag.graph_tables import GraphTables

    spec = f"faiss:{tmp_path / 'store'}"
    index(jsonl(tmp_path / "a.jsonl", [{"id": "a", "content": "Rain causes floods."}]), "--store", spec, "--graph")
    before = store_fingerprint(open_document_store(spec, faiss_device=-1))

    def read_only(self, **_values):
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setattr(GraphTables, "set_meta", read_only)
    result = index(jsonl(tmp_path / "b.jsonl", [{"id": "b", "content": "Floods close roads."}]), "--store", spec,
                   "--graph", code=1)
    last = result.output.strip().splitlines()
    assert len(last) == 1 and "store.graph/graph.sqlite cannot be written" in last[0] and "nothing written" in last[0]
    assert "Traceback" not in result.output and "OperationalError" not in result.output
    assert store_fingerprint(open_document_store(spec, faiss_device=-1)) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes a read-only file")
def test_d6_a_read_only_graph_file_is_named_before_any_model_loads(fakes, tmp_path):
    pytest.importorskip("faiss")
    spec = f"faiss:{tmp_path / 'store'}"
    index(jsonl(tmp_path / "a.jsonl", [{"id": "a", "content": "Rain causes floods."}]), "--store", spec, "--graph")
    (tmp_path / "store.graph" / "graph.sqlite").chmod(0o444)
    fakes.calls = 0
    result = index(jsonl(tmp_path / "b.jsonl", [{"id": "b", "content": "Floods close roads."}]), "--store", spec,
                   "--graph", code=1)
    assert "graph.sqlite is read-only; nothing written" in result.output and fakes.calls == 0


def test_d6_passages_written_without_graph_mark_it_stale_and_opening_it_warns(fakes, tmp_path, caplog):
    pytest.importorskip("faiss")
    from haystack_cfrag.causal_rag.stored_graph import open_stored_graph

    spec = f"faiss:{tmp_path / 'store'}"
    index(jsonl(tmp_path / "a.jsonl", [{"id": "a", "content": "Rain causes floods."}]), "--store", spec, "--graph")
    line = summary(index(jsonl(tmp_path / "b.jsonl", [{"id": "b", "content": "Floods close roads."}]), "--store", spec))
    assert graph_state(spec)[3]["state"] == "stale" and "its graph is now stale" in line, line
    with caplog.at_level("WARNING"):
        open_stored_graph(spec).close()
    assert "is stale" in caplog.text and "--graph" in caplog.text
    index(tmp_path / "a.jsonl", tmp_path / "b.jsonl", "--store", spec, "--graph")
    nodes, passages, _, meta = graph_state(spec)
    assert meta["state"] == "complete" and passages == {"a", "b"}


# ------------------------------------------------------------------ one writer at a time
def hold(lock_path, pid=4242):
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.ftruncate(fd, 0)
    os.write(fd, f"{pid}\n".encode())
    return fd


@pytest.mark.parametrize("wait", ["0", "0.6"])
def test_d14_a_second_writer_waits_bounded_then_refuses_naming_the_store_and_holder(fakes, tmp_path, wait):
    pytest.importorskip("faiss")
    spec = f"faiss:{tmp_path / 'store'}"
    a = jsonl(tmp_path / "a.jsonl", [{"id": "a", "content": "Rain causes floods."}])
    fd = hold(tmp_path / ".store.cfrag-lock")
    try:
        start = time.monotonic()
        result = index(a, "--store", spec, "--wait", wait, code=1)
        took = time.monotonic() - start
    finally:
        os.close(fd)
    line = result.output.strip().splitlines()[-1]
    assert f"faiss:{tmp_path / 'store'}#Flat is being written by another cfrag index (pid 4242)" in line, line
    assert "nothing written" in line and "Traceback" not in result.output
    assert took >= float(wait) and took < float(wait) + 10
    assert ("waiting for another cfrag index (pid 4242)" in result.stderr) == (wait != "0")
    assert not (tmp_path / "store.faiss").exists() and fakes.calls == 0
    assert "1 added" in summary(index(a, "--store", spec))  # released: the next run writes
    assert not (tmp_path / ".store.cfrag-lock").exists()  # and removes the lock file it held
