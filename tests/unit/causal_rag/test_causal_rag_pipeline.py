"""The shipped `causal_rag` pipeline through the runtime: the graph built once for the store, its nodes kept apart."""

from haystack import Document
from haystack.document_stores.in_memory import InMemoryDocumentStore

from haystack_cfrag import registry
from haystack_cfrag.runtime import Runtime
from tests.fakes import HashingDocumentEmbedder, HashingTextEmbedder
from tests.unit.causal_rag.fakes import ScriptedExtractor

PASSAGES = [
    Document(id="p-rain", content="Heavy rain fell for a week and the river rose into a flood."),
    Document(id="p-flood", content="The flood damaged the crops and closed the roads for days."),
    Document(id="p-drought", content="Drought the year before had already damaged the crops."),
    Document(id="p-other", content="The museum opened a new wing for modern art."),
]


def runtime(tmp_path, extractor=None):
    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    store.write_documents(HashingDocumentEmbedder().run(PASSAGES)["documents"])
    return Runtime(store=store, chat_generator=extractor or ScriptedExtractor(), text_embedder=HashingTextEmbedder(),
                   allowed_modules=["tests"], graph_cache=tmp_path / "graph")


def test_registry_entries_and_parameters():
    assert registry.REGISTRY["causal_rag"].request_parameters == ("graph_top_k", "hops")
    assert registry.REGISTRY["causal_rag_indexing"].indexing
    assert "causal_rag_indexing" not in registry.query_pipelines()
    assert "causal_rag_indexing" not in registry.served_pipelines()


def test_the_graph_is_built_once_for_the_store_and_its_nodes_stay_out_of_the_passage_store(tmp_path):
    rt = runtime(tmp_path)
    result = rt.ask("causal_rag", "What damaged the crops after the heavy rain?", {"hops": 2, "graph_top_k": 2})
    trace = result.trace
    assert trace["seeds"] and trace["hops"] == 2 and trace["top_k"] == 2  # the per-request k and s reached it
    assert len(rt.graph_stats) == 1 and rt.graph_stats[0]["passages"] == 4
    assert all(not d.meta.get("cfrag_graph_node") for d in rt.store.filter_documents())  # the user's store untouched
    assert rt.store.count_documents() == 4
    graph = rt.built("causal_rag").get_component("graph_retriever")
    assert graph.node_retriever.document_store is rt.graph_store() and graph.document_store is rt.store
    assert rt.graph_store().count_documents() >= 4  # rain, flood, crops, roads, drought …
    assert result.documents  # the merged dense + graph passages the reader read
    rt.ask("causal_rag", "What closed the roads?")
    assert len(rt.graph_stats) == 1  # built once per store


def test_a_second_store_gets_its_own_graph_and_extraction_comes_from_the_cache(tmp_path):
    extractor = ScriptedExtractor()
    rt = runtime(tmp_path, extractor)
    rt.ask("causal_rag", "What damaged the crops?")
    calls = len(extractor.prompts)
    other = InMemoryDocumentStore(embedding_similarity_function="cosine")
    other.write_documents(HashingDocumentEmbedder().run(PASSAGES[:2])["documents"])
    rt.use_store(other)
    assert len(rt.graph_stats) == 2 and rt.graph_stats[1]["passages"] == 2
    assert rt.graph_stats[1].get("cached") == 2  # the two passages' extractions were cached by the first build
    assert len(extractor.prompts) == calls  # no extraction call for them


def test_a_question_no_node_matches_falls_back_to_the_dense_passages(tmp_path):
    rt = runtime(tmp_path, ScriptedExtractor(table={}))  # no extraction yields a triple: an empty graph
    result = rt.ask("causal_rag", "Which wing did the museum open?")
    assert result.trace["seeds"] == [] and result.documents
