"""Named points of a store write, where a test stops the writer (SIGKILL) to prove that a rerun recovers.

`cfrag index` and the graph writer call `reached(NAME)` at each point below; it does nothing
unless a test replaces it (the kill tests run `cfrag index` in a child process whose
`reached` kills the process at the point named). The points, in order:

- `passages embedded`: the new passages embedded, nothing written;
- `passages saved`: the passage store written and saved, the graph not yet;
- `graph batch merged`: one batch of passages merged into the graph tables (committed), its nodes not embedded;
- `node vectors embedded`: that batch's node vectors written into the node store in memory, not saved;
- `node vectors saving`: every batch done, the node store about to be saved;
- `node vectors saved`: the node store saved, the graph's meta not yet marked complete.
"""

from __future__ import annotations

POINTS = ("passages embedded", "passages saved", "graph batch merged", "node vectors embedded",
          "node vectors saving", "node vectors saved")


def reached(name: str) -> None:
    """A write reached the point `name` (one of POINTS); a no-op outside the tests."""


__all__ = ["POINTS", "reached"]
