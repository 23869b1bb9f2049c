"""Do two stored graphs hold the same nodes, edges and passages? (`--engine ray` beside the local run.)

    python benchmarks/scale/same_graph.py STORE_A.graph/graph.sqlite STORE_B.graph/graph.sqlite

Compares the tables row for row (sorted), prints counts and the number of differing rows per table.
"""

from __future__ import annotations

import json
import sqlite3
import sys


def rows(path: str, table: str) -> list[tuple]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return sorted(conn.execute(f'SELECT * FROM "cfrag_graph_{table}"').fetchall())  # noqa: S608  (fixed names)


def main() -> None:
    a, b = sys.argv[1], sys.argv[2]
    out = {}
    for table in ("nodes", "edges", "passages"):
        ra, rb = rows(a, table), rows(b, table)
        out[table] = {"a": len(ra), "b": len(rb), "only_a": len(set(ra) - set(rb)), "only_b": len(set(rb) - set(ra))}
    out["same"] = all(v["only_a"] == v["only_b"] == 0 for v in out.values() if isinstance(v, dict))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
