"""CausalRAG's graph (paper 004, §4.1–4.2): node names, nodes and directed edges, s-hop expansion.

Pure: no Haystack. The builder merges the extractions of many passages into a `Graph`; the
retriever rebuilds the part of it around the query from the node Documents it reads back and
expands it with `expand_hops`.

- A node's id is its name as first written (cleaned: `clean_name`); two names with the same
  `node_key` (case, spacing, surrounding quotes and punctuation, a leading "the" ignored) are
  one node.
- An edge is (source, relation, target), directed as extracted (cause → effect, head → tail),
  and cites the ids of the passages it was extracted from; the same triple from several
  passages is one edge citing them all (at most `MAX_PASSAGES_PER_EDGE`).
- `expand_hops` is the official retriever's expansion (Pwnb/CausalRAG `expand_subgraph`):
  from the seeds, `hops` rounds; each round collects every edge that touches the frontier,
  followed in either direction but reported in its own direction, and the nodes it reaches
  that were not seen yet form the next frontier. Cycles end because a node is entered once.
  Order is deterministic: seeds as given, then each node's edges out before edges in, each
  sorted by (other node, relation).

>>> g = Graph()
>>> g.add_edge("Rain", "causes", "Flood", passage_id="p1")
Edge(source='Rain', target='Flood', relation='causes', passage_ids=('p1',), cue='')
>>> g.add_edge("flood", "damages", "Crops", passage_id="p2").source   # "flood" is the node "Flood"
'Flood'
>>> sub = expand_hops(g, ["Crops"], hops=1)
>>> [(e.source, e.target) for e in sub.edges]     # found from Crops, reported Flood → Crops
[('Flood', 'Crops')]
>>> [(e.source, e.target) for e in expand_hops(g, ["Crops"], hops=2).edges]
[('Flood', 'Crops'), ('Rain', 'Flood')]
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from haystack_cfrag.common.validation import check_int

# ------------------------------------------------------------------ parameters and limits (one place)
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
MAX_NODES = 200_000
"""Nodes one graph may hold; more raises a ValueError naming this limit."""
MAX_EDGES = 1_000_000
"""Edges one graph may hold; more raises a ValueError naming this limit."""
MAX_NAME_CHARS = 120
"""A node name longer than this (after cleaning) is refused: it is a sentence, not an entity."""
MAX_RELATION_CHARS = 60
"""A relation is cut to this many characters."""
MAX_TYPE_CHARS = 40
"""A node type is cut to this many characters."""
MAX_PASSAGES_PER_EDGE = 20
"""Passage ids an edge cites at most (the first ones seen); keeps node meta small in any store."""
MAX_PASSAGES_PER_NODE = 50
"""Passage ids a node cites at most (the first ones seen)."""
DEFAULT_RELATION = "related"
"""The relation of an extracted link that names none (the official code's default type)."""

NODE_DOCUMENT_PREFIX = "cfrag_graph_node:"
NODE_FLAG = "cfrag_graph_node"
"""Node Documents carry meta[NODE_FLAG] = True (the graph retriever filters on it)."""


def check_top_k(value: int, name: str = "top_k") -> None:
    """Raise ValueError unless `value` is an int in [MIN_TOP_K, MAX_TOP_K]."""
    check_int(name, value, MIN_TOP_K, MAX_TOP_K)


def check_hops(value: int, name: str = "hops") -> None:
    """Raise ValueError unless `value` is an int in [MIN_HOPS, MAX_HOPS]."""
    check_int(name, value, MIN_HOPS, MAX_HOPS)


# ------------------------------------------------------------------ names
_CONTROL = re.compile(r"[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028\u2029\ufeff]")
_EDGE_CHARS = " \t\"'`*_#>[](){}<«»“”‘’.,;:!?-–—"
_SPECIAL_TOKEN = re.compile(r"<\|[^|]{0,40}\|>|</?s>")
_LEADING_ARTICLE = re.compile(r"^(?:the|a|an)\s+")


def clean_name(text: Any) -> str:
    """A node name as shown: NFKC, no control characters or chat-template tokens, single spaces,
    no surrounding quotes, markdown or punctuation; "" when nothing is left or it is too long.

    >>> clean_name('  "Heath   Ledger" ')
    'Heath Ledger'
    >>> clean_name("**Joker**."), clean_name("<|im_end|>"), clean_name("x" * 500)
    ('Joker', '', '')
    """
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        return ""
    text = unicodedata.normalize("NFKC", str(text))
    text = _SPECIAL_TOKEN.sub(" ", _CONTROL.sub(" ", text))
    text = " ".join(text.split()).strip(_EDGE_CHARS)
    if not text or len(text) > MAX_NAME_CHARS:
        return ""
    return text


def _key(clean: str) -> str:
    key = _LEADING_ARTICLE.sub("", clean.casefold())
    return " ".join(key.replace("_", " ").split())


def node_key(name: Any) -> str:
    """The key two names of one node share ("" for no name): case, spacing, a leading article ignored.

    >>> node_key("The  Joker"), node_key("joker!"), node_key("JOKER")
    ('joker', 'joker', 'joker')
    """
    return _key(clean_name(name))


def clean_relation(text: Any) -> str:
    """A relation as shown: cleaned like a name, cut to MAX_RELATION_CHARS; "" when empty.

    >>> clean_relation(" plays_role "), clean_relation(None)
    ('plays_role', '')
    """
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        return ""
    text = unicodedata.normalize("NFKC", str(text))
    text = " ".join(_SPECIAL_TOKEN.sub(" ", _CONTROL.sub(" ", text)).split()).strip(_EDGE_CHARS)
    return text[:MAX_RELATION_CHARS].strip()


def relation_key(relation: str) -> str:
    """Case, spaces, hyphens and underscores ignored: "PLAYS_ROLE" and "plays role" are one relation."""
    return "_".join(re.split(r"[\s_\-]+", relation.casefold())).strip("_")


def clean_type(text: Any) -> str:
    """A node type as shown (cut to MAX_TYPE_CHARS), "" when none."""
    return clean_relation(text)[:MAX_TYPE_CHARS].strip()


def node_document_id(node_id: str) -> str:
    """The id of the node's Document: stable for a node key, so re-indexing overwrites it.

    >>> node_document_id("Joker") == node_document_id("the joker")
    True
    """
    digest = hashlib.sha256((NODE_DOCUMENT_PREFIX + node_key(node_id)).encode("utf-8")).hexdigest()
    return f"cfrag_node_{digest[:40]}"


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
        """Add (or merge into) the node named `name`; its id, or None when the name is not usable.

        :raises ValueError: naming MAX_NODES when the graph is full.
        """
        clean = clean_name(name)
        key = _key(clean)
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
        """Add (or merge into) the edge source --relation--> target; None for an unusable one or a self-loop.

        Both ends become nodes citing the passage too. `cue`: the causal cue that fired (the first kept).

        :raises ValueError: naming MAX_EDGES (or MAX_NODES) when the graph is full.
        """
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
    """Expand `hops` rounds from `seeds`, following edges both ways and keeping each edge's direction.

    Seeds that are not in the graph stay as seeds without edges; repeated seeds count once.
    At most `max_edges` edges are kept (`truncated` says when the limit stopped the expansion).

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
    """Passage ids the subgraph cites, nearest the seeds first, each once, at most `limit`.

    A seed's passages (hop 0) come first, then, hop by hop, the passages of that hop's edges and
    of the nodes first reached at it; ties keep the order they were met in.

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


__all__ = [
    "NODE_FLAG",
    "DEFAULT_HOPS",
    "DEFAULT_MAX_SUBGRAPH_EDGES",
    "DEFAULT_RELATION",
    "DEFAULT_TOP_K",
    "MAX_EDGES",
    "MAX_HOPS",
    "MAX_NAME_CHARS",
    "MAX_NODES",
    "MAX_PASSAGES_PER_EDGE",
    "MAX_PASSAGES_PER_NODE",
    "MAX_RELATION_CHARS",
    "MAX_SUBGRAPH_EDGES",
    "MAX_TOP_K",
    "MAX_TYPE_CHARS",
    "MIN_HOPS",
    "MIN_TOP_K",
    "Edge",
    "Graph",
    "Subgraph",
    "Triple",
    "check_hops",
    "check_top_k",
    "clean_name",
    "clean_relation",
    "clean_type",
    "expand_hops",
    "node_document_id",
    "node_key",
    "rank_passages",
    "relation_key",
]
