"""What a cascade is made of, declared once: standard RAG's nodes, the gate, a router and a joiner, the method's nodes.

Every `*_auto.yml` is standard RAG exactly as `standard_rag.yml` has it (its retriever also returns the
passages' embeddings, which a method may read), the gate (`GATE_NODE`, an `EscalationGate` with its fitted
model), a `ConditionalRouter` (`ROUTER_NODE`: `escalated` or `answered`), the method's nodes exactly as its
own file has them — a node whose name standard RAG already uses gets the cascade's prefix (`cer_generator`) —
and an `AnswerJoiner` (`JOINER_NODE`). A cascade's escalation may set some of its method's init parameters
(`ESCALATION`: issue 61's cheaper escalations, measured in docs/cascade.md); those are the only differences.
A method node the cascade declares shared (`CASCADES`: CER's and CausalRAG's query embedder and retriever, the
same as standard RAG's but for the embeddings the retriever returns) is standard RAG's own: the method reads
what standard RAG retrieved. The files stay hand-written and commented; `composed` is what they
must hold, and a unit test checks each shipped cascade against it.

The gate's contract, what a family wires: the gate reads `generator.replies`, `retriever.documents` and
`prompt_builder.prompt` (`GATE_INPUTS`), gives `escalate`, `answer`, `trace` (`GATE_OUTPUTS`), and the
router reads `gate.escalate`. A cascade's trace calls the gate's reading `gate` everywhere (`GATE_KEY`).

    >>> composed({"g": {"type": "G"}, "retriever": {"type": "R", "init_parameters": {}}},
    ...          {"g": {"type": "M"}, "x": {"type": "X"}, "retriever": {"type": "R"}}, "m", shared=("retriever",))
    {'g': {'type': 'G'}, 'retriever': {'type': 'R', 'init_parameters': {'return_embedding': True}}, 'm_g': {'type': 'M'}, 'x': {'type': 'X'}}
"""

from __future__ import annotations

import copy
from typing import Any

from haystack_cfrag.cascade.math import GATE_KEY
from haystack_cfrag.cascade.parameters import GATE_NODE
from haystack_cfrag.pipelines.loading import with_overrides
from haystack_cfrag.models import EMBEDDED_SMALL_LLM

ROUTER_NODE, JOINER_NODE = "router", "joiner"
GATE_INPUTS = ("generator.replies", "retriever.documents", "prompt_builder.prompt")
GATE_OUTPUTS = ("escalate", "answer", "trace")
ROUTES = ("escalated", "answered")
CASCADES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "cf_rag_auto": ("cf_rag", "cf", ()),
    "cer_auto": ("cer", "cer", ("query_embedder", "retriever")),
    "causal_rag_auto": ("causal_rag", "causal", ("query_embedder", "retriever")),
    "cdf_rag_auto": ("cdf_rag", "cdf", ()),
}
"""cascade -> (its method's pipeline, the prefix of a method node whose name standard RAG uses, the method nodes that
are standard RAG's own: checked to be the same, then not repeated)."""


ESCALATION: dict[str, dict[str, Any]] = {
    "causal_rag_auto": {"summarizer.chat_generator.model": EMBEDDED_SMALL_LLM,
                        "summarizer.summary_max_tokens": 32, "summarizer.summary_max_edges": 12},
    "cdf_rag_auto": {"refiner.chat_generator.model": EMBEDDED_SMALL_LLM, "hallucination_checker.delta": 1.0},
    "cer_auto": {"selector.max_rounds": 1},
}
"""cascade -> what its escalation sets on its method's nodes, as parameter overrides (`node.init_parameter`,
a dotted path into a part: `refiner.chat_generator.model`), named as in the method's own file. Issue 61's
cheaper escalations, measured end to end (docs/cascade.md, "Cheaper escalations"): the refinement and the
summary on the small model (the reader's prompt cache left to the answer), the summary's subgraph and
reply capped, CDF-RAG's hallucination check reporting without rewriting (δ = 1: on PopQA the rewrite re-read
the passages on 16 of 20 escalations and changed one answer), CER's search one round long. Not here: CER's
screen (`screen=answer`) and CDF-RAG's follow-up rewrite (`rewrite_mode=follow_up`), each of which gave up
more PopQA wins."""


def composed(standard: dict[str, Any], method: dict[str, Any], prefix: str, shared: tuple[str, ...] = (),
             settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """The components a cascade must hold besides the gate, router and joiner (module doc): `settings`
    (`ESCALATION`'s) set on the method's nodes first; ValueError where a node declared shared differs from
    standard RAG's."""
    method = with_overrides({"components": method}, settings)["components"]
    out = copy.deepcopy(standard)
    retriever = out.get("retriever")
    if isinstance(retriever, dict):
        retriever.setdefault("init_parameters", {})["return_embedding"] = True
    for name, node in method.items():
        if name in shared:
            if not _same(out.get(name) or {}, node):
                raise ValueError(f"the method's '{name}' is declared shared but differs from standard RAG's")
            continue  # standard RAG's node: the cascade reuses it
        out[f"{prefix}_{name}" if name in standard else name] = copy.deepcopy(node)
    return out


def _same(ours: dict[str, Any], theirs: dict[str, Any]) -> bool:
    """Two nodes alike but for the passages' embeddings a retriever returns."""
    def bare(node: dict[str, Any]) -> dict[str, Any]:
        init = {k: v for k, v in (node.get("init_parameters") or {}).items() if k != "return_embedding"}
        return {**node, "init_parameters": init}

    return bare(ours) == bare(theirs)


__all__ = ["CASCADES", "ESCALATION", "GATE_INPUTS", "GATE_KEY", "GATE_NODE", "GATE_OUTPUTS", "JOINER_NODE",
           "ROUTER_NODE", "ROUTES", "composed"]
