"""CausalGraphRetriever over an InMemoryDocumentStore written by the builder, with seeded node vectors."""

import asyncio

import pytest
from haystack import Document
from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.document_stores.types import DuplicatePolicy

from haystack_cfrag.causal_rag import CausalGraphBuilder, CausalGraphRetriever
from haystack_cfrag.causal_rag.math.node_meta import node_filter

from .fakes import ScriptedExtractor, TableEmbedder

# a chain Heavy rain → Flood → Crops ← Drought, Flood → Roads; each node a seeded one-hot vector
VECTORS = {"Heavy rain": [1.0, 0, 0, 0, 0], "Flood": [0, 1.0, 0, 0, 0], "Crops": [0, 0, 1.0, 0, 0],
           "Roads": [0, 0, 0, 1.0, 0], "Drought": [0, 0, 0, 0, 1.0]}
DOCS = [
    Document(id="p1", content="Heavy rain fell for three days over the valley, and a flood followed."),
    Document(id="p2", content="The flood that followed ruined the crops and closed the roads."),
    Document(id="p3", content="Drought also hurt the crops in the south."),
    Document(id="p9", content="An unrelated passage about music."),
]


@pytest.fixture
def store():
    s = InMemoryDocumentStore()   # a fresh index per test
    out = CausalGraphBuilder(chat_generator=ScriptedExtractor(),
                             document_embedder=TableEmbedder(VECTORS, dimension=5)).run(documents=DOCS)
    s.write_documents(out["nodes"] + out["documents"], policy=DuplicatePolicy.OVERWRITE)
    return s


def retriever(store, **kwargs):
    return CausalGraphRetriever(node_retriever=InMemoryEmbeddingRetriever(document_store=store), **kwargs)


def pairs(out):
    return [(e["source"], e["target"]) for e in out["causal_edges"]]


def test_node_storage_round_trips_through_the_store(store):
    nodes = store.filter_documents(filters=node_filter())
    assert sorted(n.content for n in nodes) == sorted(VECTORS)
    flood = next(n for n in nodes if n.content == "Flood")
    assert flood.meta["edges_in"][0] == {"source": "Heavy rain", "target": "Flood", "relation": "CAUSES",
                                         "passage_ids": ["p1"]}
    assert len(store.filter_documents(filters={"field": "meta.cfrag_graph_passage", "operator": "==",
                                               "value": True})) == 4


def test_one_seed_expanded_hop_by_hop_keeps_directions(store):
    r = retriever(store, top_k=1, hops=1)
    one = r.run(query_embedding=VECTORS["Crops"])
    assert [n.content for n in one["nodes"]] == ["Crops", "Drought", "Flood"]
    assert [n.meta["cfrag_hop"] for n in one["nodes"]] == [0, 1, 1]
    assert pairs(one) == [("Drought", "Crops"), ("Flood", "Crops")]   # found from Crops, still cause → effect
    two = r.run(query_embedding=VECTORS["Crops"], hops=2)
    assert pairs(two) == [("Drought", "Crops"), ("Flood", "Crops"), ("Flood", "Roads"), ("Heavy rain", "Flood")]
    assert two["trace"]["edges_per_hop"] == [2, 2] and two["trace"]["hops_reached"] == 2
    assert two["trace"]["seeds"] == ["Crops"] and two["degradations"] == []
    # passages: those of the seed and its edges first, each once, never the unrelated one
    assert [d.id for d in two["documents"]] == ["p2", "p3", "p1"]
    assert all(d.meta.get("cfrag_graph_passage") for d in two["documents"])
    assert {"source", "target", "relation", "passage_ids"} == set(two["causal_edges"][0])


def test_top_k_seeds_and_max_documents(store):
    out = retriever(store, top_k=2, hops=1, max_documents=1).run(query_embedding=[1.0, 0.9, 0, 0, 0])
    assert out["trace"]["seeds"] == ["Heavy rain", "Flood"] and len(out["documents"]) == 1
    assert ("Heavy rain", "Flood") in pairs(out) and pairs(out).count(("Heavy rain", "Flood")) == 1
    none = retriever(store, max_documents=0).run(query_embedding=VECTORS["Flood"])
    assert none["documents"] == [] and none["causal_edges"]


def test_max_edges_truncates_with_a_degradation(store):
    out = retriever(store, top_k=1, hops=3, max_edges=2).run(query_embedding=VECTORS["Flood"])
    assert len(out["causal_edges"]) == 2 and out["trace"]["truncated"]
    assert out["degradations"][0]["reason"] == "edges_truncated"


def test_no_graph_node_falls_back_with_a_degradation():
    empty = InMemoryDocumentStore()
    empty.write_documents([Document(id="p", content="only passages", embedding=[1.0, 0, 0, 0, 0])])
    out = retriever(empty).run(query_embedding=[1.0, 0, 0, 0, 0])
    assert out["nodes"] == [] and out["causal_edges"] == [] and out["documents"] == []
    assert out["degradations"] == [{"stage": "graph_retrieval", "reason": "no_graph_node"}]


def test_without_a_store_only_the_seeds_edges_are_known(store):
    class NoStoreRetriever:
        """An embedding retriever that exposes no store."""

        def __init__(self, inner):
            self.inner = inner

        def run(self, query_embedding, filters=None, top_k=None):
            return self.inner.run(query_embedding=query_embedding, filters=filters, top_k=top_k)

    r = CausalGraphRetriever(node_retriever=NoStoreRetriever(InMemoryEmbeddingRetriever(document_store=store)),
                             top_k=1, hops=3)
    out = r.run(query_embedding=VECTORS["Crops"])
    assert pairs(out) == [("Drought", "Crops"), ("Flood", "Crops")] and out["documents"] == []
    reasons = [d["reason"] for d in out["degradations"]]
    assert reasons[0].startswith("the node retriever has no document_store")
    assert reasons[1].startswith("no document_store")


def test_a_failing_retriever_degrades_or_raises(store):
    class Down:
        def run(self, query_embedding, filters=None, top_k=None):
            raise RuntimeError("store offline")

    out = CausalGraphRetriever(node_retriever=Down()).run(query_embedding=[1.0])
    assert out["nodes"] == [] and [d["reason"] for d in out["degradations"]] == ["retriever failed", "no_graph_node"]
    with pytest.raises(RuntimeError, match="store offline"):
        CausalGraphRetriever(node_retriever=Down(), raise_on_failure=True).run(query_embedding=[1.0])


def test_malformed_node_meta_is_skipped_not_raised():
    s = InMemoryDocumentStore()
    s.write_documents([Document(id="n", content="A", embedding=[1.0, 0.0], meta={
        "cfrag_graph_node": True, "node_id": "A", "edges_out": ["junk", {"source": "A"}, 5,
                                                                {"source": "A", "target": "B", "relation": "r",
                                                                 "passage_ids": "not a list"}],
        "edges_in": "junk"})])
    out = retriever(s, hops=1).run(query_embedding=[1.0, 0.0])
    assert pairs(out) == [("A", "B")] and out["causal_edges"][0]["passage_ids"] == []


@pytest.mark.parametrize("bad", [[], [float("nan")], "text", [True], None])
def test_bad_query_embeddings_raise(store, bad):
    with pytest.raises(ValueError, match="query_embedding"):
        retriever(store).run(query_embedding=bad)


@pytest.mark.parametrize(("kwargs", "match"), [({"top_k": 0}, "top_k"), ({"hops": 11}, "hops"),
                                               ({"max_edges": 0}, "max_edges"),
                                               ({"max_documents": -1}, "max_documents"),
                                               ({"document_store": "x"}, "document_store")])
def test_bad_parameters_raise(store, kwargs, match):
    with pytest.raises(ValueError, match=match):
        retriever(store, **kwargs)
    with pytest.raises(ValueError, match="top_k"):
        retriever(store).run(query_embedding=[1.0], top_k=11)


def test_round_trip_and_async_twin(store):
    r = retriever(store, document_store=store, top_k=2, hops=2, max_edges=50, max_documents=5,
                  filters={"field": "meta.node_type", "operator": "!=", "value": "x"})
    restored = CausalGraphRetriever.from_dict(r.to_dict())
    assert restored.to_dict() == r.to_dict()
    assert isinstance(restored.node_retriever, InMemoryEmbeddingRetriever)
    assert isinstance(restored.document_store, InMemoryDocumentStore)
    q = VECTORS["Flood"]
    sync = retriever(store, hops=2).run(query_embedding=q)
    async_ = asyncio.run(retriever(store, hops=2).run_async(query_embedding=q))
    assert sync["causal_edges"] == async_["causal_edges"] and sync["trace"] == async_["trace"]
    assert [d.id for d in sync["documents"]] == [d.id for d in async_["documents"]]


def test_flat_meta_stores_edges_as_json_strings_and_retrieves_the_same(store):
    flat = InMemoryDocumentStore()
    out = CausalGraphBuilder(chat_generator=ScriptedExtractor(), document_embedder=TableEmbedder(VECTORS, dimension=5),
                             flat_meta=True).run(documents=DOCS)
    flood = next(n for n in out["nodes"] if n.content == "Flood")
    assert all(isinstance(flood.meta[k], str) for k in ("edges_out", "edges_in", "passage_ids"))
    flat.write_documents(out["nodes"] + out["documents"])
    a = retriever(flat, hops=2).run(query_embedding=VECTORS["Crops"])
    b = retriever(store, hops=2).run(query_embedding=VECTORS["Crops"])
    assert a["causal_edges"] == b["causal_edges"] and [d.id for d in a["documents"]] == [d.id for d in b["documents"]]
