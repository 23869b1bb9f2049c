"""CausalRAG's retrieval around the query (paper 004, §4.2), pure: k seeds, s-hop expansion, passage ranking,
and the ranges of k and s. `expand_hops` is the official `expand_subgraph` (edges followed both ways, reported in
their own direction, each node entered once, in a deterministic order).

>>> from haystack_cfrag.causal_rag.math.graph import Graph
>>> g = Graph()
>>> _ = g.add_edge("Rain", "causes", "Flood", passage_id="p1")
>>> _ = g.add_edge("flood", "damages", "Crops", passage_id="p2")
>>> sub = expand_hops(g, ["Crops"], hops=1)
>>> [(e.source, e.target) for e in sub.edges]     # found from Crops, reported Flood → Crops
[('Flood', 'Crops')]
>>> [(e.source, e.target) for e in expand_hops(g, ["Crops"], hops=2).edges]
[('Flood', 'Crops'), ('Rain', 'Flood')]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from haystack_cfrag.causal_rag.math.graph import Edge, Graph
from haystack_cfrag.causal_rag.math.names import clean_name, node_key
from haystack_cfrag.common.validation import check_int

# ------------------------------------------------------------------ parameters
DEFAULT_TOP_K = 3
"""k, the number of seed nodes nearest the query (the paper's and the official code's default)."""
MIN_TOP_K, MAX_TOP_K = 1, 10
"""The range of k (the paper sweeps 1–5)."""
DEFAULT_HOPS = 3
"""s, the number of expansion hops (the paper's and the official code's default)."""
MIN_HOPS, MAX_HOPS = 1, 10
"""The range of s (the paper sweeps 1–5)."""
DEFAULT_MAX_SUBGRAPH_EDGES = 100
"""Edges an expansion keeps at most (the official code keeps all; a hub node could flood the prompt)."""
MAX_SUBGRAPH_EDGES = 2000
"""The range of `max_edges` is [1, MAX_SUBGRAPH_EDGES]."""


def check_top_k(value: int, name: str = "top_k") -> None:
    """Raise ValueError unless `value` is an int in [MIN_TOP_K, MAX_TOP_K]."""
    check_int(name, value, MIN_TOP_K, MAX_TOP_K)


def check_hops(value: int, name: str = "hops") -> None:
    """Raise ValueError unless `value` is an int in [MIN_HOPS, MAX_HOPS]."""
    check_int(name, value, MIN_HOPS, MAX_HOPS)


# ------------------------------------------------------------------ expansion
@dataclass(frozen=True)
class Subgraph:
    """What `expand_hops` kept: node ids with the hop each was reached at, edges with theirs."""

    nodes: tuple[str, ...]
    node_hops: tuple[int, ...]
    edges: tuple[Edge, ...]
    edge_hops: tuple[int, ...]
    hops_reached: int
    truncated: bool

    def edge_dicts(self) -> list[dict[str, Any]]:
        return [e.to_dict() for e in self.edges]


def expand_hops(graph: Graph, seeds: Sequence[str], hops: int = DEFAULT_HOPS, *,
                max_edges: int = DEFAULT_MAX_SUBGRAPH_EDGES) -> Subgraph:
    """Expand `hops` rounds from `seeds` (unknown ones kept edgeless), following edges both ways and keeping each
    edge's direction; at most `max_edges` (`truncated`).

    >>> g = Graph()
    >>> for s, t in [("A", "B"), ("B", "C"), ("C", "A")]:       # a cycle
    ...     _ = g.add_edge(s, "causes", t)
    >>> sub = expand_hops(g, ["A"], hops=5)
    >>> sub.nodes, sub.node_hops, [(e.source, e.target) for e in sub.edges], sub.hops_reached
    (('A', 'B', 'C'), (0, 1, 1), [('A', 'B'), ('C', 'A'), ('B', 'C')], 2)
    """
    check_hops(hops)
    check_int("max_edges", max_edges, 1, MAX_SUBGRAPH_EDGES)
    hop_of: dict[str, int] = {}
    order: list[str] = []
    for seed in seeds:
        key = node_key(seed)
        if key and key not in hop_of:
            hop_of[key] = 0
            order.append(graph.node_id(seed) or clean_name(seed))
    kept: dict[tuple[str, str, str], tuple[Edge, int]] = {}
    frontier = list(order)
    reached = 0
    truncated = False
    for hop in range(1, hops + 1):
        new: list[str] = []
        grew = False
        for name in frontier:
            for edge in graph.edges_out(name) + graph.edges_in(name):
                if edge.key not in kept:
                    if len(kept) >= max_edges:
                        truncated = True
                        break
                    kept[edge.key] = (edge, hop)
                    grew = True
                other = edge.target if node_key(edge.source) == node_key(name) else edge.source
                other_key = node_key(other)
                if other_key not in hop_of:
                    hop_of[other_key] = hop
                    order.append(other)
                    new.append(other)
            if truncated:
                break
        reached = hop if grew else reached
        frontier = new
        if truncated or not frontier:
            break
    edges = list(kept.values())
    return Subgraph(nodes=tuple(order), node_hops=tuple(hop_of[node_key(n)] for n in order),
                    edges=tuple(e for e, _ in edges), edge_hops=tuple(h for _, h in edges),
                    hops_reached=reached, truncated=truncated)


def rank_passages(graph: Graph, subgraph: Subgraph, limit: int) -> list[str]:
    """Passage ids the subgraph cites, hop by hop from the seeds (ties as met), each once, at most `limit`.

    >>> g = Graph()
    >>> _ = g.add_node("A", passage_ids=["pa"])
    >>> _ = g.add_edge("A", "causes", "B", passage_id="p1")
    >>> _ = g.add_edge("B", "causes", "C", passage_id="p2")
    >>> rank_passages(g, expand_hops(g, ["A"], hops=2), limit=10)
    ['pa', 'p1', 'p2']
    """
    check_int("limit", limit, 0)
    by_hop: dict[int, tuple[list[list[str]], list[list[str]]]] = {}
    for name, hop in zip(subgraph.nodes, subgraph.node_hops, strict=True):
        by_hop.setdefault(hop, ([], []))[1].append(graph.node_passages(name))
    for edge, hop in zip(subgraph.edges, subgraph.edge_hops, strict=True):
        by_hop.setdefault(hop, ([], []))[0].append(list(edge.passage_ids))
    ranked: dict[str, None] = {}
    for hop in sorted(by_hop):
        edge_ids, node_ids = by_hop[hop]
        # a hop's edges before the nodes they reached: the edge's passage is what links them
        for ids in edge_ids + node_ids:
            for pid in ids:
                ranked.setdefault(pid, None)
    return list(ranked)[:limit]


__all__ = ["DEFAULT_HOPS", "DEFAULT_MAX_SUBGRAPH_EDGES", "DEFAULT_TOP_K", "MAX_HOPS", "MAX_SUBGRAPH_EDGES",
           "MAX_TOP_K", "MIN_HOPS", "MIN_TOP_K", "Subgraph", "check_hops", "check_top_k", "expand_hops",
           "rank_passages"]
