"""A graph node as a node Document's meta, pure: written by `CausalGraphBuilder`, read back by
`CausalGraphRetriever`, and the filter a store finds node Documents by.

>>> g = Graph()
>>> _ = g.add_edge("Rain", "CAUSES", "Flood", passage_id="p1")
>>> meta = node_meta(g, "Rain", flat=True)
>>> meta["node_id"], meta["edges_out"][:20]
('Rain', '[{"source": "Rain", ')
>>> read = Graph()
>>> load_node(read, meta), [e.target for e in read.edges_out("Rain")]
('Rain', ['Flood'])
"""

from __future__ import annotations

import json
from typing import Any

from haystack_cfrag.causal_rag.math.graph import Graph
from haystack_cfrag.causal_rag.math.names import NODE_FLAG

FLAT_KEYS = ("edges_out", "edges_in", "passage_ids")
"""The node meta keys `flat_meta=True` stores as JSON strings."""
MAX_FLAT_META_CHARS = 5_000_000
"""A node's JSON-string meta (`flat_meta=True`) longer than this is not read."""


def node_filter(extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The filter that keeps node Documents (meta cfrag_graph_node == True), ANDed with `extra`.

    >>> node_filter()
    {'field': 'meta.cfrag_graph_node', 'operator': '==', 'value': True}
    """
    flag = {"field": f"meta.{NODE_FLAG}", "operator": "==", "value": True}
    return flag if not extra else {"operator": "AND", "conditions": [flag, extra]}


def node_meta(graph: Graph, node_id: str, *, flat: bool = False) -> dict[str, Any]:
    """A node's Document meta: its flag, name, type, edges and passages (`flat`: the lists as JSON strings)."""
    meta = {
        NODE_FLAG: True,
        "node_id": node_id,
        "node_type": graph.node_type(node_id),
        "edges_out": [e.to_dict() for e in graph.edges_out(node_id)],
        "edges_in": [e.to_dict() for e in graph.edges_in(node_id)],
        "passage_ids": graph.node_passages(node_id),
    }
    if flat:
        meta.update({k: json.dumps(meta[k], ensure_ascii=False) for k in FLAT_KEYS})
    return meta


def meta_list(meta: dict[str, Any], key: str) -> list[Any]:
    """A node meta list, stored as a list or (`flat_meta=True`) as a JSON string; [] when malformed."""
    value = meta.get(key)
    if isinstance(value, str) and len(value) <= MAX_FLAT_META_CHARS:
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return []
    return value if isinstance(value, list) else []


def load_node(graph: Graph, meta: dict[str, Any]) -> str | None:
    """Add a node Document's node and stored edges to `graph` (malformed edges skipped); its id, None if none."""
    node_id = graph.add_node(meta.get("node_id"), meta.get("node_type", ""), meta_list(meta, "passage_ids"))
    if node_id is not None:
        for name in ("edges_out", "edges_in"):
            for record in meta_list(meta, name):
                graph.add_edge_record(record)
    return node_id


__all__ = ["FLAT_KEYS", "MAX_FLAT_META_CHARS", "load_node", "meta_list", "node_filter", "node_meta"]
