"""`cfrag index` run again embeds and writes only the passages the store lacks.

Before: every run re-embedded the whole input and wrote it with OVERWRITE, which a FAISS HNSW index
cannot do (it cannot remove the old vector): re-indexing a file into `faiss:PATH#HNSW32` ended in
faiss's RuntimeError traceback (found when the scale run resumed an interrupted chunk).
"""

import json

import pytest
from click.testing import CliRunner
from haystack import Document

from haystack_cfrag.adapters import factories
from haystack_cfrag.cli import main
from haystack_cfrag.stores import open_document_store
from haystack_cfrag.stores.existing import stored_dim, stored_ids
from tests.fakes import HashingDocumentEmbedder


def _lines(path, texts):
    path.write_text("".join(json.dumps({"content": t}) + "\n" for t in texts), encoding="utf-8")
    return path


@pytest.fixture
def embedder(monkeypatch):
    fake = HashingDocumentEmbedder(dimension=16)
    fake.warm_up = lambda: None
    fake.seen = []
    run = fake.run

    def counting(documents):
        fake.seen.extend(d.content for d in documents)
        return run(documents=documents)

    fake.run = counting
    monkeypatch.setattr(factories, "document_embedder", lambda *_a, **_k: fake)
    return fake


def _index(*args):
    result = CliRunner().invoke(main, ["index", *map(str, args)])
    assert result.exit_code == 0, result.output
    return result.output.strip().splitlines()[-1]


@pytest.mark.parametrize("kind", ["memory", "faiss-hnsw"])
def test_indexing_again_embeds_and_writes_only_the_new_passages(tmp_path, embedder, kind):
    if kind == "faiss-hnsw":
        pytest.importorskip("faiss")
        spec = f"faiss:{tmp_path / 'store'}#HNSW32"
        saved = tmp_path / "store.json"
    else:
        spec = str(tmp_path / "store.json")
        saved = tmp_path / "store.json"
    a = _lines(tmp_path / "a.jsonl", ["Rain causes floods.", "Floods close roads."])
    b = _lines(tmp_path / "b.jsonl", ["Closed roads delay buses."])

    assert "2 written; store has 2" in _index(a, "--store", spec)
    embedder.seen.clear()
    summary = _index(a, b, "--store", spec)
    assert "1 written (2 already in the store, kept); store has 3" in summary, summary
    assert embedder.seen == ["Closed roads delay buses."]

    embedder.seen.clear()
    before = saved.stat().st_mtime_ns
    summary = _index(a, "--store", spec)
    assert "0 written (2 already in the store, kept); store has 3" in summary, summary
    assert embedder.seen == [] and saved.stat().st_mtime_ns == before  # nothing embedded, nothing saved
    store = open_document_store(spec)
    assert sorted(d.content for d in store.filter_documents()) == [
        "Closed roads delay buses.", "Floods close roads.", "Rain causes floods."]


def test_a_store_of_another_dimension_is_one_line_and_unchanged(tmp_path, monkeypatch):
    pytest.importorskip("faiss")
    spec = f"faiss:{tmp_path / 'store'}#HNSW32"
    first = HashingDocumentEmbedder(dimension=16)
    first.warm_up = lambda: None
    monkeypatch.setattr(factories, "document_embedder", lambda *_a, **_k: first)
    _index(_lines(tmp_path / "a.jsonl", ["Rain causes floods."]), "--store", spec)
    before = (tmp_path / "store.faiss").read_bytes()
    other = HashingDocumentEmbedder(dimension=32)
    other.warm_up = lambda: None
    monkeypatch.setattr(factories, "document_embedder", lambda *_a, **_k: other)
    result = CliRunner().invoke(main, ["index", str(_lines(tmp_path / "b.jsonl", ["Floods close roads."])),
                                       "--store", spec])
    assert result.exit_code == 1
    last = result.output.strip().splitlines()[-1]
    assert "holds 16-dimensional embeddings, not 32" in last and "unchanged" in last, result.output
    assert "Traceback" not in result.output
    assert (tmp_path / "store.faiss").read_bytes() == before


class _DatabaseStore:
    """A store without a dict of its documents: asked by a filter on `id`, like pgvector."""

    embedding_dimension = 8

    def __init__(self, ids):
        self.ids = set(ids)
        self.asked = []

    def filter_documents(self, filters=None):
        assert filters["field"] == "id" and filters["operator"] == "in"
        self.asked.append(len(filters["value"]))
        return [Document(id=i, content="x") for i in filters["value"] if i in self.ids]


def test_stored_ids_asks_a_database_store_in_batches_and_reads_its_dimension():
    store = _DatabaseStore({"b", "d", "z"})
    assert stored_ids(store, ["a", "b", "c", "d", "e"], batch=2) == {"b", "d"}
    assert store.asked == [2, 2, 1]
    assert stored_dim(store) == 8
