"""CDF-RAG's dual-path merge, pure (cdf_rag.math.merge): RRF and interleave order, dedup, provenance, edges."""


import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from haystack_cfrag.cdf_rag.math.merge import content_key, first_ranks, merge_ranked, rrf_score, select_edges


def keys(items):
    return [m.key for m in items]


def test_rrf_puts_a_passage_both_paths_found_first_and_reports_its_ranks_and_score():
    items = merge_ranked(["a", "b", "c"], ["x", "c"])
    assert keys(items) == ["c", "a", "x", "b"]
    c = items[0]
    assert c.paths == ("dense", "graph") and (c.dense_rank, c.graph_rank) == (3, 2)
    assert c.score == pytest.approx(1 / 63 + 1 / 62)
    assert items[1].paths == ("dense",) and items[1].graph_rank is None
    assert items[2].paths == ("graph",) and items[2].dense_rank is None and items[2].score == pytest.approx(1 / 61)


def test_rrf_ties_go_to_the_better_rank_then_the_dense_path():
    # a (dense 1) and x (graph 1) tie at 1/61: dense first; b (dense 2) and y (graph 2) tie at 1/62
    assert keys(merge_ranked(["a", "b"], ["x", "y"])) == ["a", "x", "b", "y"]
    # k = 0: a (1/1), x (1/1) and d (1/2 + 1/2) all score 1.0: the better single rank, then the dense path
    items = merge_ranked(["a", "d"], ["x", "d"], k=0)
    assert keys(items) == ["a", "x", "d"] and items[2].score == pytest.approx(1.0)


def test_interleave_alternates_the_paths_and_skips_what_was_seen():
    items = merge_ranked(["a", "b", "c", "d"], ["b", "x"], mode="interleave")
    assert keys(items) == ["a", "b", "x", "c", "d"]
    assert items[1].paths == ("dense", "graph") and items[1].graph_rank == 1 and items[1].dense_rank == 2


def test_a_key_repeated_within_a_path_keeps_its_first_rank():
    assert first_ranks(["a", "a", "b"]) == {"a": 1, "b": 3}
    items = merge_ranked(["a", "a", "b"], ["b", "b"])
    assert keys(items) == ["b", "a"] and items[0].dense_rank == 3 and items[0].graph_rank == 1


@pytest.mark.parametrize("mode", ["rrf", "interleave"])
def test_top_k_bounds_the_list_and_an_empty_graph_path_gives_the_dense_order(mode):
    assert keys(merge_ranked(["a", "b", "c"], [], mode=mode)) == ["a", "b", "c"]
    assert keys(merge_ranked(["a", "b", "c"], mode=mode, top_k=2)) == ["a", "b"]
    assert merge_ranked(["a"], ["b"], mode=mode, top_k=0) == []
    assert merge_ranked([], [], mode=mode) == []


@pytest.mark.parametrize(("kwargs", "message"), [({"mode": "vote"}, "'mode' must be one of"), ({"top_k": -1}, "top_k"),
                                                 ({"top_k": True}, "top_k"), ({"k": -1}, "RRF k")])
def test_bad_arguments_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        merge_ranked(["a"], ["b"], **kwargs)


def test_rrf_score_sums_over_the_paths_that_found_the_item():
    assert rrf_score([None, None]) == 0.0
    assert rrf_score([1, 1], k=60) == pytest.approx(2 / 61)


def test_content_key_ignores_white_space_only():
    assert content_key(" a  b\n") == content_key("a b")
    assert content_key("a b") != content_key("a c")
    assert content_key(None) == content_key("")


def test_edges_citing_a_kept_passage_are_kept_in_order():
    sel = select_edges([["p2"], ["p9"], ["p1", "p9"], None, []], kept={"p1", "p2"})
    assert sel.indices == (0, 2) and sel.mode == "cited"
    assert (sel.uncited, sel.unmatched, sel.over_limit) == (2, 1, 0)


def test_when_no_edge_cites_a_passage_all_are_kept_up_to_the_limit():
    sel = select_edges([None, [], None], kept=set())
    assert sel.indices == (0, 1, 2) and sel.mode == "all" and sel.uncited == 3
    sel = select_edges([["p1"], ["p1"], ["p1"]], kept={"p1"}, max_edges=2)
    assert sel.indices == (0, 1) and sel.over_limit == 1
    assert select_edges([], kept={"p1"}).indices == ()
    with pytest.raises(ValueError, match="max_edges"):
        select_edges([None], kept=set(), max_edges=-1)


lists = st.lists(st.sampled_from("abcdefgh"), max_size=8)


@settings(max_examples=200, deadline=None)
@given(dense=lists, graph=lists, mode=st.sampled_from(["rrf", "interleave"]), top_k=st.none() | st.integers(0, 9))
def test_the_merge_is_the_deduplicated_union_with_true_provenance(dense, graph, mode, top_k):
    full = merge_ranked(dense, graph, mode=mode)
    assert sorted(keys(full)) == sorted(set(dense) | set(graph))  # each key once, none lost
    for m in full:
        assert m.paths == tuple(p for p, src in (("dense", dense), ("graph", graph)) if m.key in src)
        assert m.dense_rank == (dense.index(m.key) + 1 if m.key in dense else None)
        assert m.graph_rank == (graph.index(m.key) + 1 if m.key in graph else None)
    cut = merge_ranked(dense, graph, mode=mode, top_k=top_k)
    assert cut == (full if top_k is None else full[:top_k])  # top_k cuts, never reorders
    if mode == "rrf":
        assert [m.score for m in full] == sorted((m.score for m in full), reverse=True)
