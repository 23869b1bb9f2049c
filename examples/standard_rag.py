"""Haystack's standard RAG pipeline: retriever → prompt builder → generator → answer builder.

The starting point of the three examples; run it to see the Correlation Trap:
    python examples/standard_rag.py
"""

from haystack import Pipeline
from haystack.components.builders import AnswerBuilder, ChatPromptBuilder
from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
from haystack.dataclasses import ChatMessage

TEMPLATE = [
    ChatMessage.from_user(
        "Answer the question using the documents below.\n\nDocuments:\n"
        "{% for doc in documents %}[{{ loop.index }}] {{ doc.content }}\n{% endfor %}\n"
        "Question: {{ query }}\n\nReply in this format:\nAnswer: <the short answer only>"
    )
]


def build(store, text_embedder, generator):
    pipe = Pipeline()
    pipe.add_component("embedder", text_embedder)
    pipe.add_component("retriever", InMemoryEmbeddingRetriever(document_store=store, top_k=5))
    pipe.add_component("prompt_builder",
                       ChatPromptBuilder(template=TEMPLATE, required_variables=["query", "documents"]))
    pipe.add_component("llm", generator)
    pipe.add_component("answer_builder", AnswerBuilder(pattern=r"(?s)(?:.*?Answer:\s*)?([^\n]+)"))
    pipe.connect("embedder.embedding", "retriever.query_embedding")
    connect_generation(pipe)
    return pipe


def connect_generation(pipe):
    """retriever.documents → prompt → llm → answers (example 2 keeps exactly this part)."""
    pipe.connect("retriever.documents", "prompt_builder.documents")
    pipe.connect("prompt_builder.prompt", "llm.messages")
    pipe.connect("llm.replies", "answer_builder.replies")
    pipe.connect("retriever.documents", "answer_builder.documents")


def ask(pipe, question):
    out = pipe.run({"embedder": {"text": question}, "prompt_builder": {"query": question},
                    "answer_builder": {"query": question}})
    return out["answer_builder"]["answers"][0].data


if __name__ == "__main__":
    from _demo import QUESTION, demo_components

    print("standard RAG:", ask(build(*demo_components()), QUESTION))
