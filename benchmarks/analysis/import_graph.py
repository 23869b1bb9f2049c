"""The package's import graph: modules, cycles and the longest chain ("floors"), as the issues count them.

    python benchmarks/analysis/import_graph.py            # this checkout
    python benchmarks/analysis/import_graph.py /path/to/an/older/checkout

Every `import` and `from … import` of a `haystack_cfrag` module counts, at module level and inside
functions (`all`), and once more for module level only (`top-level`): a lazy import inside a function
still ties two modules. Cycles are strongly connected components of more than one module; the longest
chain (modules on the longest import path) is given only where there is no cycle.

    >>> graph = edges({"a": "import b", "b": "from c import x", "c": "def f():\\n    import a"}, top_level=False)
    >>> sorted(graph["c"]), cycles(graph)
    (['a'], [['a', 'b', 'c']])
    >>> longest_chain(edges({"a": "import b", "b": "", "c": "import a"}, top_level=True))
    3
"""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path


def modules(root: Path) -> dict[str, str]:
    """Module name -> source of every `.py` under `root/haystack_cfrag`."""
    found = {}
    for path in (root / "haystack_cfrag").rglob("*.py"):
        name = ".".join(path.relative_to(root).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path.read_text(encoding="utf-8")
    return found


def edges(sources: dict[str, str], *, top_level: bool) -> dict[str, set[str]]:
    """Module -> the package modules it imports (absolute imports; `top_level`: module level only)."""
    graph: dict[str, set[str]] = {m: set() for m in sources}
    for name, source in sources.items():
        tree = ast.parse(source)
        for node in tree.body if top_level else ast.walk(tree):
            targets = []
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in sources else node.module
                           for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            graph[name] |= {t for t in targets if t in sources and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph) + 100))
    for v in graph:
        if v not in index:
            visit(v)
    return found


def longest_chain(graph: dict[str, set[str]]) -> int:
    """Modules on the longest import path (the graph must have no cycle)."""
    @functools.cache
    def depth(v: str) -> int:
        return 1 + max((depth(w) for w in graph[v]), default=0)

    return max((depth(v) for v in graph), default=0)


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2]
    sources = modules(root)
    for label, top in (("all imports", False), ("top-level", True)):
        graph = edges(sources, top_level=top)
        found = cycles(graph)
        chain = "–" if found else longest_chain(graph)
        print(f"{label}: {len(sources)} modules, {len(found)} cycles, longest chain {chain}"
              + "".join(f"\n  cycle: {' <-> '.join(c)}" for c in found))


if __name__ == "__main__":
    main()
