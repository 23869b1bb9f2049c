"""`update_store`, the one write of a store (issue 70, item 2): from Python, what `cfrag index` does."""

from __future__ import annotations

import fcntl
import importlib.util
import os
import sys
from pathlib import Path

import pytest
from haystack import Document

from haystack_cfrag.stores import open_document_store
from haystack_cfrag.stores.lock import StoreBusy
from haystack_cfrag.stores.update import GraphBuild, PruneRefused, update_store
from tests.fakes import HashingDocumentEmbedder

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@pytest.fixture
def embedder():
    fake = HashingDocumentEmbedder(dimension=8)
    fake.warm_up = lambda: None
    return fake


def notes(folder: Path, **texts: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        (folder / f"{name}.txt").write_text(text, encoding="utf-8")
    return folder


def test_files_in_a_store_out_with_the_plan_by_file(tmp_path, embedder):
    folder = notes(tmp_path / "n", a="Rain causes floods.", b="Floods close roads.")
    spec = f"memory:{tmp_path / 'store.json'}"
    saved = []
    done = update_store(spec, [folder], embedder=embedder, saved=saved.append)
    assert saved == [done] and (done.written, done.count) == (2, 2)
    assert done.plan.files == {str(folder / "a.txt"): {"added": 1}, str(folder / "b.txt"): {"added": 1}}
    (folder / "a.txt").write_text("Rain causes landslides.", encoding="utf-8")
    done = update_store(spec, [folder], embedder=embedder)
    assert done.plan.summary() == "1 added, 0 replaced, 1 removed, 1 kept" and done.count == 2
    assert done.plan.by_file() == [f"{folder / 'a.txt'}: 1 added, 1 removed", f"{folder / 'b.txt'}: 1 kept"]


def test_documents_as_they_are_and_an_embedder_function(tmp_path):
    spec = f"memory:{tmp_path / 'store.json'}"
    docs = [Document(id="x", content="one"), Document(id="y", content="two")]
    done = update_store(spec, docs, embedder=lambda ds: [
        Document(id=d.id, content=d.content, embedding=[1.0, 0.0]) for d in ds])
    assert done.count == 2 and {d.id for d in open_document_store(spec).filter_documents()} == {"x", "y"}
    again = update_store(spec, docs, embedder=lambda ds: 1 / 0)  # nothing to embed: never called
    assert again.plan.summary() == "0 added, 0 replaced, 0 removed, 2 kept"


def test_a_dry_run_plans_and_touches_nothing(tmp_path, embedder):
    folder = notes(tmp_path / "n", a="Rain causes floods.")
    spec = f"memory:{tmp_path / 'store.json'}"
    embedder.calls = 0
    done = update_store(spec, [folder], embedder=embedder, dry_run=True)
    assert done.dry_run and done.plan.summary() == "1 added, 0 replaced, 0 removed, 0 kept"
    assert embedder.calls == 0 and sorted(p.name for p in tmp_path.iterdir()) == ["n"]


def test_prune_past_the_guard_raises_one_line_and_force_removes(tmp_path, embedder):
    folder = notes(tmp_path / "n", a="Rain causes floods.", b="Floods close roads.")
    spec = f"memory:{tmp_path / 'store.json'}"
    update_store(spec, [folder], embedder=embedder)
    (folder / "a.txt").unlink()
    (folder / "b.txt").unlink()
    with pytest.raises(PruneRefused, match=r"^--prune would remove the passages of 2 of the 2 files .*force"):
        update_store(spec, [], embedder=embedder, prune=True)
    assert open_document_store(spec).count_documents() == 2
    assert update_store(spec, [], embedder=embedder, prune=True, force=True).count == 0


def test_a_second_writer_is_refused_in_one_line_and_nothing_is_written(tmp_path, embedder):
    folder = notes(tmp_path / "n", a="Rain causes floods.")
    spec = f"memory:{tmp_path / 'store.json'}"
    fd = os.open(tmp_path / ".store.json.cfrag-lock", os.O_RDWR | os.O_CREAT, 0o644)  # another writer's hold
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, b"4242\n")
        with pytest.raises(StoreBusy, match=r"written by another cfrag index \(pid 4242\).*nothing written"):
            update_store(spec, [folder], embedder=embedder, wait=0)
    finally:
        os.close(fd)
    assert not (tmp_path / "store.json").exists()


def test_a_graph_with_an_embedder_component_needs_its_query_embedder_first(tmp_path, embedder):
    folder = notes(tmp_path / "n", a="Rain causes floods.")
    with pytest.raises(ValueError, match=r"GraphBuild\(text_embedder=…\)"):
        update_store(f"memory:{tmp_path / 'store.json'}", [folder], embedder=embedder, graph=GraphBuild())
    assert not (tmp_path / "store.json").exists()


def test_the_preparation_is_handed_in_and_a_change_marks_its_graph_stale(tmp_path, embedder):
    """No import side effect: what a family keeps beside the store is an argument (`cfrag index` passes the
    registry's); without it the passages are written and nothing beside the store is marked."""
    import sqlite3

    from haystack_cfrag.causal_rag.graph_write import forget_marks, prepare_graph
    from haystack_cfrag.causal_rag.stored_graph import graph_home
    from haystack_cfrag.registry import store_preparation

    folder = notes(tmp_path / "n", a="Rain causes floods.")
    spec = f"memory:{tmp_path / 'store.json'}"
    update_store(spec, [folder], embedder=embedder)
    prepare_graph(spec)  # a graph beside the store, as `cfrag index --graph` leaves it
    forget_marks()
    notes(folder, b="Floods close roads.")
    assert update_store(spec, [folder], embedder=embedder).stale is False
    notes(folder, c="Closed roads delay buses.")
    assert update_store(spec, [folder], embedder=embedder, preparation=store_preparation()).stale is True
    with sqlite3.connect(graph_home(spec).sqlite) as db:
        assert dict(db.execute('SELECT key, value FROM "cfrag_graph_meta"').fetchall())["state"] == "stale"
    with pytest.raises(ValueError, match=r"^graph= needs the preparation that builds it .*nothing written"):
        update_store(spec, [folder], embedder="hashing", graph=GraphBuild())


def test_the_example_keeps_a_store_up_to_date(tmp_path, embedder):
    sys.path.insert(0, str(EXAMPLES))
    try:
        spec = importlib.util.spec_from_file_location("update_example", EXAMPLES / "05_update_store.py")
        example = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(example)
    finally:
        sys.path.remove(str(EXAMPLES))
    spec = f"memory:{tmp_path / 'store.json'}"
    text = "\n".join(example.keep_up_to_date(spec, example.write_notes(tmp_path), embedder))
    held = "kept: schools.txt gave no text (1 passage)"
    assert "first build: 3 added, 0 replaced, 0 removed, 0 kept (store has 3)" in text
    assert f"dry run: 1 added, 0 replaced, 1 removed, 1 kept; {held}" in text
    assert f"update: 1 added, 0 replaced, 1 removed, 1 kept; {held}" in text
    assert "prune: 0 added, 0 replaced, 1 removed, 1 kept" in text
    assert open_document_store(f"memory:{tmp_path / 'store.json'}").count_documents() == 2
