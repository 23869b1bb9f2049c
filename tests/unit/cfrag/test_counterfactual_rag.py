"""CounterfactualRAG (SuperComponent): full and verify-only modes, YAML round-trip."""

import asyncio
from copy import deepcopy

from haystack import Pipeline
from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
from haystack.document_stores.in_memory import InMemoryDocumentStore

from haystack_cfrag.cfrag.components.counterfactual_rag import PAPER, CounterfactualRAG
from haystack_cfrag.pipelines.loading import pipeline_from_dict
from tests import dark_knight as dk
from tests.fakes import HashingDocumentEmbedder, HashingTextEmbedder, KeywordReader


def setup():
    emb = HashingTextEmbedder()
    reader = KeywordReader(candidates=dk.CANDIDATES, counterfactual_reply=dk.COUNTERFACTUAL_REPLY)
    docs = HashingDocumentEmbedder().run(dk.documents())["documents"]
    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    store.write_documents(docs)
    return emb, reader, docs, store


def full_rag(**kw):
    emb, reader, docs, store = setup()
    return CounterfactualRAG(
        chat_generator=reader,
        retriever=InMemoryEmbeddingRetriever(document_store=store, top_k=8),
        text_embedder=emb,
        **{"similarity_threshold": 0.3, "random_state": 0, **kw},
    ), store


def test_default_overrides_the_volume_answer_in_both_modes():
    """The shipped default: the baseline reads the original top-k (volume answer), a challenger overrides it."""
    rag, _ = full_rag()
    out = rag.run(query=dk.QUESTION)
    trace = out["trace"]
    baseline = next(d for d in trace["drafts"] if d["index"] == trace["override"]["baseline_draft"])
    assert baseline["answer"] == "Heath Ledger" and out["answer"] == "Christian Bale"
    assert trace["decision"] == "override"
    emb, reader, docs, _ = setup()
    given = [d for d in docs if d.id in {"cast", "review-0", "review-1", "review-2", "review-3"}]
    verify = CounterfactualRAG(chat_generator=reader, text_embedder=emb, similarity_threshold=0.3, random_state=0)
    out = verify.run(query=dk.QUESTION, documents=given)
    baseline = next(d for d in out["trace"]["drafts"] if d["index"] == out["trace"]["override"]["baseline_draft"])
    assert baseline["seen"] == len(given) and baseline["answer"] == "Heath Ledger"
    assert out["answer"] == "Christian Bale"
    paper = CounterfactualRAG(chat_generator=reader, text_embedder=emb, **{**PAPER, "similarity_threshold": 0.3})
    assert paper.to_dict()["init_parameters"]["baseline"] is False
    assert paper.run(query=dk.QUESTION, documents=given)["trace"]["override"] is None


def test_sockets_are_query_documents_to_answers_answer_trace():
    rag, _ = full_rag()
    assert set(rag.__haystack_input__._sockets_dict) == {"query", "documents"}
    assert set(rag.__haystack_output__._sockets_dict) == {"answers", "answer", "trace"}


def test_full_mode_answers_dark_knight_and_leaves_store_alone():
    rag, store = full_rag()
    before = sorted((d.id, d.content) for d in store.filter_documents())
    out = rag.run(query=dk.QUESTION)
    assert out["answer"] == "Christian Bale"
    assert out["answers"][0].data == "Christian Bale" and out["trace"]["counterfactuals"] == []   # N = 0 as shipped
    assert sorted((d.id, d.content) for d in store.filter_documents()) == before
    asked, _ = full_rag(n_counterfactuals=3)
    assert asked.run(query=dk.QUESTION)["trace"]["counterfactuals"]     # the paper's questions, when asked for
    again = asyncio.run(rag.run_async(query=dk.QUESTION))
    assert again["trace"] == out["trace"]


def test_verify_only_scores_only_the_given_documents():
    emb, reader, docs, _ = setup()
    given = [d for d in docs if d.id in {"cast", "review-0", "review-1", "interview"}]
    rag = CounterfactualRAG(chat_generator=reader, text_embedder=emb, **{**PAPER, "similarity_threshold": 0.3},
                            random_state=0)
    out = rag.run(query=dk.QUESTION, documents=given)
    used = {e["id"] for d in out["trace"]["drafts"] for e in d["evidence"]}
    assert used and used <= {d.id for d in given}
    assert len(out["trace"]["counterfactuals"]) == 3
    assert "Who played the villain in The Dark Knight?" in out["trace"]["counterfactuals"]
    assert out["answer"] in dk.CANDIDATES


def test_verify_with_retriever_adds_counterfactual_evidence():
    rag, _ = full_rag(**{**PAPER, "similarity_threshold": 0.3})
    emb, reader, docs, _ = setup()
    given = [d for d in docs if d.id == "cast"]
    out = rag.run(query=dk.QUESTION, documents=given)
    used = {e["id"] for d in out["trace"]["drafts"] for e in d["evidence"]}
    assert "cast" in used
    assert max(d["seen"] for d in out["trace"]["drafts"]) > 1  # the drafts saw retrieved evidence too


def test_roundtrip_as_a_component_and_inside_a_yaml_pipeline():
    rag, _ = full_rag(n_subsets=2)
    data = rag.to_dict()
    assert CounterfactualRAG.from_dict(deepcopy(data)).to_dict() == data
    pipe = Pipeline()
    pipe.add_component("cf_rag", rag)
    yaml_text = pipe.dumps()
    assert "haystack_cfrag.cfrag.components.counterfactual_rag.CounterfactualRAG" in yaml_text
    import yaml

    again = pipeline_from_dict(yaml.safe_load(yaml_text), allowed_modules=["tests"])
    assert again.to_dict() == pipe.to_dict()
    out = again.run({"cf_rag": {"query": dk.QUESTION}})
    assert out["cf_rag"]["answer"]
