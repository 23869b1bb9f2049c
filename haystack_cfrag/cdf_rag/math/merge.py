"""CDF-RAG's dual-path merge (paper 002, §2.3; the paper gives no rule), pure: dense ∪ graph passages by key
(id or `content_key`), ordered by reciprocal rank fusion (k = 60; ties: better rank, dense, order seen),
interleaving, or dense only (the ablation); `select_edges` keeps the edges citing a kept passage."""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from haystack_cfrag.common.validation import check_choice

DENSE, GRAPH = "dense", "graph"
PATHS = (DENSE, GRAPH)
RRF, INTERLEAVE, DENSE_ONLY = "rrf", "interleave", "dense_only"
MERGE_MODES = (RRF, INTERLEAVE, DENSE_ONLY)
RRF_K = 60
"""k of reciprocal rank fusion (the value of Cormack et al., 2009)."""


@dataclass(frozen=True)
class MergedItem:
    """One key of the merged list: the paths that found it, its 1-based rank on each, its RRF score."""

    key: str
    paths: tuple[str, ...]
    dense_rank: int | None
    graph_rank: int | None
    score: float


def content_key(text: str | None) -> str:
    """A key for a passage without an id: the SHA-256 of its text with white space collapsed.

    >>> content_key("Heavy  rain\\ncaused the flood.") == content_key("Heavy rain caused the flood.")
    True
    """
    normal = " ".join((text or "").split())
    return "sha256:" + hashlib.sha256(normal.encode("utf-8")).hexdigest()


def first_ranks(keys: Sequence[str]) -> dict[str, int]:
    """Each key's 1-based rank at its first occurrence (later repeats are ignored).

    >>> first_ranks(["a", "b", "a", "c"])
    {'a': 1, 'b': 2, 'c': 4}
    """
    ranks: dict[str, int] = {}
    for i, key in enumerate(keys, start=1):
        ranks.setdefault(key, i)
    return ranks


def rrf_score(ranks: Sequence[int | None], k: int = RRF_K) -> float:
    """Σ 1 / (k + rank) over the paths that found the item (None: not found on that path).

    >>> round(rrf_score([1, None]), 6), round(rrf_score([3, 3]), 6)
    (0.016393, 0.031746)
    """
    if k < 0:
        raise ValueError(f"the RRF k must be ≥ 0, got {k!r}.")
    return sum(1.0 / (k + r) for r in ranks if r is not None)


def merge_ranked(
    dense: Sequence[str],
    graph: Sequence[str] = (),
    *,
    mode: str = RRF,
    k: int = RRF_K,
    top_k: int | None = None,
) -> list[MergedItem]:
    """The union of two ranked key lists, each key once, in `mode` order, cut to `top_k`.

    >>> [(m.key, m.paths) for m in merge_ranked(["a", "b", "c"], ["c", "d"])]
    [('c', ('dense', 'graph')), ('a', ('dense',)), ('b', ('dense',)), ('d', ('graph',))]
    >>> [m.key for m in merge_ranked(["a", "b", "c"], ["c", "d"], mode="interleave")]
    ['a', 'c', 'b', 'd']
    >>> [m.key for m in merge_ranked(["a", "b", "c"], ["c", "d"], mode="dense_only")]
    ['a', 'b', 'c']
    >>> [m.key for m in merge_ranked(["a", "b"], [], top_k=1)]
    ['a']
    """
    check_choice("mode", mode, MERGE_MODES)
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0):
        raise ValueError(f"top_k must be None or an integer ≥ 0, got {top_k!r}.")
    d_ranks, g_ranks = first_ranks(dense), first_ranks(graph if mode != DENSE_ONLY else ())
    seen: dict[str, int] = {}
    for key in _interleaved(list(d_ranks), list(g_ranks)):
        seen.setdefault(key, len(seen))
    items = []
    for key in seen:
        dr, gr = d_ranks.get(key), g_ranks.get(key)
        paths = tuple(p for p, r in ((DENSE, dr), (GRAPH, gr)) if r is not None)
        items.append(MergedItem(key, paths, dr, gr, rrf_score([dr, gr], k)))
    if mode == RRF:
        items.sort(key=lambda m: (-m.score, min(r for r in (m.dense_rank, m.graph_rank) if r is not None),
                                  m.dense_rank is None, seen[m.key]))
    return items if top_k is None else items[:top_k]


def _interleaved(first: list[str], second: list[str]) -> list[str]:
    out: list[str] = []
    for i in range(max(len(first), len(second))):
        out.extend(lst[i] for lst in (first, second) if i < len(lst))
    return out


@dataclass(frozen=True)
class EdgeSelection:
    """Which edges to keep (indices) and why: `mode` "cited" or "all" (none cites); `uncited` dropped edges citing
    nothing, `over_limit` those past `max_edges`."""

    indices: tuple[int, ...]
    mode: str
    uncited: int
    unmatched: int
    over_limit: int


def select_edges(
    citations: Sequence[Collection[str] | None], kept: Collection[str], max_edges: int | None = None
) -> EdgeSelection:
    """The edges to pass on: those whose `citations[i]` hold a kept id (all when none cites), at most `max_edges`.

    >>> select_edges([["p1"], ["p2"], None], kept={"p1"})
    EdgeSelection(indices=(0,), mode='cited', uncited=1, unmatched=1, over_limit=0)
    >>> select_edges([None, []], kept={"p1"}, max_edges=1)
    EdgeSelection(indices=(0,), mode='all', uncited=2, unmatched=0, over_limit=1)
    """
    if max_edges is not None and max_edges < 0:
        raise ValueError(f"max_edges must be None or ≥ 0, got {max_edges!r}.")
    cited = [bool(c) for c in citations]
    kept_set = set(kept)
    if any(cited):
        mode = "cited"
        chosen = [i for i, c in enumerate(citations) if c and kept_set.intersection(c)]
        unmatched = sum(cited) - len(chosen)
    else:
        mode = "all"
        chosen = list(range(len(citations)))
        unmatched = 0
    over = 0
    if max_edges is not None and len(chosen) > max_edges:
        over = len(chosen) - max_edges
        chosen = chosen[:max_edges]
    return EdgeSelection(tuple(chosen), mode, cited.count(False), unmatched, over)


__all__ = ["DENSE", "GRAPH", "INTERLEAVE", "MERGE_MODES", "PATHS", "RRF", "RRF_K", "EdgeSelection",
           "MergedItem", "content_key", "first_ranks", "merge_ranked", "rrf_score", "select_edges"]
