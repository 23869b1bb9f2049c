"""benchmarks/analysis/stage_shares.py: where each system's time goes, stage by stage."""

import doctest

from tests.analysis_tools import load_tool


def test_mean_seconds_and_shares_per_stage_and_cache_hits_counted():
    tool = load_tool("stage_shares")
    records = [
        {"system": "cdf_rag", "stages": {"refiner": 2.0, "generator": 4.0, "hallucination_checker": 4.0},
         "cache_hits": 0},
        {"system": "cdf_rag", "stages": {"refiner": 0.0, "generator": 6.0, "hallucination_checker": 4.0},
         "cache_hits": 2},
        {"system": "standard_rag", "stages": {}, "cache_hits": 1},  # no stages: not counted
    ]
    table = tool.shares(records)
    assert set(table) == {"cdf_rag"}
    s = table["cdf_rag"]
    assert s["questions"] == 2 and s["seconds"] == 10.0 and s["cache_hits"] == 2
    assert s["stages"] == {"generator": (5.0, 0.5), "hallucination_checker": (4.0, 0.4), "refiner": (1.0, 0.1)}
    assert list(s["stages"]) == ["generator", "hallucination_checker", "refiner"]  # largest first


def test_conditions_are_kept_apart():
    tool = load_tool("stage_shares")
    records = [{"system": "cer", "condition": c, "stages": {"selector": t}, "cache_hits": 0}
               for c, t in (("pooled", 2.0), ("inject", 6.0))]
    table = tool.shares(records)
    assert table["cer (pooled)"]["seconds"] == 2.0 and table["cer (inject)"]["seconds"] == 6.0


def test_the_docstring_example_runs():
    result = doctest.testmod(load_tool("stage_shares"))
    assert result.attempted > 0 and result.failed == 0


def test_run_folder_docstring_examples_run():
    """The shared reader of run folders, and the grouping by system (and condition) both tools use."""
    result = doctest.testmod(load_tool("run_folder"))
    assert result.attempted > 0 and result.failed == 0
