"""Runtime (what `cfrag ask/compare` run) with deterministic fakes: model swap, store, timing, usage."""

from haystack.document_stores.in_memory import InMemoryDocumentStore

from haystack_cfrag.cfrag.trace import duel_readings
from haystack_cfrag.pipelines import pipeline_path
from haystack_cfrag.runtime import Runtime
from tests import dark_knight as dk
from tests.fakes import HashingDocumentEmbedder, HashingTextEmbedder, KeywordReader


def runtime():
    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    store.write_documents(HashingDocumentEmbedder().run(dk.documents())["documents"])
    reader = KeywordReader(candidates=dk.CANDIDATES, counterfactual_reply=dk.COUNTERFACTUAL_REPLY)
    return Runtime(store=store, chat_generator=reader, text_embedder=HashingTextEmbedder(), allowed_modules=["tests"])


def test_compare_standard_and_cf_rag_on_one_runtime():
    rt = runtime()
    std = rt.ask("standard_rag", dk.QUESTION)
    cf = rt.ask("cf_rag", dk.QUESTION, {"random_state": 0})
    assert std.answer == "Heath Ledger" and std.llm["calls"] == 1 and std.trace is None
    assert cf.answer in dk.CANDIDATES and cf.trace["drafts"]
    assert cf.trace["counterfactuals"] == []                                # N = 0 as shipped: no expander call
    # baseline, challengers, duel (both orders)
    assert cf.llm["calls"] == len(cf.trace["drafts"]) + duel_readings(cf.trace)
    assert set(cf.stages) == {"expander", "retriever", "dedup", "stratifier", "drafter", "ranker", "duel"}
    assert all(v >= 0 for v in cf.stages.values()) and cf.seconds >= sum(cf.stages.values()) * 0.5


def test_models_and_store_are_the_runtimes_own():
    rt = runtime()
    pipe = rt.pipeline(pipeline_path("cf_rag"))
    expander, drafter = pipe.get_component("expander"), pipe.get_component("drafter")
    assert expander.chat_generator is rt.generator and drafter.chat_generator is rt.generator
    assert pipe.get_component("ranker").text_embedder is rt.text_embedder
    assert pipe.get_component("retriever").retriever.document_store is rt.store


def test_parameters_reach_the_components():
    rt = runtime()
    out = rt.ask("cf_rag", dk.QUESTION, {"n_counterfactuals": 0, "n_subsets": 2, "causal_weight": 0.0})
    assert out.trace["counterfactuals"] == [] and len(out.trace["drafts"]) == 1 + 2  # the baseline, two challengers
    assert out.trace["weights"]["causal"] == 0.0
    # N = 0: no counterfactual call; the baseline, two challengers, the duel
    assert out.llm["calls"] == 3 + duel_readings(out.trace)



def test_standard_rag_nodes_take_the_runtime_model_configuration():
    rt = runtime()
    pipe = rt.pipeline(pipeline_path("standard_rag"))
    assert pipe.get_component("generator").to_dict() == rt.generator.to_dict()
    assert pipe.get_component("query_embedder").to_dict() == rt.text_embedder.to_dict()
    assert pipe.get_component("retriever").document_store is rt.store


def test_demo_store_cache_is_keyed_by_embedder(tmp_path, monkeypatch):
    from haystack import Document

    from haystack_cfrag.stores import default_store_path, open_store

    monkeypatch.setenv("CFRAG_CACHE_DIR", str(tmp_path))
    assert default_store_path("embedded:all-MiniLM-L6-v2") != default_store_path("BAAI/bge-small-en-v1.5")
    calls = []

    def embed(docs: list[Document]) -> list[Document]:
        calls.append(len(docs))
        return HashingDocumentEmbedder().run(docs)["documents"]

    first = open_store(None, embed, "my-embedder")
    again = open_store(None, embed, "my-embedder")
    assert calls == [first.count_documents()] and again.count_documents() == first.count_documents() > 300
    assert default_store_path("my-embedder").exists()


def test_concurrent_asks_are_serialised_and_counted_separately():
    from concurrent.futures import ThreadPoolExecutor

    rt = runtime()
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: rt.ask("standard_rag", dk.QUESTION), range(4)))
    assert [r.llm["calls"] for r in results] == [1, 1, 1, 1]
    assert {r.answer for r in results} == {"Heath Ledger"}


def test_a_pipeline_is_built_once_per_file_and_parameters():
    rt = runtime()
    first = rt.ask("cf_rag", dk.QUESTION, {"random_state": 0})
    second = rt.ask("cf_rag", dk.QUESTION, {"random_state": 0})
    rt.ask("cf_rag", dk.QUESTION, {"random_state": 1})
    assert len(rt._built) == 2
    assert first.trace == second.trace and second.llm["calls"] == first.llm["calls"]


def test_the_graph_is_prepared_before_the_reader_loads_and_only_for_pipelines_that_read_it(monkeypatch):
    """`prepare_stores` (cfrag ask/compare/serve) builds the graph of graph pipelines with the reader unloaded."""
    rt = runtime()
    rt.stores.graph_cache = None
    loaded = []
    monkeypatch.setattr(rt.models, "warm_up", lambda: loaded.append("reader"))
    rt.prepare_stores(["standard_rag", "grounded_rag_lite", "cer"])  # no node retriever among them
    assert rt.graph_stats == [] and loaded == []
    rt.prepare_stores(["causal_rag", "cdf_rag"])  # one graph for the store, built with the parser alone
    assert len(rt.graph_stats) == 1 and rt.graph_stats[0]["nodes"] > 0 and loaded == []
