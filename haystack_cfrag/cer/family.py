"""CER as the layers above see it: its selector's table, its pipeline, its trace view (θ and p_entail's reading
per request: each distinct value builds the pipeline once).

    >>> FAMILY.entry("cer").cascade, FAMILY.request_parameters
    (False, ('theta', 'entailment'))
"""

from __future__ import annotations

from haystack_cfrag.cer import trace as view
from haystack_cfrag.cer.parameters import PARAMETERS
from haystack_cfrag.family import Cascade, Commands, Entry, Family, Sweeps

FAMILY = Family(
    name="cer",
    parameters=PARAMETERS,
    request_parameters=("theta", "entailment"),
    pipelines=(
        Entry("cer", "standard RAG over a minimal sufficient evidence set of the top 5 (docs/cer.md)",
              api_description=(
                  "Answer a question with CER: the smallest set of the retrieved passages whose answer the reader "
                  "supports, then one generation over that set.\n\nReturns the answer, the kept passages and the "
                  "selector's trace (F̂ per step, pruned passages, necessity).")),
        Entry("cer_auto", "the cascade: standard RAG, then CER only where the escalation gate says the evidence "
              "may conflict (docs/cascade.md)", cascade=Cascade(
                  shared=("query_embedder", "retriever"),  # the method reads what standard RAG retrieved
                  escalation={"selector.max_rounds": 1})),  # issue 61: one round of search (docs/cascade.md)
    ),
    record=view.record,
    commands=Commands(view=view),
    sweeps=Sweeps(axes=("theta", "epsilon", "delta", "mu", "entailment", "gate_threshold")),
    components=("haystack_cfrag.cer.",),
)

__all__ = ["FAMILY"]
