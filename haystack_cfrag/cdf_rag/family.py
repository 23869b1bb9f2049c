"""CDF-RAG as the layers above see it: its table, its three pipelines, its by-stage trace view. Its graph path
borrows CausalRAG's `k` and graph preparation by name (nothing of it is imported).

    >>> FAMILY.request_parameters, FAMILY.borrowed
    (('refinement', 'graph_top_k'), {'graph_top_k': 'causal_rag'})
"""

from __future__ import annotations

from haystack_cfrag.cdf_rag import trace as view
from haystack_cfrag.cdf_rag.parameters import PARAMETERS
from haystack_cfrag.family import Cascade, Commands, Entry, Family
from haystack_cfrag.models import EMBEDDED_SMALL_LLM

FAMILY = Family(
    name="cdf_rag",
    parameters=PARAMETERS,
    request_parameters=("refinement", "graph_top_k"),
    pipelines=(
        Entry("cdf_rag", "refine the question, retrieve on the dense and graph paths, answer, then the "
              "causal-consistency and hallucination checks (docs/cdf_rag.md)", api_description=(
                  "Answer a question with CDF-RAG: a refined question, dense and causal-graph retrieval merged, one "
                  "generation, then a causal-consistency check (one regeneration) and a hallucination check (one "
                  "rewrite).\n\nReturns the answer, the passages and each check's score and decision."),
              parameters=("refinement", "tau", "delta", "support_threshold", "rewrite_mode", "graph_top_k",
                          "merge_mode", "refiner_model")),
        Entry("cdf_rag_auto", "the cascade: standard RAG, then CDF-RAG only where the escalation gate says the "
              "evidence may conflict (docs/cascade.md)", cascade=Cascade(escalation={
                  # issue 61's cheaper escalation (docs/cascade.md): the refinement on the small model (the
                  # reader's prompt cache left to the answer), the hallucination check only reporting
                  "refiner.chat_generator.model": EMBEDDED_SMALL_LLM, "hallucination_checker.delta": 1.0}),
              parameters=("refinement", "tau", "delta", "support_threshold", "rewrite_mode", "graph_top_k",
                          "merge_mode", "refiner_model")),
        Entry("grounded_rag", "standard RAG, then CDF-RAG's causal-consistency and hallucination checks alone "
              "(docs/cdf_rag.md, 'Grounded standard RAG')",
              parameters=("tau", "delta", "support_threshold", "rewrite_mode", "graph_top_k")),
        Entry("grounded_rag_lite", "standard RAG, then the hallucination check alone: no graph to build "
              "(docs/cdf_rag.md, 'Grounded standard RAG')", parameters=("delta", "support_threshold", "rewrite_mode")),
    ),
    record=view.record,
    by_stage=True,
    commands=Commands(view=view),
    borrowed={"graph_top_k": "causal_rag"},
    prepare_store="causal_rag",
    components=("haystack_cfrag.cdf_rag.",),
)

__all__ = ["FAMILY"]
