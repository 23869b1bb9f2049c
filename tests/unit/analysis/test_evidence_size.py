"""benchmarks/analysis/evidence_size.py: CER's kept sets against standard RAG's top 5 in the same run."""

from tests.analysis_tools import load_tool


def rec(system, qid, prompt, recall, selection=None, condition="pooled"):
    out = {"system": system, "qid": qid, "condition": condition, "llm": {"prompt_tokens": prompt},
           "support_recall": recall}
    if selection is not None:
        out["selection"] = selection
    return out


def test_kept_sizes_stops_recall_and_the_answer_prompt_against_the_baseline():
    tool = load_tool("evidence_size")
    records = [
        rec("standard_rag", "q1", 500, 1.0), rec("standard_rag", "q2", 300, 0.0),
        rec("cer", "q1", 700, 0.5, {"pool": list("abcde"), "kept": ["a"], "reached": True, "stop": "delta"}),
        rec("cer", "q2", 500, 1.0, {"pool": list("abcde"), "kept": ["a", "c", "d"], "reached": False, "stop": "pool"}),
        # no baseline
        rec("cer", "q3", 900, None, {"pool": list("abc"), "kept": ["b"], "reached": True, "stop": "delta"}),
        rec("cf_rag", "q1", 1500, 1.0),  # no kept set: not a selecting system
    ]
    table = tool.summarize(records)
    assert set(table) == {"cer"}
    s = table["cer"]
    assert s["questions"] == 3 and s["kept"] == round(5 / 3, 3) and s["pool"] == round(13 / 3, 3)
    assert s["one_passage"] == 2 and s["reached"] == 2 and dict(s["stops"]) == {"delta": 2, "pool": 1}
    # the answer's own prompt: CER's tokens minus standard RAG's draft prompt, on the questions both answered
    assert s["answer_prompt"] == 200.0 and s["baseline_prompt"] == 400.0
    assert s["gold_recall"] == 75.0 and s["baseline_recall"] == 50.0


def test_the_baseline_is_matched_within_its_condition_and_recall_over_questions_both_have():
    tool = load_tool("evidence_size")
    kept = {"pool": list("abcde"), "kept": ["a"], "reached": True, "stop": "delta"}
    records = [
        rec("standard_rag", "q1", 500, 1.0, condition="pooled"),
        rec("standard_rag", "q1", 900, 0.0, condition="inject"),  # the same question under another condition
        rec("cer", "q1", 600, 0.5, kept, condition="pooled"),
        rec("cer", "q1", 1000, 0.5, kept, condition="inject"),
        rec("standard_rag", "q2", 500, None), rec("cer", "q2", 600, 1.0, kept),  # no baseline recall: left out
    ]
    table = tool.summarize(records)
    assert set(table) == {"cer (pooled)", "cer (inject)"}
    assert table["cer (pooled)"]["answer_prompt"] == 100 and table["cer (inject)"]["answer_prompt"] == 100
    assert (table["cer (pooled)"]["gold_recall"], table["cer (pooled)"]["baseline_recall"]) == (50.0, 100.0)
    assert (table["cer (inject)"]["gold_recall"], table["cer (inject)"]["baseline_recall"]) == (50.0, 0.0)


def test_the_docstring_example_runs():
    import doctest

    result = doctest.testmod(load_tool("evidence_size"))
    assert result.attempted > 0 and result.failed == 0
