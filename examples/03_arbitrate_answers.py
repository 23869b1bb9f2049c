"""Example 3: add only CausalArbitrationRanker to pick among answers your pipeline already drafts.

A hybrid pipeline drafts two answers, one from BM25 and one from embedding retrieval, and
joins them (AnswerJoiner). CausalArbitrationRanker scores each answer's evidence against the
question and its counterfactuals (one expander call) and keeps the causally supported one.
    python examples/03_arbitrate_answers.py
"""

from haystack import Pipeline, component
from haystack.components.builders import AnswerBuilder, ChatPromptBuilder
from haystack.components.joiners import AnswerJoiner
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever, InMemoryEmbeddingRetriever
from haystack.dataclasses import ChatMessage
from standard_rag import TEMPLATE

from haystack_cfrag import CausalArbitrationRanker, CounterfactualQueryExpander


@component
class SharedGenerator:
    """A pipeline node forwarding to one shared model instance, so both branches load the model once."""

    def __init__(self, generator):
        self.generator = generator

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage]):
        return self.generator.run(messages=messages)


def build(store, text_embedder, generator):
    pipe = Pipeline()
    pipe.add_component("embedder", text_embedder)
    pipe.add_component("bm25", InMemoryBM25Retriever(document_store=store, top_k=3))
    pipe.add_component("dense", InMemoryEmbeddingRetriever(document_store=store, top_k=3))
    pipe.add_component("joiner", AnswerJoiner())
    for branch in ("bm25", "dense"):
        pipe.add_component(f"prompt_{branch}", ChatPromptBuilder(template=TEMPLATE, required_variables="*"))
        pipe.add_component(f"llm_{branch}", SharedGenerator(generator))
        pipe.add_component(f"answers_{branch}", AnswerBuilder(pattern=r"(?s)(?:.*?Answer:\s*)?([^\n]+)"))
        pipe.connect(f"{branch}.documents", f"prompt_{branch}.documents")
        pipe.connect(f"prompt_{branch}.prompt", f"llm_{branch}.messages")
        pipe.connect(f"llm_{branch}.replies", f"answers_{branch}.replies")
        pipe.connect(f"{branch}.documents", f"answers_{branch}.documents")
        pipe.connect(f"answers_{branch}.answers", "joiner.answers")
    pipe.connect("embedder.embedding", "dense.query_embedding")
    # --- the CF-RAG part: counterfactuals + arbitration over the drafted answers
    pipe.add_component("expander", CounterfactualQueryExpander(chat_generator=generator, text_embedder=text_embedder))
    pipe.add_component("ranker", CausalArbitrationRanker(text_embedder=text_embedder))
    pipe.connect("joiner.answers", "ranker.answers")
    pipe.connect("expander.counterfactuals", "ranker.counterfactuals")
    pipe.connect("expander.degradations", "ranker.degradations")  # shown in trace["degradations"]
    return pipe


def ask(pipe, question):
    data = {"embedder": {"text": question}, "bm25": {"query": question}, "expander": {"query": question},
            "ranker": {"query": question}}
    for branch in ("bm25", "dense"):
        data[f"prompt_{branch}"] = {"query": question}
        data[f"answers_{branch}"] = {"query": question}
    out = pipe.run(data)
    return out["ranker"]["answer"], out["ranker"]["trace"]


if __name__ == "__main__":
    from _demo import QUESTION, demo_components

    answer, trace = ask(build(*demo_components()), QUESTION)
    for d in trace["drafts"]:
        print(f"draft {d['index']}: {d['answer']!r}  psi {d['psi']:+.3f}  causal {d['scores']['causal']:+.3f}")
    print("chosen:", answer)
