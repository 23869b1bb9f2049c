"""The recommended wiring runs as Haystack pipelines: indexing (builder → writer) and query
(embedder → graph retriever → summarizer → prompt builder, dense passages joined as the fallback)."""

from typing import Any

from haystack import Document, Pipeline, component
from haystack.components.builders import PromptBuilder
from haystack.components.joiners import DocumentJoiner
from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
from haystack.components.writers import DocumentWriter
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.document_stores.types import DuplicatePolicy

from haystack_cfrag.causal_rag import CausalGraphBuilder, CausalGraphRetriever, CausalSummarizer
from haystack_cfrag.causal_rag.prompts import CAUSAL_RAG_ANSWER_TEMPLATE, SUMMARY_FIRST_ANSWER_TEMPLATE

from .fakes import ScriptedExtractor, ScriptedGenerator, TableEmbedder

VECTORS = {"Heavy rain": [1.0, 0, 0, 0, 0.1], "Flood": [0, 1.0, 0, 0, 0.1], "Crops": [0, 0, 1.0, 0, 0.1],
           "Roads": [0, 0, 0, 1.0, 0.1], "Drought": [0.1, 0, 0, 0, 1.0]}
DOCS = [Document(id="p1", content="Heavy rain fell for three days over the valley, and a flood followed."),
        Document(id="p2", content="The flood that followed ruined the crops and closed the roads."),
        Document(id="p9", content="A passage about music.")]


@component
class WordEmbedder:
    """A text embedder: the vector of the first node name in the text (seeded vectors)."""

    @component.output_types(embedding=list[float])
    def run(self, text: str) -> dict[str, Any]:
        hit = next((v for k, v in VECTORS.items() if k.lower() in text.lower()), [0.2] * 5)
        return {"embedding": [float(x) for x in hit]}


def index(store):
    passages = TableEmbedder({d.content: [0.3, 0.3, 0.3, 0.3, 0.3] for d in DOCS}, dimension=5)
    pipe = Pipeline()
    pipe.add_component("builder", CausalGraphBuilder(chat_generator=ScriptedExtractor(),
                                                     document_embedder=TableEmbedder(VECTORS, dimension=5)))
    pipe.add_component("passage_embedder", passages)
    pipe.add_component("joiner", DocumentJoiner(join_mode="concatenate"))
    pipe.add_component("writer", DocumentWriter(document_store=store, policy=DuplicatePolicy.OVERWRITE))
    pipe.connect("builder.nodes", "joiner.documents")
    pipe.connect("builder.documents", "passage_embedder.documents")
    pipe.connect("passage_embedder.documents", "joiner.documents")
    pipe.connect("joiner.documents", "writer.documents")
    return pipe.run({"builder": {"documents": DOCS}})


def query_pipeline(store, generator, summary_calls=1, template=CAUSAL_RAG_ANSWER_TEMPLATE):
    pipe = Pipeline()
    passage_filter = {"field": "meta.cfrag_graph_passage", "operator": "==", "value": True}
    pipe.add_component("embedder", WordEmbedder())
    pipe.add_component("graph", CausalGraphRetriever(node_retriever=InMemoryEmbeddingRetriever(document_store=store)))
    pipe.add_component("dense", InMemoryEmbeddingRetriever(document_store=store, filters=passage_filter, top_k=1))
    pipe.add_component("joiner", DocumentJoiner(join_mode="concatenate", sort_by_score=False))
    pipe.add_component("summarizer", CausalSummarizer(chat_generator=generator, summary_calls=summary_calls))
    pipe.add_component("prompt", PromptBuilder(template=template, required_variables=["query", "documents", "summary"]))
    pipe.connect("embedder.embedding", "graph.query_embedding")
    pipe.connect("embedder.embedding", "dense.query_embedding")
    pipe.connect("graph.nodes", "summarizer.nodes")
    pipe.connect("graph.causal_edges", "summarizer.causal_edges")
    pipe.connect("graph.documents", "summarizer.documents")
    pipe.connect("graph.documents", "joiner.documents")
    pipe.connect("dense.documents", "joiner.documents")
    pipe.connect("joiner.documents", "prompt.documents")
    pipe.connect("summarizer.summary", "prompt.summary")
    return pipe


def test_index_then_query_through_pipelines():
    store = InMemoryDocumentStore()
    out = index(store)
    assert out["writer"]["documents_written"] == 4 + 3   # 4 nodes (no Drought passage), 3 passages
    generator = ScriptedGenerator(["Causal paths:\n- Heavy rain -> Flood -> Crops\n"
                                   "Summary: Rain flooded the valley; the flood ruined the crops."])
    pipe = query_pipeline(store, generator)
    q = "Why were the crops ruined?"
    result = pipe.run({"embedder": {"text": q}, "summarizer": {"query": q}, "prompt": {"query": q}},
                      include_outputs_from={"graph", "summarizer"})
    prompt = result["prompt"]["prompt"]
    notes = "Notes (a causal summary of the documents, for context only):\n"
    assert prompt.startswith("Answer the question using the documents below.\n\nDocuments:\n[1] ")
    assert f"{notes}Rain flooded the valley; the flood ruined the crops.\n\nQuestion: {q}" in prompt
    assert prompt.index("The flood that followed ruined the crops") < prompt.index(notes)  # the notes after them
    assert "Heavy rain fell" in prompt
    assert ("Flood", "Crops") in [(e["source"], e["target"]) for e in result["graph"]["causal_edges"]]
    assert len(generator.prompts) == 1 and result["summarizer"]["paths"] == "- Heavy rain -> Flood -> Crops"


def test_the_official_two_calls_with_the_summary_first_prompt():
    store = InMemoryDocumentStore()
    index(store)
    generator = ScriptedGenerator(["Report: rain → flood → crops.",
                                   "Rain flooded the valley; the flood ruined the crops."])
    pipe = query_pipeline(store, generator, summary_calls=2, template=SUMMARY_FIRST_ANSWER_TEMPLATE)
    q = "Why were the crops ruined?"
    result = pipe.run({"embedder": {"text": q}, "summarizer": {"query": q}, "prompt": {"query": q}})
    assert "Causal summary:\nRain flooded the valley; the flood ruined the crops." in result["prompt"]["prompt"]
    assert len(generator.prompts) == 2


def test_no_graph_node_still_answers_from_dense_passages():
    store = InMemoryDocumentStore()
    store.write_documents([Document(id="p9", content="A passage about music.", embedding=[0.2] * 5,
                                    meta={"cfrag_graph_passage": True})])
    generator = ScriptedGenerator(["unused"])
    q = "Who plays the piano?"
    result = query_pipeline(store, generator).run({"embedder": {"text": q}, "summarizer": {"query": q},
                                                   "prompt": {"query": q}}, include_outputs_from={"graph"})
    assert result["graph"]["degradations"] == [{"stage": "graph_retrieval", "reason": "no_graph_node"}]
    assert "[1] A passage about music." in result["prompt"]["prompt"] and generator.prompts == []
