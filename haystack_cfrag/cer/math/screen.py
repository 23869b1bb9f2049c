"""CER's screen before the reader scores (issue 61): which pool passages the search may read, by text alone.

The search scores sets of the pool with the reader (one prompt a set); the screen keeps, before any
scoring, the passages that state the measured answer as a whole phrase (`common.text.mention` = 1, the
escalation gate's `holding`), in their order. A passage that does not state the answer can still raise
its support (a bridge passage on a two-hop question): the screen gives those up for fewer scorings.
When no passage states the answer (a yes/no answer, a reworded one) the pool is left whole. `limit` keeps
the first so many (the search's cost grows with the pool: a pile stating a trap answer is the dear case).

    >>> screen_pool("Christian Bale", ["Ledger plays the Joker.", "Christian Bale stars.", "Bale was cast."])
    [1]
    >>> screen_pool("yes", ["Both are American.", "Neither is French."])
    [0, 1]
    >>> screen_pool("Bale", ["Bale.", "Bale!", "Bale?"], limit=2), screen_pool("no", ["a", "b", "c"], limit=2)
    ([0, 1], [0, 1])
"""

from __future__ import annotations

from collections.abc import Sequence

from haystack_cfrag.common.text import mention

SCREENS = ("off", "answer")
"""`EvidenceSetSelector(screen=…)`: "off" (every pool passage), "answer" (`screen_pool`)."""


def screen_pool(answer: str, texts: Sequence[str], limit: int | None = None) -> list[int]:
    """The indices of the passages that state `answer` as a whole phrase, in order (all of them when none
    does), the first `limit` of those (None: no limit)."""
    stating = [i for i, text in enumerate(texts) if mention(answer, text) >= 1.0]
    stating = stating or list(range(len(texts)))
    return stating if limit is None else stating[:limit]


__all__ = ["SCREENS", "screen_pool"]
