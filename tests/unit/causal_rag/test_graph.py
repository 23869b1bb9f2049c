"""CausalRAG's pure graph: names, merging, s-hop expansion (directions, cycles, bounds), limits, passage ranking."""

import pytest

from haystack_cfrag.causal_rag.math.expansion import (
    DEFAULT_HOPS,
    DEFAULT_TOP_K,
    MAX_HOPS,
    MAX_TOP_K,
    MIN_HOPS,
    MIN_TOP_K,
    check_hops,
    check_top_k,
    expand_hops,
    rank_passages,
)
from haystack_cfrag.causal_rag.math.graph import Graph, Triple
from haystack_cfrag.causal_rag.math.names import clean_name, node_document_id, node_key


def chain():
    """A → B → C → D (causes), E → B (feeds), and a side branch C → X."""
    g = Graph()
    for s, r, t, p in [("A", "causes", "B", "p1"), ("B", "causes", "C", "p2"), ("C", "causes", "D", "p3"),
                       ("E", "feeds", "B", "p4"), ("C", "causes", "X", "p5")]:
        g.add_edge(s, r, t, passage_id=p)
    return g


def pairs(sub):
    return [(e.source, e.target) for e in sub.edges]


def test_defaults_and_ranges_are_the_papers():
    assert (DEFAULT_TOP_K, DEFAULT_HOPS) == (3, 3)
    assert (MIN_TOP_K, MAX_TOP_K, MIN_HOPS, MAX_HOPS) == (1, 10, 1, 10)
    for bad in (0, 11, -1, 2.0, True, None):
        with pytest.raises(ValueError, match="'top_k' must be an integer in \\[1, 10\\]"):
            check_top_k(bad)
        with pytest.raises(ValueError, match="'hops' must be an integer in \\[1, 10\\]"):
            check_hops(bad)


def test_expansion_follows_edges_both_ways_and_keeps_each_direction():
    g = chain()
    one = expand_hops(g, ["B"], hops=1)
    # B's edges out (B → C) then in (A → B, E → B): all reported cause → effect
    assert pairs(one) == [("B", "C"), ("A", "B"), ("E", "B")]
    assert one.nodes == ("B", "C", "A", "E") and one.node_hops == (0, 1, 1, 1)
    two = expand_hops(g, ["B"], hops=2)
    assert pairs(two) == [("B", "C"), ("A", "B"), ("E", "B"), ("C", "D"), ("C", "X")]
    assert two.edge_hops == (1, 1, 1, 2, 2) and two.hops_reached == 2
    # from the effect end, the causes are found and still point at it
    assert pairs(expand_hops(g, ["D"], hops=1)) == [("C", "D")]
    assert pairs(expand_hops(g, ["D"], hops=3))[:3] == [("C", "D"), ("C", "X"), ("B", "C")]


def test_expansion_stops_at_s_hops():
    g = chain()
    assert pairs(expand_hops(g, ["A"], hops=1)) == [("A", "B")]
    assert pairs(expand_hops(g, ["A"], hops=2)) == [("A", "B"), ("B", "C"), ("E", "B")]
    three = expand_hops(g, ["A"], hops=3)
    assert set(pairs(three)) == {("A", "B"), ("B", "C"), ("E", "B"), ("C", "D"), ("C", "X")}
    assert three.hops_reached == 3
    many = expand_hops(g, ["A"], hops=10)
    assert many.edges == three.edges and many.hops_reached == 3  # nothing more to reach


def test_cycles_end_and_each_edge_is_kept_once():
    g = Graph()
    for s, t in [("A", "B"), ("B", "C"), ("C", "A"), ("B", "A")]:   # a cycle and a 2-cycle
        g.add_edge(s, "causes", t)
    sub = expand_hops(g, ["A"], hops=10)
    assert len(sub.edges) == 4 and len(set(pairs(sub))) == 4
    assert sorted(sub.nodes) == ["A", "B", "C"]
    assert ("B", "A") in pairs(sub) and ("A", "B") in pairs(sub)   # both directions kept as extracted


def test_several_seeds_repeated_and_unknown_seeds():
    g = chain()
    sub = expand_hops(g, ["D", "d", "Nowhere", "A"], hops=1)
    assert sub.nodes[:3] == ("D", "Nowhere", "A") and sub.node_hops[:3] == (0, 0, 0)
    assert pairs(sub) == [("C", "D"), ("A", "B")]


def test_expansion_is_deterministic_whatever_the_insertion_order():
    triples = [("A", "causes", "B"), ("E", "feeds", "B"), ("B", "causes", "C"), ("C", "causes", "D")]
    g1, g2 = Graph(), Graph()
    for s, r, t in triples:
        g1.add_edge(s, r, t)
    for s, r, t in reversed(triples):
        g2.add_edge(s, r, t)
    assert pairs(expand_hops(g1, ["B"], hops=2)) == pairs(expand_hops(g2, ["B"], hops=2))


def test_max_edges_truncates_and_says_so():
    g = Graph()
    for i in range(30):
        g.add_edge("Hub", "causes", f"N{i:02d}")
    sub = expand_hops(g, ["Hub"], hops=2, max_edges=5)
    assert len(sub.edges) == 5 and sub.truncated
    assert pairs(sub) == [("Hub", f"N{i:02d}") for i in range(5)]
    with pytest.raises(ValueError, match="max_edges"):
        expand_hops(g, ["Hub"], hops=1, max_edges=0)
    with pytest.raises(ValueError, match="hops"):
        expand_hops(g, ["Hub"], hops=0)


def test_names_merge_by_key_and_keep_the_first_spelling():
    g = Graph()
    g.add_edge("Heath Ledger", "PLAYED", "the Joker", passage_id="p1")
    edge = g.add_edge(" heath  LEDGER ", "played", '"Joker"', passage_id="p2")
    assert len(g) == 2 and g.n_edges == 1
    assert edge.source == "Heath Ledger" and edge.target == "the Joker" and edge.passage_ids == ("p1", "p2")
    assert g.node_passages("joker") == ["p1", "p2"]
    assert node_key("The Joker") == node_key("joker") and node_document_id("The Joker") == node_document_id("JOKER")
    assert g.add_edge("Joker", "is", "the joker") is None          # a self-loop is not an edge
    assert g.add_edge("", "is", "x") is None and g.add_node("  ") is None
    assert clean_name("a" * 121) == "" and clean_name(["list"]) == "" and clean_name(True) == ""


def test_triples_merge_with_types_and_relations_default():
    g = Graph()
    assert g.add_triples([Triple("Aspirin", "REDUCES", "Inflammation", "Drug", "Condition"),
                          Triple("Aspirin", "", "Pain")], passage_id="p") == 2
    assert g.node_type("aspirin") == "Drug" and g.edges_out("Aspirin")[1].relation == "related"


def test_size_limits_raise_naming_the_limit():
    g = Graph(max_nodes=3, max_edges=2)
    g.add_edge("A", "r", "B")
    g.add_edge("B", "r", "C")
    with pytest.raises(ValueError, match="MAX_EDGES=2"):
        g.add_edge("A", "r", "C")
    with pytest.raises(ValueError, match="MAX_NODES=3"):
        g.add_node("D")
    g.add_node("a")   # an existing node is no new node


def test_edge_records_round_trip_through_meta_dicts():
    g = chain()
    h = Graph()
    for name in g.node_ids():
        for e in g.edges_out(name) + g.edges_in(name):
            h.add_edge_record(e.to_dict())
    def as_set(graph):
        return {(e.source, e.target, e.relation, e.passage_ids) for e in graph.edges()}

    assert as_set(h) == as_set(g) and h.n_edges == g.n_edges == 5
    assert h.add_edge_record("junk") is None and h.add_edge_record({"source": "A"}) is None


def test_passages_are_ranked_nearest_the_seeds_first():
    g = chain()
    g.add_node("C", passage_ids=["pc"])
    sub = expand_hops(g, ["C"], hops=2)
    ranked = rank_passages(g, sub, limit=20)
    # C's own passages (hop 0), then hop-1 edges (C→D p3, C→X p5, B→C p2), then hop-2 ones
    assert ranked[:4] == ["p2", "p3", "p5", "pc"]     # C's own passages, in the order met
    assert ranked.index("pc") < ranked.index("p1") and ranked.index("p3") < ranked.index("p1")
    assert ranked.index("p5") < ranked.index("p4")
    assert rank_passages(g, sub, limit=2) == ranked[:2] and rank_passages(g, sub, limit=0) == []
    assert len(ranked) == len(set(ranked))
