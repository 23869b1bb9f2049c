"""Grounded standard RAG: your standard_rag.py pipeline with CDF-RAG's answer checks after the generator.

The diff from standard_rag.py: one HallucinationChecker ("grounding") between the generator and
the answer builder. It splits the answer into claims, scores each with the reader's own support
(ReaderSupportScorer: log P(claim | question, retrieved passages), docs/support.md) and, when
more than half are unsupported (S_hall > δ), has the same generator rewrite the answer once from
the passages. The answer builder reads the checked answer; the check's score, decision and
claims come back beside it. Cost: one scoring per claim (a short answer is one claim, prefix
cached after the evidence) and at most one extra generation.

`build(..., causal_check=True)` also puts a CausalConsistencyChecker before the grounding check
(CDF-RAG's order): given causal edges C → E, an answer that reverses or denies one
(S_causal < τ) is regenerated once under stricter grounding. The edges come from a causal graph
of your documents (CausalRAG's graph retriever, or DualPathRetriever after it); this example
has no graph, so its __main__ passes **hand-written edges** for one passage of the demo corpus.
Each check corrects an answer at most once: the pipeline has no loop.
    python examples/grounded_rag.py
"""

from haystack import Pipeline
from haystack.components.builders import AnswerBuilder, ChatPromptBuilder
from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
from standard_rag import TEMPLATE

from haystack_cfrag.cdf_rag import CausalConsistencyChecker, HallucinationChecker
from haystack_cfrag.support import ReaderSupportScorer


def build(store, text_embedder, generator, support_scorer=None, causal_check=False):
    pipe = Pipeline()
    pipe.add_component("embedder", text_embedder)
    pipe.add_component("retriever", InMemoryEmbeddingRetriever(document_store=store, top_k=5))
    pipe.add_component("prompt_builder",
                       ChatPromptBuilder(template=TEMPLATE, required_variables=["query", "documents"]))
    pipe.add_component("llm", generator)
    scorer = support_scorer or ReaderSupportScorer(chat_generator=generator)  # the reader's own support
    pipe.add_component("grounding", HallucinationChecker(support_scorer=scorer, chat_generator=generator))
    pipe.add_component("answer_builder", AnswerBuilder(pattern=r"(?s)(?:.*?Answer:\s*)?([^\n]+)"))
    pipe.connect("embedder.embedding", "retriever.query_embedding")
    pipe.connect("retriever.documents", "prompt_builder.documents")
    pipe.connect("prompt_builder.prompt", "llm.messages")
    if causal_check:  # the causal check first, then the grounding check (the paper's order)
        pipe.add_component("causal_check", CausalConsistencyChecker(chat_generator=generator))
        pipe.connect("llm.replies", "causal_check.replies")
        pipe.connect("retriever.documents", "causal_check.documents")
        pipe.connect("causal_check.replies", "grounding.replies")
    else:
        pipe.connect("llm.replies", "grounding.replies")
    pipe.connect("retriever.documents", "grounding.documents")
    pipe.connect("grounding.replies", "answer_builder.replies")
    pipe.connect("retriever.documents", "answer_builder.documents")
    return pipe


def ask(pipe, question, causal_edges=None):
    """(answer, checks): the checked answer and each check's outputs ("grounding", "causal_check" if built)."""
    checks = {"grounding"} | ({"causal_check"} if "causal_check" in pipe.graph.nodes else set())
    inputs = {"embedder": {"text": question}, "prompt_builder": {"query": question},
              "grounding": {"query": question}, "answer_builder": {"query": question}}
    if "causal_check" in checks:
        inputs["causal_check"] = {"query": question, "causal_edges": list(causal_edges or [])}
    out = pipe.run(inputs, include_outputs_from=checks)
    return out["answer_builder"]["answers"][0].data, {name: out[name] for name in checks}


# Hand-written for the demo corpus's "Siege of Zara" passage (hotpotqa-99): a causal graph of your
# documents would supply such edges, each citing its passages.
CRUSADE_QUESTION = "What led to the Siege of Constantinople?"
CRUSADE_EDGES = [{"source": "Fourth Crusade", "target": "Siege of Constantinople", "relation": "led to",
                  "passage_ids": ["hotpotqa-99"]}]


if __name__ == "__main__":
    from _demo import QUESTION, demo_components

    # one pipeline with both checks (a component belongs to one pipeline); with no edges the causal
    # check decides nothing ("undefined") and only the grounding check acts
    pipe = build(*demo_components(), causal_check=True)
    for question, edges in ((QUESTION, None), (CRUSADE_QUESTION, CRUSADE_EDGES)):
        answer, checks = ask(pipe, question, edges)
        g, c = checks["grounding"], checks["causal_check"]
        print(f"{question}\n  grounded RAG: {answer}\n  S_hall: {g['s_hall']} ({g['decision']}), claims:",
              [(x["text"], round(x["support"], 3)) for x in g["claims"] if x["support"] is not None])
        print(f"  S_causal over {len(edges or [])} hand-written edge(s): {c['s_causal']} ({c['decision']})")
