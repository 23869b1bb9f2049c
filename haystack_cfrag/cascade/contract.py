"""What a cascade is made of, declared once: standard RAG's nodes, the gate, a router and a joiner, the method's nodes.

Every `*_auto.yml` is standard RAG as `standard_rag.yml` has it (its retriever returning embeddings, its in-process
llama.cpp reader keeping its reading of the first `READ_TOKENS` tokens it writes, in every node it serves), the gate
(`GATE_NODE`), a `ConditionalRouter` (`ROUTER_NODE`), the method's nodes as its own file has them (a name
standard RAG uses gets the cascade's prefix; a shared node is standard RAG's own) and an `AnswerJoiner`
(`JOINER_NODE`), and any router of its own on the gate's rule (`Cascade.routing`, read from `GATE_RULE`). Each is
declared in its family's `Cascade`; a test checks each shipped file against `composed`. The gate reads
`GATE_INPUTS` and gives `GATE_OUTPUTS`; a trace calls its reading `GATE_KEY`.

    >>> composed({"g": {"type": "G"}, "retriever": {"type": "R", "init_parameters": {}}},
    ...          {"g": {"type": "M"}, "x": {"type": "X"}, "retriever": {"type": "R"}}, "m",
    ...          shared=("retriever",))  # doctest: +NORMALIZE_WHITESPACE
    {'g': {'type': 'G'}, 'retriever': {'type': 'R', 'init_parameters': {'return_embedding': True}},
     'm_g': {'type': 'M'}, 'x': {'type': 'X'}}
"""

from __future__ import annotations

import copy
from typing import Any

from haystack_cfrag.adapters.token_reads import READ_TOKENS
from haystack_cfrag.cascade.math import GATE_KEY
from haystack_cfrag.cascade.parameters import GATE_NODE
from haystack_cfrag.pipelines.loading import with_overrides

ROUTER_NODE, JOINER_NODE = "router", "joiner"
GATE_INPUTS = ("generator.replies", "retriever.documents", "prompt_builder.prompt")
GATE_OUTPUTS = ("escalate", "decided_by", "answer", "trace")
GATE_RULE = "decided_by"
"""The gate's output naming the rule that decided (`cascade.math.RULES`)."""
ROUTES = ("escalated", "answered")
READER_TYPE = "LlamaCppLogprobsChatGenerator"


def composed(standard: dict[str, Any], method: dict[str, Any], prefix: str, shared: tuple[str, ...] = (),
             settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """The components a cascade must hold besides the gate, router and joiner, `settings` set on the method's
    nodes; ValueError where a node declared shared differs from standard RAG's."""
    method = with_overrides({"components": method}, settings)["components"]
    out = copy.deepcopy(standard)
    retriever = out.get("retriever")
    if isinstance(retriever, dict):
        retriever.setdefault("init_parameters", {})["return_embedding"] = True
    reader = copy.deepcopy(standard.get("generator"))
    if isinstance(reader, dict) and str(reader.get("type", "")).endswith(READER_TYPE):
        _reading(out, reader)
        method = copy.deepcopy(method)
        _reading(method, reader)
    for name, node in method.items():
        if name in shared:
            if not _same(out.get(name) or {}, node):
                raise ValueError(f"the method's '{name}' is declared shared but differs from standard RAG's")
            continue  # standard RAG's node: the cascade reuses it
        out[f"{prefix}_{name}" if name in standard else name] = copy.deepcopy(node)
    return out


def _reading(tree: Any, reader: dict[str, Any]) -> None:
    """Set `read_tokens` on standard RAG's reader wherever `tree` holds it (the nodes it serves too)."""
    if isinstance(tree, dict):
        if tree == reader:
            tree.setdefault("init_parameters", {})["read_tokens"] = READ_TOKENS
            return
        for value in tree.values():
            _reading(value, reader)
    elif isinstance(tree, list):
        for value in tree:
            _reading(value, reader)


def _same(ours: dict[str, Any], theirs: dict[str, Any]) -> bool:
    """Two nodes alike but for the passages' embeddings a retriever returns."""
    def bare(node: dict[str, Any]) -> dict[str, Any]:
        init = {k: v for k, v in (node.get("init_parameters") or {}).items() if k != "return_embedding"}
        return {**node, "init_parameters": init}

    return bare(ours) == bare(theirs)


__all__ = ["GATE_INPUTS", "GATE_KEY", "GATE_NODE", "GATE_OUTPUTS", "GATE_RULE", "JOINER_NODE", "READ_TOKENS",
           "ROUTER_NODE", "ROUTES", "composed"]
