"""benchmarks/analysis/family_table.py: the causal family's table against two references."""

import doctest

from tests.analysis_tools import load_tool


def rec(system, qid, em, seconds=1.0, trapped=False, timed_on=None):
    return {"system": system, "qid": qid, "condition": "pooled", "em": em, "f1": em, "lenient": em,
            "seconds": seconds, "trap_answer": "Heath Ledger", "trapped": trapped,
            "llm": {"calls": 3, "prompt_tokens": 900, "completion_tokens": 30},
            **({"timed_on": timed_on} if timed_on else {})}


def test_both_references_the_trap_rate_and_a_ratio_timed_elsewhere():
    tool = load_tool("family_table")
    here, there = {"aaaa1111": 1.0}, {"bbbb2222": 4.0}
    records = [rec("standard_rag", "a", 1.0, timed_on=here), rec("standard_rag", "b", 0.0, trapped=True, timed_on=here),
               rec("cf_rag", "a", 1.0, timed_on=here), rec("cf_rag", "b", 1.0, timed_on=here),
               rec("causal_rag", "a", 0.0, 4.0, trapped=True, timed_on=there),
               rec("causal_rag", "b", 0.0, 4.0, trapped=True, timed_on=there)]
    lines = tool.rows(records, "standard_rag", "cf_rag")
    assert lines[0].startswith("| system | n | EM | F1 | ΔEM vs standard_rag [95% CI] | ΔF1 | ΔEM vs cf_rag [95% CI] |")
    assert len(lines) == 5 and all(line.count("|") == lines[0].count("|") for line in lines)
    causal = lines[-1].split(" | ")
    assert causal[4] == "-50.0 [-100.0, +0.0] (0↑ 1↓)"   # against standard RAG
    assert causal[6] == "-100.0 [-100.0, -100.0] (0↑ 2↓)"  # against CF-RAG
    assert causal[8] == "100.0" and causal[9] == "4.0 †"  # trap rate; timed on another machine
    assert lines[3].split(" | ")[9] == "1.0"                # cf_rag: same machine as the reference, no mark
    assert lines[2].split(" | ")[4] == "–"                  # the reference against itself


def test_doc_examples():
    assert doctest.testmod(load_tool("family_table")).failed == 0
