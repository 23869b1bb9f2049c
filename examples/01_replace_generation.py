"""Example 1: replace generation with CounterfactualRAG (the retriever stays yours).

The diff from standard_rag.py: prompt builder, generator and answer builder give way to one
CounterfactualRAG that takes your retrieved documents, drafts standard RAG's answer and two
challengers from evidence strata, and settles a disagreement by a duel read in both orders
(`n_counterfactuals=3` adds the paper's counterfactual questions, retrieved through the same store).
    python examples/01_replace_generation.py
"""

from haystack import Pipeline
from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever

from haystack_cfrag import CounterfactualRAG


def build(store, text_embedder, generator):
    pipe = Pipeline()
    pipe.add_component("embedder", text_embedder)
    pipe.add_component("retriever", InMemoryEmbeddingRetriever(document_store=store, top_k=5))
    pipe.add_component("cf_rag", CounterfactualRAG(
        chat_generator=generator, text_embedder=text_embedder, max_workers=1, random_state=0,
        retriever=InMemoryEmbeddingRetriever(document_store=store, top_k=5)))
    pipe.connect("embedder.embedding", "retriever.query_embedding")
    pipe.connect("retriever.documents", "cf_rag.documents")
    return pipe


def ask(pipe, question):
    out = pipe.run({"embedder": {"text": question}, "cf_rag": {"query": question}})
    return out["cf_rag"]["answer"], out["cf_rag"]["trace"]


if __name__ == "__main__":
    from _demo import QUESTION, demo_components

    answer, trace = ask(build(*demo_components()), QUESTION)
    print("CF-RAG:", answer, "| decision:", trace["decision"], "| counterfactuals:", trace["counterfactuals"])
