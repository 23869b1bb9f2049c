"""The baselines and controls as the layers above see them: standard RAG, closed book, hybrid and order RAG.

    >>> [e.name for e in FAMILY.pipelines if e.control], FAMILY.request_parameters
    (['standard_rag', 'hybrid_rag', 'order_rag'], ('top_k', 'order'))
"""

from __future__ import annotations

from haystack_cfrag.baseline.parameters import HYBRID_PARAMETERS, ORDER_PARAMETERS, STANDARD_PARAMETERS
from haystack_cfrag.family import Entry, Family

FAMILY = Family(
    name="baseline",
    parameters=ORDER_PARAMETERS,
    request_parameters=("top_k", "order"),
    pipelines=(
        Entry("standard_rag", "top-k retrieval -> one generation: the baseline of every comparison "
              "(standard_rag[top_k=6]: one passage more)", tuple(STANDARD_PARAMETERS), injection=True,
              default_system=True, control="retrieval", api_description=(
                  "Answer a question with standard RAG (top-k retrieval, one generation): the baseline of every "
                  "method.\n\nReturns the answer and the documents it was given (no trace: there is no "
                  "arbitration).")),
        Entry("closed_book", "the same LLM without retrieval", (), default_system=True),
        Entry("hybrid_rag", "control: Haystack's hybrid, BM25 + embedding retrievers joined by reciprocal rank "
              "fusion -> one generation", HYBRID_PARAMETERS, default_system=True,
              control="retrieval"),
        Entry("order_rag", "control: standard RAG's passages in another fixed order (reversed) -> one generation: "
              "how many answers change from order alone", ORDER_PARAMETERS, default_system=True,
              control="order"),
    ),
    components=("haystack_cfrag.baseline.",),
)

__all__ = ["FAMILY"]
