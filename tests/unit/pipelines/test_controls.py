"""The controls of issue 46: `hybrid_rag`, `standard_rag[top_k=6]`, `order_rag`, on fakes (no model)."""

import pytest
from haystack import Document
from haystack.document_stores.in_memory import InMemoryDocumentStore

from haystack_cfrag.baseline.components.document_order import ORDERS, DocumentOrder, reorder
from haystack_cfrag.evaluation.systems import parse_system
from haystack_cfrag.registry import REGISTRY
from haystack_cfrag.runtime import Runtime
from haystack_cfrag.stores.opening import keyword_store
from tests import dark_knight as dk
from tests.fakes import HashingDocumentEmbedder, HashingTextEmbedder, KeywordReader


def runtime(store=None):
    if store is None:
        store = InMemoryDocumentStore(embedding_similarity_function="cosine")
        store.write_documents(HashingDocumentEmbedder().run(dk.documents())["documents"])
    reader = KeywordReader(candidates=dk.CANDIDATES, counterfactual_reply=dk.COUNTERFACTUAL_REPLY)
    return Runtime(store=store, chat_generator=reader, text_embedder=HashingTextEmbedder(), allowed_modules=["tests"])


def ids(answer):
    return [d["id"] for d in answer.documents]


@pytest.mark.parametrize("order", ORDERS)
def test_an_order_keeps_every_document_and_changes_their_order(order):
    docs = [Document(content=c) for c in "abcde"]
    out = DocumentOrder(order=order).run(docs)["documents"]
    assert sorted(d.content for d in out) == list("abcde") and [d.content for d in out] != list("abcde")
    assert [d.content for d in docs] == list("abcde")  # the input is not changed


def test_order_is_checked_and_round_trips():
    with pytest.raises(ValueError, match="'order' must be one of"):
        DocumentOrder(order="random")
    with pytest.raises(ValueError, match="'order' must be one of"):
        DocumentOrder().run([], order="shuffle")
    assert DocumentOrder.from_dict(DocumentOrder(order="rotate").to_dict()).order == "rotate"
    assert reorder([1], "lost_in_the_middle") == [1] and reorder([1, 2], "reverse") == [2, 1]


def test_order_rag_reads_standard_rags_passages_in_another_order():
    rt = runtime()
    std, ordered = rt.ask("standard_rag", dk.QUESTION), rt.ask("order_rag", dk.QUESTION)
    assert ids(ordered) == ids(std)[::-1] and len(ids(std)) == 5
    assert ids(rt.ask("order_rag", dk.QUESTION, {"order": "rotate"})) == ids(std)[1:] + ids(std)[:1]


def test_standard_rag_top_k_reads_one_passage_more():
    rt = runtime()
    five, six = rt.ask("standard_rag", dk.QUESTION), rt.ask("standard_rag", dk.QUESTION, {"top_k": 6})
    assert ids(six)[:5] == ids(five) and len(ids(six)) == 6
    assert parse_system("standard_rag[top_k=6]").params == {"top_k": 6}
    with pytest.raises(ValueError, match="top_k"):
        parse_system("standard_rag[top_k=0]")


def test_hybrid_rag_fuses_bm25_and_embedding_retrieval():
    rt = runtime()
    pipe = rt.built("hybrid_rag")
    assert pipe.get_component("bm25_retriever").document_store is rt.store
    bm25 = pipe.get_component("bm25_retriever").run(query=dk.QUESTION, top_k=5)["documents"]
    dense = rt.ask("standard_rag", dk.QUESTION)
    hybrid = rt.ask("hybrid_rag", dk.QUESTION)
    assert len(ids(hybrid)) == 5 and set(ids(hybrid)) <= set(ids(dense)) | {d.id for d in bm25}
    assert set(ids(hybrid)) & ({d.id for d in bm25} - set(ids(dense))) or {d.id for d in bm25} <= set(ids(dense))
    assert len(ids(rt.ask("hybrid_rag", dk.QUESTION, {"top_k": 3}))) == 3
    assert REGISTRY["hybrid_rag"].family == REGISTRY["order_rag"].family == "baseline"


class _NoKeywordStore:
    """A store with no BM25 of its own (as FAISS or Qdrant), read through `filter_documents` only."""

    def __init__(self, documents):
        self.documents = documents
        self.writes = 0

    def filter_documents(self, filters=None):
        return list(self.documents)

    def write_documents(self, documents, policy=None):
        self.writes += 1


def test_a_store_without_bm25_is_read_through_an_in_memory_copy_it_never_writes():
    docs = [Document(id=str(i), content=f"passage {i} about rivers", meta={"title": f"t{i}"}) for i in range(4)]
    store = _NoKeywordStore(docs)
    mirror = keyword_store(store)
    assert isinstance(mirror, InMemoryDocumentStore) and mirror.count_documents() == 4
    assert store.writes == 0 and [d.meta for d in docs] == [{"title": f"t{i}"} for i in range(4)]
    hits = mirror.bm25_retrieval(query="passage 2", top_k=1)
    assert hits and hits[0].id in {d.id for d in docs}
