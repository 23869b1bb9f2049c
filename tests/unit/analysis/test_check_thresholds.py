"""benchmarks/analysis/check_thresholds.py: the hallucination check's firing at other thresholds, from records."""

import doctest
import json
import subprocess
import sys

from tests.analysis_tools import ANALYSIS, load_tool


def record(answers, checked, supports, system="grounded_rag", final=None):
    check = {"decision": "keep", "original_answer": checked, "claim_supports": supports}
    return {"system": system, "answers": answers, "answer": final or checked,
            "selection": {"hallucination_checker": check}}


RECORDS = [
    record(["Christian Bale"], "Christian Bale", [-0.05]),                     # right, well supported
    record(["Christian Bale"], "Heath Ledger", [-1.4]),                        # wrong, weakly supported
    record(["Rhine"], "The Danube flows through Vienna", [-0.3, -2.2]),        # wrong: one claim of two unsupported
    record(["Paris"], "Paris", [-1.6], final="Lyon"),                          # right before a (bad) rewrite
    record(["x"], "y", None),                                                  # scorer failed: not a checked answer
    {"system": "standard_rag", "answers": ["x"], "answer": "x", "selection": {}},
]


def test_checked_answers_are_the_ones_the_check_received_and_scored():
    tool = load_tool("check_thresholds")
    rows = tool.checked_answers(RECORDS)
    assert list(rows) == ["grounded_rag"]
    assert [(r["supports"], r["right"]) for r in rows["grounded_rag"]] == [
        ([-0.05], True), ([-1.4], False), ([-0.3, -2.2], False), ([-1.6], True)]


def test_firing_by_threshold_counts_hits_and_false_alarms():
    tool = load_tool("check_thresholds")
    c = tool.calibration(tool.checked_answers(RECORDS)["grounded_rag"], delta=0.5, thresholds=(-1.0, -1.5, -2.5))
    assert (c["right"], c["wrong"]) == (2, 2)
    assert c["auc"] == 0.75  # weakest supports: right -0.05, -1.6; wrong -1.4, -2.2 -> 3 of 4 pairs in order
    # Ledger (-1.4) and Paris (-1.6) fire, one a hit; the two-claim answer's S_hall 1/2 is not above δ
    assert c["by_threshold"][-1.0] == {"fired": 2, "fired_on_wrong": 1}
    assert c["by_threshold"][-1.5] == {"fired": 1, "fired_on_wrong": 0}  # only Paris: a false alarm
    assert c["by_threshold"][-2.5] == {"fired": 0, "fired_on_wrong": 0}


def test_the_docstrings_and_the_command(tmp_path):
    tool = load_tool("check_thresholds")
    assert doctest.testmod(tool).failed == 0
    (tmp_path / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    done = subprocess.run([sys.executable, str(ANALYSIS / "check_thresholds.py"), str(tmp_path)],
                          capture_output=True, text=True, check=True)
    assert "grounded_rag: 4 checked answers (2 right, 2 wrong)" in done.stdout and "0.750" in done.stdout
    assert "| -1.0 | 2 | 1 | 1 | 0.50 |" in done.stdout
    (tmp_path / "records.jsonl").write_text(json.dumps(RECORDS[-1]) + "\n")
    refused = subprocess.run([sys.executable, str(ANALYSIS / "check_thresholds.py"), str(tmp_path)],
                             capture_output=True, text=True)
    assert refused.returncode != 0 and "claim_supports" in refused.stderr
