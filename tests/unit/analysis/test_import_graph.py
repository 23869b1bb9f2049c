"""benchmarks/analysis/import_graph.py: the import graph's cycles and longest chain, and this package has no cycle."""

import doctest
from pathlib import Path

from tests.analysis_tools import load_tool


def test_doc_examples():
    assert doctest.testmod(load_tool("import_graph")).failed == 0


def test_the_package_has_no_import_cycle_even_through_lazy_imports():
    tool = load_tool("import_graph")
    sources = tool.modules(Path(__file__).resolve().parents[3])
    graph = tool.edges(sources, top_level=False)
    assert len(sources) > 100 and tool.cycles(graph) == []
    assert tool.longest_chain(graph) >= 2
