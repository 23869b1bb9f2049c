"""Unit tests of the six components with deterministic fakes."""

import asyncio
import json
import logging
from copy import deepcopy

import numpy as np
import pytest
from haystack import Document
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever, InMemoryEmbeddingRetriever
from haystack.document_stores.in_memory import InMemoryDocumentStore

from haystack_cfrag import (
    CausalArbitrationRanker,
    CounterfactualQueryExpander,
    Draft,
    EmbeddingDeduplicator,
    MultiQueryRetriever,
    ParallelDraftGenerator,
    SpectralStratifier,
)
from haystack_cfrag.cfrag.components.parallel_draft_generator import token_logprobs
from haystack_cfrag.cfrag.math.arbitration import critical_causal_weight
from tests import dark_knight as dk
from tests.fakes import (
    FailingChatGenerator,
    HashingDocumentEmbedder,
    HashingTextEmbedder,
    KeywordReader,
)


def reader(reply=dk.COUNTERFACTUAL_REPLY):
    return KeywordReader(candidates=dk.CANDIDATES, counterfactual_reply=reply)


def embedded_docs():
    return HashingDocumentEmbedder().run(dk.documents())["documents"]


def roundtrip(comp):
    data = comp.to_dict()
    again = type(comp).from_dict(deepcopy(data))
    assert again.to_dict() == data
    json.dumps(data)  # plain data only
    return again


# ------------------------------------------------------------------ expander
class TestCounterfactualQueryExpander:
    def test_selects_valid_counterfactuals_by_info(self):
        exp = CounterfactualQueryExpander(
            chat_generator=reader(), text_embedder=HashingTextEmbedder(), similarity_threshold=0.3
        )
        out = exp.run(query=dk.QUESTION)
        texts = [c["text"] for c in out["counterfactuals"]]
        assert out["queries"][0] == dk.QUESTION and out["queries"][1:] == texts
        assert len(texts) == 3
        assert dk.QUESTION not in texts  # the paraphrase (identical text) is rejected
        assert "What is the weather in Paris?" not in texts  # off topic
        infos = [c["info"] for c in out["counterfactuals"]]
        assert infos == sorted(infos, reverse=True)
        assert all(c["similarity"] > 0.3 and c["type"] in {"role", "categorical", "entity"}
                   for c in out["counterfactuals"])

    def test_n_zero_makes_no_call(self):
        gen = reader()
        out = CounterfactualQueryExpander(chat_generator=gen, n_counterfactuals=0).run(query=dk.QUESTION)
        assert out == {"queries": [dk.QUESTION], "counterfactuals": [], "degradations": []}
        assert gen.prompts == []

    @pytest.mark.parametrize("reply", ["", "no json here", '{"counterfactuals": "nope"}', "[1, 2"])
    def test_malformed_reply_degrades_with_warning(self, reply, caplog):
        exp = CounterfactualQueryExpander(chat_generator=reader(reply))
        with caplog.at_level(logging.WARNING):
            out = exp.run(query=dk.QUESTION)
        assert out["queries"] == [dk.QUESTION] and out["counterfactuals"] == []
        assert "no usable counterfactual" in caplog.text

    def test_generator_failure_degrades_or_raises(self):
        out = CounterfactualQueryExpander(chat_generator=FailingChatGenerator()).run(query=dk.QUESTION)
        assert out["queries"] == [dk.QUESTION]
        exp = CounterfactualQueryExpander(chat_generator=FailingChatGenerator(), raise_on_failure=True)
        with pytest.raises(RuntimeError, match="chat generator failed"):
            exp.run(query=dk.QUESTION)

    def test_without_embedder_uses_lexical_cosine(self):
        out = CounterfactualQueryExpander(chat_generator=reader(), similarity_threshold=0.3).run(query=dk.QUESTION)
        assert out["counterfactuals"], "bag-of-words cosine should keep the on-topic candidates"

    @pytest.mark.parametrize(
        ("kwargs", "name"),
        [({"n_counterfactuals": -1}, "n_counterfactuals"), ({"similarity_threshold": 0.0}, "similarity_threshold"),
         ({"similarity_threshold": 1.5}, "similarity_threshold"), ({"info_weights": (0, 0, 0)}, "info_weights")],
    )
    def test_invalid_parameters(self, kwargs, name):
        with pytest.raises(ValueError, match=name):
            CounterfactualQueryExpander(chat_generator=reader(), **kwargs)

    def test_empty_query_is_refused(self):
        with pytest.raises(ValueError, match="query"):
            CounterfactualQueryExpander(chat_generator=reader()).run(query="   ")

    def test_async_matches_sync_and_roundtrip(self):
        exp = CounterfactualQueryExpander(
            chat_generator=reader(), text_embedder=HashingTextEmbedder(), similarity_threshold=0.3
        )
        assert asyncio.run(exp.run_async(query=dk.QUESTION)) == exp.run(query=dk.QUESTION)
        again = roundtrip(exp)
        assert isinstance(again.chat_generator, KeywordReader) and again.similarity_threshold == 0.3


# ------------------------------------------------------------------ retriever
def bm25_store():
    store = InMemoryDocumentStore()
    store.write_documents(dk.documents())
    return store


class TestMultiQueryRetriever:
    def test_union_with_provenance_original_first(self):
        mqr = MultiQueryRetriever(retriever=InMemoryBM25Retriever(document_store=bm25_store()), top_k=3)
        queries = [dk.QUESTION, "Which filmmaker was the director?"]
        docs = mqr.run(queries=queries)["documents"]
        ids = [d.id for d in docs]
        assert len(ids) == len(set(ids))
        first_query = InMemoryBM25Retriever(document_store=bm25_store()).run(query=dk.QUESTION, top_k=3)["documents"]
        assert ids[:3] == [d.id for d in first_query]
        for doc in docs:
            prov = doc.meta["cfrag_provenance"]
            assert prov and all(p["query_index"] in (0, 1) for p in prov)
        assert any(p["query_index"] == 1 for d in docs for p in d.meta["cfrag_provenance"])
        assert "interview" in ids  # only the counterfactual finds the director interview

    def test_embedding_retriever_returns_embeddings_and_leaves_store_alone(self):
        store = InMemoryDocumentStore(embedding_similarity_function="cosine")
        store.write_documents(embedded_docs())
        before = {d.id: (d.content, tuple(d.embedding), dict(d.meta)) for d in store.filter_documents()}
        mqr = MultiQueryRetriever(
            retriever=InMemoryEmbeddingRetriever(document_store=store), query_embedder=HashingTextEmbedder(), top_k=4
        )
        docs = mqr.run(queries=[dk.QUESTION, "Who played the villain in The Dark Knight?"])["documents"]
        assert docs and all(d.embedding is not None for d in docs)
        after = {d.id: (d.content, tuple(d.embedding), dict(d.meta)) for d in store.filter_documents()}
        assert after == before
        assert asyncio.run(mqr.run_async(queries=[dk.QUESTION]))["documents"] == mqr.run(queries=[dk.QUESTION])[
            "documents"
        ]
        again = roundtrip(mqr)
        assert isinstance(again.retriever, InMemoryEmbeddingRetriever)

    def test_embedding_retriever_needs_embedder(self):
        with pytest.raises(ValueError, match="query_embedder"):
            MultiQueryRetriever(retriever=InMemoryEmbeddingRetriever(document_store=InMemoryDocumentStore()))

    def test_bad_queries(self):
        mqr = MultiQueryRetriever(retriever=InMemoryBM25Retriever(document_store=bm25_store()))
        with pytest.raises(ValueError, match="queries"):
            mqr.run(queries=[])


# ------------------------------------------------------------------ dedup
class TestEmbeddingDeduplicator:
    def test_drops_near_duplicates_keeps_most_relevant(self):
        docs = [
            Document(id="a", content="Christian Bale plays Bruce Wayne in the film.", embedding=[1.0, 0.0]),
            Document(id="b", content="In the film Christian Bale plays Bruce Wayne.", embedding=[0.999, 0.03]),
            Document(id="c", content="Heath Ledger plays the Joker in the film.", embedding=[0.0, 1.0]),
        ]
        assert [d.id for d in EmbeddingDeduplicator().run(documents=docs)["documents"]] == ["a", "c"]

    def test_embeds_missing_without_mutating_inputs(self):
        docs = dk.documents()
        snapshot = deepcopy(docs)
        emb = HashingDocumentEmbedder()
        out = EmbeddingDeduplicator(document_embedder=emb).run(documents=docs)["documents"]
        assert emb.calls == 1 and all(d.embedding is not None for d in out)
        assert docs == snapshot

    def test_skips_broken_embeddings_with_warning(self, caplog):
        docs = [
            Document(id="ok", content="Christian Bale plays Bruce Wayne here.", embedding=[1.0, 0.0]),
            Document(id="nan", content="Heath Ledger plays the Joker here.", embedding=[float("nan"), 1.0]),
            Document(id="zero", content="Gary Oldman plays Jim Gordon here.", embedding=[0.0, 0.0]),
            Document(id="dim", content="Michael Caine plays Alfred here.", embedding=[1.0, 0.0, 0.0]),
            Document(id="empty", content="   "),
        ]
        with caplog.at_level(logging.WARNING):
            out = EmbeddingDeduplicator().run(documents=docs)["documents"]
        assert [d.id for d in out] == ["ok"]
        for doc_id in ("nan", "zero", "dim", "empty"):
            assert doc_id in caplog.text

    def test_quality_and_relevance_filters(self):
        emb = HashingDocumentEmbedder()
        docs = emb.run([*dk.documents(), Document(id="junk", content="12 34 56 78 90 11")])["documents"]
        out = EmbeddingDeduplicator(text_embedder=HashingTextEmbedder(), relevance_threshold=0.55).run(
            documents=docs, queries=[dk.QUESTION]
        )["documents"]
        ids = {d.id for d in out}
        assert "junk" not in ids and "filler-2" not in ids  # Paris weather shares no word with the query
        assert "cast" in ids

    def test_invalid_and_roundtrip(self):
        with pytest.raises(ValueError, match="threshold"):
            EmbeddingDeduplicator(threshold=0)
        with pytest.raises(ValueError, match="text_embedder"):
            EmbeddingDeduplicator(relevance_threshold=0.5)
        roundtrip(EmbeddingDeduplicator(document_embedder=HashingDocumentEmbedder(), threshold=0.9))


# ------------------------------------------------------------------ stratifier
class TestSpectralStratifier:
    def make(self, **kw):
        return SpectralStratifier(text_embedder=HashingTextEmbedder(), random_state=3, **kw)

    def test_seeded_determinism_and_labels(self):
        docs = embedded_docs()
        a = self.make().run(documents=docs, query=dk.QUESTION)
        b = self.make().run(documents=docs, query=dk.QUESTION)
        ids = lambda out: [[d.id for d in s] for s in out["subsets"]]  # noqa: E731
        assert ids(a) == ids(b)
        assert len(a["subsets"]) == 3
        labels = {d.meta["cfrag_cluster"] for d in a["documents"]}
        assert labels == set(range(4))
        for subset in a["subsets"]:
            assert {d.meta["cfrag_cluster"] for d in subset} == labels  # n_m ≥ 1 from every cluster
        assert all("cfrag_cluster" not in d.meta for d in docs)  # inputs untouched

    def test_k_capped_and_fewer_documents_than_drafts(self):
        docs = embedded_docs()[:2]
        out = self.make(n_clusters=6, n_subsets=5).run(documents=docs, query=dk.QUESTION)
        assert len(out["subsets"]) == 5
        assert {d.meta["cfrag_cluster"] for d in out["documents"]} == {0, 1}
        assert all(len(s) == 2 for s in out["subsets"])

    def test_k1_is_one_cluster(self):
        out = self.make(n_clusters=1).run(documents=embedded_docs(), query=dk.QUESTION)
        assert {d.meta["cfrag_cluster"] for d in out["documents"]} == {0}

    def test_documents_without_embeddings_go_through_the_embedder(self):
        emb = HashingDocumentEmbedder()
        out = SpectralStratifier(document_embedder=emb, random_state=0).run(documents=dk.documents())
        assert emb.calls == 1 and len(out["documents"]) == len(dk.documents())

    def test_no_documents(self):
        out = self.make().run(documents=[], query=dk.QUESTION)
        assert out == {"subsets": [[], [], []], "documents": []}

    def test_async_and_roundtrip(self):
        docs = embedded_docs()
        st = self.make()
        a = asyncio.run(st.run_async(documents=docs, query=dk.QUESTION))
        assert a == st.run(documents=docs, query=dk.QUESTION)
        roundtrip(st)

    @pytest.mark.parametrize(
        ("kwargs", "name"),
        [({"n_clusters": 0}, "n_clusters"), ({"n_subsets": 0}, "n_subsets"),
         ({"sampling_ratio": 0.0}, "sampling_ratio"), ({"sampling_ratio": 1.2}, "sampling_ratio"),
         ({"temperature": 0}, "temperature")],
    )
    def test_invalid(self, kwargs, name):
        with pytest.raises(ValueError, match=name):
            SpectralStratifier(**kwargs)


# ------------------------------------------------------------------ drafter
class TestParallelDraftGenerator:
    def subsets(self):
        docs = {d.id: d for d in dk.documents()}
        return [[docs["cast"], docs["review-0"]], [docs[f"review-{i}"] for i in range(3)]]

    @pytest.mark.parametrize("workers", [1, 4])
    def test_one_draft_per_subset(self, workers):
        drafts = ParallelDraftGenerator(chat_generator=reader(), max_workers=workers).run(
            query=dk.QUESTION, subsets=self.subsets()
        )["drafts"]
        assert [d.index for d in drafts] == [0, 1]
        assert [d.answer for d in drafts] == ["Christian Bale", "Heath Ledger"]
        assert drafts[0].parsed_by == "labels" and drafts[0].rationale
        assert [x.id for x in drafts[1].documents] == ["review-0", "review-1", "review-2"]

    def test_failures_are_recorded_or_raised(self, caplog):
        with caplog.at_level(logging.WARNING):
            drafts = ParallelDraftGenerator(chat_generator=FailingChatGenerator()).run(
                query=dk.QUESTION, subsets=self.subsets()
            )["drafts"]
        assert all(d.failed and "unavailable" in d.error for d in drafts)
        assert "every draft failed" in caplog.text
        with pytest.raises(RuntimeError, match="draft 0 failed"):
            ParallelDraftGenerator(chat_generator=FailingChatGenerator(), raise_on_failure=True).run(
                query=dk.QUESTION, subsets=self.subsets()[:1]
            )

    def test_async_matches_sync_and_roundtrip(self):
        gen = ParallelDraftGenerator(chat_generator=reader())
        sync = gen.run(query=dk.QUESTION, subsets=self.subsets())["drafts"]
        assert asyncio.run(gen.run_async(query=dk.QUESTION, subsets=self.subsets()))["drafts"] == sync
        roundtrip(gen)

    def test_token_logprobs_shapes(self):
        assert token_logprobs({"logprobs": [-0.1, -0.2]}) == [-0.1, -0.2]
        assert token_logprobs({"logprobs": {"content": [{"token": "a", "logprob": -0.5}]}}) == [-0.5]
        assert token_logprobs({"token_logprobs": [-1.0]}) == [-1.0]
        # llama-cpp-python returns numpy float32 values
        assert token_logprobs({"logprobs": {"content": [{"logprob": np.float32(-0.25)}]}}) == [-0.25]
        assert token_logprobs({}) is None

    def test_draft_roundtrip(self):
        d = Draft(index=0, answer="Bale", documents=dk.documents()[:1], token_logprobs=[-0.1])
        assert Draft.from_dict(json.loads(json.dumps(d.to_dict()))) == d


# ------------------------------------------------------------------ ranker
def dk_drafts():
    """A draft written from the loud review cluster and one from the quiet cast entry (plus noise)."""
    docs = {d.id: d for d in embedded_docs()}
    ledger = Draft(index=0, answer="Heath Ledger", documents=[docs[f"review-{i}"] for i in range(4)])
    bale = Draft(index=1, answer="Christian Bale", documents=[docs["cast"], docs["review-0"], docs["interview"]])
    return ledger, bale


CF_QUERIES = [dk.QUESTION, "Who played the villain in The Dark Knight?", "Who directed The Dark Knight?"]


def arbitrate(causal_weight=0.4, **kw):
    ledger, bale = dk_drafts()
    return CausalArbitrationRanker(text_embedder=HashingTextEmbedder(), causal_weight=causal_weight, **kw).run(
        query=dk.QUESTION, drafts=[ledger, bale], queries=CF_QUERIES
    )


class TestCausalArbitrationRanker:
    def test_reviews_lose_on_causal_and_lambda_above_critical_picks_the_cast(self):
        trace = arbitrate()["trace"]
        json.dumps(trace)
        by = {d["answer"]: d for d in trace["drafts"]}
        led, bale = by["Heath Ledger"]["scores"], by["Christian Bale"]["scores"]
        assert led["coherence"] > bale["coherence"]  # volume and mentions favour the reviews …
        assert bale["causal"] > led["causal"]  # … but they support the villain question more
        assert all(e["causal_margin"] < 0 for e in by["Heath Ledger"]["evidence"])
        lam_star = critical_causal_weight(bale["coherence"], led["coherence"], bale["causal"], led["causal"])
        assert 0 < lam_star < 1
        above, below = arbitrate(min(1.0, lam_star + 0.05)), arbitrate(max(0.0, lam_star - 0.05))
        assert above["answer"] == "Christian Bale" and above["trace"]["decision"] == "best_score"
        assert [a.data for a in above["answers"]] == ["Christian Bale", "Heath Ledger"]
        assert above["answers"][0].meta["cfrag_scores"]["causal"] == pytest.approx(bale["causal"])
        assert below["answer"] == "Heath Ledger"

    def test_lambda_zero_ablation_falls_into_the_trap(self):
        assert arbitrate(0.0)["answer"] == "Heath Ledger"

    def test_no_counterfactuals_renormalises_weights(self):
        ledger, bale = dk_drafts()
        out = CausalArbitrationRanker(text_embedder=HashingTextEmbedder()).run(query=dk.QUESTION, drafts=[ledger, bale])
        assert out["trace"]["weights"]["causal"] == 0.0
        assert out["trace"]["weights"]["coherence"] == pytest.approx(1.0)
        assert all(d["scores"]["causal"] is None for d in out["trace"]["drafts"])

    def test_consensus_and_synthesis_paths(self):
        ledger, bale = dk_drafts()
        bale2 = Draft(index=2, answer="Bale", documents=bale.documents)
        bale3 = Draft(index=3, answer="christian bale", documents=bale.documents)
        ranker = CausalArbitrationRanker(text_embedder=HashingTextEmbedder(), agreement_threshold=0.6,
                                         causal_weight=0.9)
        out = ranker.run(query=dk.QUESTION, drafts=[ledger, bale, bale2, bale3], queries=CF_QUERIES)
        assert out["trace"]["decision"] == "consensus" and out["trace"]["agreement"] >= 2 / 3

        synth = KeywordReader(candidates=["Christian Bale"])
        out = CausalArbitrationRanker(text_embedder=HashingTextEmbedder(), synthesizer=synth).run(
            query=dk.QUESTION, drafts=[ledger, bale], queries=CF_QUERIES
        )
        assert out["trace"]["decision"] == "synthesis"
        assert out["answers"][0].meta["cfrag_decision"] == "synthesis"
        assert "Drafts (best score first)" in synth.prompts[0]
        out = CausalArbitrationRanker(text_embedder=HashingTextEmbedder(), synthesizer=FailingChatGenerator()).run(
            query=dk.QUESTION, drafts=[ledger, bale], queries=CF_QUERIES
        )
        assert out["trace"]["decision"] == "best_score" and out["answer"] == out["answers"][0].data

    def test_failed_and_missing_drafts(self):
        failed = Draft(index=0, answer="", error="timeout")
        out = CausalArbitrationRanker().run(query=dk.QUESTION, drafts=[failed])
        assert out["answer"] == "" and out["trace"]["decision"] == "all_drafts_failed"
        assert CausalArbitrationRanker().run(query=dk.QUESTION, drafts=[])["trace"]["decision"] == "no_drafts"
        ledger, bale = dk_drafts()
        out = CausalArbitrationRanker().run(query=dk.QUESTION, drafts=[failed, bale], queries=CF_QUERIES)
        assert out["answer"] == "Christian Bale" and out["trace"]["scorer"] == "lexical"
        assert any(d.get("error") == "timeout" for d in out["trace"]["drafts"])

    def test_scorer_is_used_for_relevance(self):
        from haystack import component

        @component
        class PreferCast:
            calls = 0

            @component.output_types(documents=list[Document])
            def run(self, query: str, documents: list[Document]):
                type(self).calls += 1
                from dataclasses import replace

                boost = 3.0 if "lead actor" in query else -3.0
                return {"documents": [replace(d, score=boost if d.id == "cast" else 0.0) for d in documents]}

        ledger, bale = dk_drafts()
        out = CausalArbitrationRanker(text_embedder=HashingTextEmbedder(), scorer=PreferCast()).run(
            query=dk.QUESTION, drafts=[ledger, bale], queries=CF_QUERIES
        )
        assert PreferCast.calls == 3  # one batch per query
        assert out["trace"]["scorer"] == "cross-encoder"
        cast = next(e for d in out["trace"]["drafts"] for e in d["evidence"] if e["id"] == "cast")
        assert cast["relevance"] == pytest.approx(1 / (1 + np.exp(-3.0)))

    def test_async_and_roundtrip(self):
        ledger, bale = dk_drafts()
        rk = CausalArbitrationRanker(text_embedder=HashingTextEmbedder())
        a = asyncio.run(rk.run_async(query=dk.QUESTION, drafts=[ledger, bale], queries=CF_QUERIES))
        b = rk.run(query=dk.QUESTION, drafts=[ledger, bale], queries=CF_QUERIES)
        assert a["trace"] == b["trace"] and a["answer"] == b["answer"]
        roundtrip(CausalArbitrationRanker(text_embedder=HashingTextEmbedder(), synthesizer=reader(), causal_weight=0.7))

    @pytest.mark.parametrize(
        ("kwargs", "name"),
        [({"causal_weight": -0.1}, "causal_weight"), ({"causal_weight": 1.1}, "causal_weight"),
         ({"weights": {"coherence": -1.0}}, "weights"), ({"weights": {"coherence": 0.0}}, "weights"),
         ({"agreement_threshold": 0.0}, "agreement_threshold")],
    )
    def test_invalid(self, kwargs, name):
        with pytest.raises(ValueError, match=name):
            CausalArbitrationRanker(**kwargs)
