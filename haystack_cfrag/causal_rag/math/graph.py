"""CausalRAG's graph (paper 004, §4.1), pure: nodes (one per `node_key`) and directed edges (source, relation,
target), each citing the passages it came from (at most `MAX_PASSAGES_PER_EDGE`).

>>> g = Graph()
>>> g.add_edge("Rain", "causes", "Flood", passage_id="p1")
Edge(source='Rain', target='Flood', relation='causes', passage_ids=('p1',), cue='')
>>> g.add_edge("flood", "damages", "Crops", passage_id="p2").source   # "flood" is the node "Flood"
'Flood'
>>> [(e.source, e.target) for e in g.edges_in("Crops")]
[('Flood', 'Crops')]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from haystack_cfrag.causal_rag.math.names import (
    clean_key,
    clean_name,
    clean_relation,
    clean_type,
    node_key,
    relation_key,
)
from haystack_cfrag.common.validation import check_int

# ------------------------------------------------------------------ limits (one place)
MAX_NODES = 200_000
"""Nodes one graph may hold; more raises a ValueError naming this limit."""
MAX_EDGES = 1_000_000
"""Edges one graph may hold; more raises a ValueError naming this limit."""
MAX_PASSAGES_PER_EDGE = 20
"""Passage ids an edge cites at most (the first ones seen); keeps node meta small in any store."""
MAX_PASSAGES_PER_NODE = 50
"""Passage ids a node cites at most (the first ones seen)."""
DEFAULT_RELATION = "related"
"""The relation of an extracted link that names none (the official code's default type)."""


# ------------------------------------------------------------------ records
@dataclass(frozen=True)
class Triple:
    """One extracted link: head --relation--> tail (names as extracted, types optional)."""

    head: str
    relation: str
    tail: str
    head_type: str = ""
    tail_type: str = ""
    cue: str = ""
    """The causal cue that made this a causal link ("because", "led to", …); "" when none fired."""


@dataclass(frozen=True)
class Edge:
    """A directed edge between two node ids, citing the passages it was extracted from."""

    source: str
    target: str
    relation: str
    passage_ids: tuple[str, ...] = ()
    cue: str = ""
    """The causal cue that fired when the edge was extracted (a non-generative extractor's); "" if none."""

    def to_dict(self) -> dict[str, Any]:
        """{"source", "target", "relation", "passage_ids"} (the record stored in node meta), and "cue" when
        a causal cue made the edge."""
        record = {"source": self.source, "target": self.target, "relation": self.relation,
                  "passage_ids": list(self.passage_ids)}
        if self.cue:
            record["cue"] = self.cue
        return record

    @property
    def key(self) -> tuple[str, str, str]:
        return (node_key(self.source), relation_key(self.relation), node_key(self.target))


@dataclass
class _Node:
    node_id: str
    node_type: str = ""
    passage_ids: list[str] = field(default_factory=list)


@dataclass
class _EdgeRec:
    source: str
    target: str
    relation: str
    passage_ids: list[str] = field(default_factory=list)
    cue: str = ""

    def frozen(self) -> Edge:
        return Edge(self.source, self.target, self.relation, tuple(self.passage_ids), self.cue)


def _cite(ids: list[str], passage_ids: Iterable[Any], limit: int) -> None:
    for pid in passage_ids:
        if isinstance(pid, str) and pid and pid not in ids and len(ids) < limit:
            ids.append(pid)


class Graph:
    """Nodes (by key) and directed edges (by (source key, relation key, target key)), in insertion order."""

    def __init__(self, *, max_nodes: int = MAX_NODES, max_edges: int = MAX_EDGES) -> None:
        check_int("max_nodes", max_nodes, 1, MAX_NODES)
        check_int("max_edges", max_edges, 1, MAX_EDGES)
        self.max_nodes = max_nodes
        self.max_edges = max_edges
        self._nodes: dict[str, _Node] = {}
        self._edges: dict[tuple[str, str, str], _EdgeRec] = {}
        self._out: dict[str, list[tuple[str, str, str]]] = {}
        self._in: dict[str, list[tuple[str, str, str]]] = {}

    def __len__(self) -> int:
        return len(self._nodes)

    @property
    def n_edges(self) -> int:
        return len(self._edges)

    def __contains__(self, name: object) -> bool:
        return node_key(name) in self._nodes

    # ---------------------------------------------------------- building
    def add_node(self, name: Any, node_type: Any = "", passage_ids: Iterable[Any] = ()) -> str | None:
        """Add (or merge into) the node named `name`; its id, or None (unusable name). ValueError when full."""
        clean = clean_name(name)
        key = clean_key(clean)
        if not key:
            return None
        node = self._nodes.get(key)
        if node is None:
            if len(self._nodes) >= self.max_nodes:
                raise ValueError(f"the causal graph exceeds MAX_NODES={self.max_nodes} nodes; "
                                 "index fewer passages per graph or raise the limit.")
            node = self._nodes[key] = _Node(clean)
        if not node.node_type:
            node.node_type = clean_type(node_type)
        _cite(node.passage_ids, passage_ids, MAX_PASSAGES_PER_NODE)
        return node.node_id

    def add_edge(self, source: Any, relation: Any, target: Any, *, passage_id: str | None = None,
                 passage_ids: Iterable[Any] = (), source_type: Any = "", target_type: Any = "",
                 cue: Any = "") -> Edge | None:
        """Add (or merge into) the edge source --relation--> target (its ends become nodes citing the passage;
        `cue`: the first that fired); None for an unusable one or a self-loop. ValueError when full."""
        cited = ([passage_id] if passage_id else []) + list(passage_ids)
        s_key, t_key = node_key(source), node_key(target)
        rel = clean_relation(relation) or DEFAULT_RELATION
        if not s_key or not t_key or s_key == t_key:
            return None
        key = (s_key, relation_key(rel), t_key)
        rec = self._edges.get(key)
        if rec is None and len(self._edges) >= self.max_edges:
            raise ValueError(f"the causal graph exceeds MAX_EDGES={self.max_edges} edges; "
                             "index fewer passages per graph or raise the limit.")
        src = self.add_node(source, source_type, cited)
        tgt = self.add_node(target, target_type, cited)
        assert src is not None and tgt is not None  # noqa: S101  (keys were non-empty)
        if rec is None:
            rec = self._edges[key] = _EdgeRec(src, tgt, rel)
            self._out.setdefault(s_key, []).append(key)
            self._in.setdefault(t_key, []).append(key)
        if not rec.cue and isinstance(cue, str) and cue:
            rec.cue = clean_relation(cue)
        _cite(rec.passage_ids, cited, MAX_PASSAGES_PER_EDGE)
        return rec.frozen()

    def add_triples(self, triples: Iterable[Triple], passage_id: str | None = None) -> int:
        """Add extracted triples citing `passage_id`; the number that made an edge."""
        added = 0
        for t in triples:
            edge = self.add_edge(t.head, t.relation, t.tail, passage_id=passage_id,
                                 source_type=t.head_type, target_type=t.tail_type, cue=t.cue)
            added += edge is not None
        return added

    def add_edge_record(self, record: Any) -> Edge | None:
        """Add an edge from its stored dict {"source", "target", "relation", "passage_ids"}; None if malformed."""
        if not isinstance(record, Mapping):
            return None
        ids = record.get("passage_ids")
        ids = ids if isinstance(ids, (list, tuple)) else ()
        return self.add_edge(record.get("source"), record.get("relation"), record.get("target"),
                             passage_ids=ids, cue=record.get("cue", ""))

    # ---------------------------------------------------------- reading
    def node_ids(self) -> list[str]:
        """Node ids in insertion order."""
        return [n.node_id for n in self._nodes.values()]

    def node_id(self, name: Any) -> str | None:
        """The id of the node named `name` (any spelling with the same key), or None."""
        node = self._nodes.get(node_key(name))
        return node.node_id if node else None

    def node_type(self, name: Any) -> str:
        node = self._nodes.get(node_key(name))
        return node.node_type if node else ""

    def node_passages(self, name: Any) -> list[str]:
        node = self._nodes.get(node_key(name))
        return list(node.passage_ids) if node else []

    def edges(self) -> list[Edge]:
        """All edges in insertion order."""
        return [rec.frozen() for rec in self._edges.values()]

    @property
    def n_causal_edges(self) -> int:
        """Edges a causal cue made (`Edge.cue` set)."""
        return sum(1 for rec in self._edges.values() if rec.cue)

    def edges_out(self, name: Any) -> list[Edge]:
        """The node's edges out, sorted by (target key, relation key)."""
        keys = sorted(self._out.get(node_key(name), ()), key=lambda k: (k[2], k[1]))
        return [self._edges[k].frozen() for k in keys]

    def edges_in(self, name: Any) -> list[Edge]:
        """The node's edges in, sorted by (source key, relation key)."""
        keys = sorted(self._in.get(node_key(name), ()), key=lambda k: (k[0], k[1]))
        return [self._edges[k].frozen() for k in keys]


__all__ = ["DEFAULT_RELATION", "MAX_EDGES", "MAX_NODES", "MAX_PASSAGES_PER_EDGE", "MAX_PASSAGES_PER_NODE",
           "Edge", "Graph", "Triple"]
