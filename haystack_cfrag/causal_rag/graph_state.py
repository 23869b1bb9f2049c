"""A stored graph's state (`writing`, `complete`, `stale`: `graph_write`) and what a reader is told of it (pure)."""

from __future__ import annotations

STATE = "state"
WRITING, STALE, COMPLETE = "writing", "stale", "complete"


def graph_notice(meta: dict[str, str], where: str = "the store") -> str | None:
    """Why a stored graph should not be trusted as it is, in one line; None when its last run completed.

    >>> print(graph_notice({"state": "stale"}, "faiss:s").replace("; ", ";\\n"))
    the graph beside faiss:s is stale: passages were written without --graph since it was built;
    run `cfrag index FILES --store faiss:s --graph` to bring it up to date.
    >>> graph_notice({"state": "complete"}) is None and graph_notice({}) is None
    True
    """
    state = meta.get(STATE, COMPLETE)
    if state == COMPLETE:
        return None
    why = ("is stale: passages were written without --graph since it was built" if state == STALE
           else "is incomplete: an index run is under way or did not finish")
    return f"the graph beside {where} {why}; run `cfrag index FILES --store {where} --graph` to bring it up to date."
