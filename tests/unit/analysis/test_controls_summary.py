"""benchmarks/analysis/controls_summary.py: every method's default beside the best control."""

import doctest

from tests.analysis_tools import load_tool


def rec(system, qid, em):
    return {"condition": "pooled", "system": system, "pipeline": system.split("[")[0], "qid": str(qid), "em": em,
            "f1": em, "lenient": em, "support_recall": 1.0, "evidence": [], "answers": ["x"], "answer": str(em),
            "seconds": 1.0, "llm": {"calls": 1}}


def test_a_method_is_bold_only_when_it_beats_the_best_control_with_a_lower_bound_above_zero():
    tool = load_tool("controls_summary")
    n = 40
    records = ([rec("standard_rag", q, float(q < 10)) for q in range(n)]
               + [rec("standard_rag[top_k=6]", q, float(q < 14)) for q in range(n)]
               + [rec("cdf_rag", q, float(4 <= q < 18)) for q in range(n)]  # 4 won, 4 lost against top_k=6
               + [rec("cer", q, float(q < 30)) for q in range(n)])        # +16 over the best control
    head, rows = tool.folder_rows("s", records, ("cdf_rag", "cer"))
    assert "best retrieval control `standard_rag[top_k=6]` 35.0 EM (standard RAG 25.0)" in head
    assert "no order control yet" in head
    cdf, cer = (r.split(" | ") for r in rows)
    assert cdf[4].startswith("+0.0 [") and "(4↑ 4↓)" in cdf[4] and cdf[4].endswith("vs `standard_rag[top_k=6]`")
    assert cer[4].startswith("**+40.0 [") and "(16↑ 0↓)" in cer[4]


def test_doc_examples():
    assert doctest.testmod(load_tool("controls_summary")).failed == 0


def test_without_a_control_beside_standard_rag_nothing_is_set_against_a_best_control():
    tool = load_tool("controls_summary")
    records = ([rec("standard_rag", q, float(q < 10)) for q in range(40)]
               + [rec("cdf_rag", q, float(q < 30)) for q in range(40)])
    head, [row] = tool.folder_rows("s", records, ("cdf_rag",))
    assert "no retrieval control beside standard RAG yet" in head
    assert row.split(" | ")[4] == "no control run here yet" and "**" not in row
