"""Example 2: add only CounterfactualQueryExpander + MultiQueryRetriever in front of your retriever.

Your prompt, generator and answer builder are unchanged; the generator now sees evidence
retrieved for the question *and* its counterfactuals, each document tagged with the queries
that found it (meta["cfrag_provenance"]). Cost: one extra LLM call, N extra retrievals.
    python examples/02_expand_queries.py
"""

from haystack import Pipeline
from haystack.components.builders import AnswerBuilder, ChatPromptBuilder
from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
from standard_rag import TEMPLATE, connect_generation

from haystack_cfrag import CounterfactualQueryExpander, MultiQueryRetriever


def build(store, text_embedder, generator):
    pipe = Pipeline()
    pipe.add_component("expander", CounterfactualQueryExpander(chat_generator=generator, text_embedder=text_embedder))
    pipe.add_component("retriever", MultiQueryRetriever(
        retriever=InMemoryEmbeddingRetriever(document_store=store), query_embedder=text_embedder, top_k=3))
    pipe.add_component("prompt_builder",
                       ChatPromptBuilder(template=TEMPLATE, required_variables=["query", "documents"]))
    pipe.add_component("llm", generator)
    pipe.add_component("answer_builder", AnswerBuilder(pattern=r"(?s)(?:.*?Answer:\s*)?([^\n]+)"))
    pipe.connect("expander.queries", "retriever.queries")
    connect_generation(pipe)  # prompt → llm → answers, unchanged
    return pipe


def ask(pipe, question):
    out = pipe.run({"expander": {"query": question}, "prompt_builder": {"query": question},
                    "answer_builder": {"query": question}}, include_outputs_from={"expander"})
    return out["answer_builder"]["answers"][0], out["expander"]["queries"]


if __name__ == "__main__":
    from _demo import QUESTION, demo_components

    answer, queries = ask(build(*demo_components()), QUESTION)
    print("queries:", queries)
    print("answer:", answer.data, "| evidence:", [d.meta.get("title") for d in answer.documents])
