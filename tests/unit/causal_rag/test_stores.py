"""The graph round-trips through other stores than InMemory (nested node meta, "id in" and "meta.node_id in"
filters): Qdrant in memory and FAISS, each skipped when its integration is not installed."""

from dataclasses import replace

import pytest
from haystack.document_stores.types import DuplicatePolicy

from haystack_cfrag.causal_rag import CausalGraphBuilder, CausalGraphRetriever

from .fakes import ScriptedExtractor, TableEmbedder
from .test_causal_graph_retriever import DOCS, VECTORS

EXPECTED = [("Drought", "Crops"), ("Flood", "Crops"), ("Flood", "Roads"), ("Heavy rain", "Flood")]


def qdrant():
    store_mod = pytest.importorskip("haystack_integrations.document_stores.qdrant")
    retr_mod = pytest.importorskip("haystack_integrations.components.retrievers.qdrant")
    store = store_mod.QdrantDocumentStore(":memory:", embedding_dim=5, recreate_index=True, similarity="cosine",
                                          progress_bar=False)
    return store, retr_mod.QdrantEmbeddingRetriever(document_store=store)


def faiss():
    store_mod = pytest.importorskip("haystack_integrations.document_stores.faiss")
    retr_mod = pytest.importorskip("haystack_integrations.components.retrievers.faiss")
    store = store_mod.FAISSDocumentStore(embedding_dim=5)
    return store, retr_mod.FAISSEmbeddingRetriever(document_store=store)


@pytest.mark.parametrize("make", [qdrant, faiss], ids=["qdrant", "faiss"])
def test_graph_round_trips_through_the_store(make):
    store, embedding_retriever = make()
    out = CausalGraphBuilder(chat_generator=ScriptedExtractor(),
                             document_embedder=TableEmbedder(VECTORS, dimension=5)).run(documents=DOCS)
    passages = [replace(d, embedding=[0.3] * 5) for d in out["documents"]]
    store.write_documents(out["nodes"] + passages, policy=DuplicatePolicy.OVERWRITE)
    result = CausalGraphRetriever(node_retriever=embedding_retriever, document_store=store, top_k=1,
                                  hops=2).run(query_embedding=VECTORS["Crops"])
    assert [(e["source"], e["target"]) for e in result["causal_edges"]] == EXPECTED
    assert [d.id for d in result["documents"]] == ["p2", "p3", "p1"] and result["degradations"] == []
