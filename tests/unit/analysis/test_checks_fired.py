"""benchmarks/analysis/checks_fired.py: how often CDF-RAG's checks fired and what their corrections did."""

from tests.analysis_tools import load_tool


def record(qid, answer, selection, answers=("Christian Bale",), system="cdf_rag"):
    return {"system": system, "qid": qid, "answers": list(answers), "answer": answer, "selection": selection}


def test_fired_hits_and_what_each_correction_changed():
    tool = load_tool("checks_fired")
    records = [
        # the causal check regenerates Ledger -> Bale; the grounding check then keeps Bale
        record("q1", "Christian Bale", {
            "causal_checker": {"decision": "regenerate", "original_answer": "Heath Ledger"},
            "hallucination_checker": {"decision": "keep", "original_answer": "Christian Bale"},
            "refiner": {"action": "expand"}}),
        # the grounding check fires on a wrong answer, and its rewrite returns the same answer
        record("q2", "Heath Ledger", {
            "causal_checker": {"decision": "undefined", "original_answer": "Heath Ledger"},
            "hallucination_checker": {"decision": "rewrite", "original_answer": "Heath Ledger"},
            "refiner": {"action": "none"}}),
        # a false alarm whose rewrite breaks a right answer
        record("q3", "Nolan", {"hallucination_checker": {"decision": "rewrite", "original_answer": "Bale"}},
               answers=("Christian Bale", "Bale")),
        record("q4", "Bale", {}, system="standard_rag"),  # no check: not counted
    ]
    table = tool.tally(records)
    assert set(table) == {"cdf_rag"}
    causal, hall = table["cdf_rag"]["causal_checker"], table["cdf_rag"]["hallucination_checker"]
    assert causal == {"questions": 2, "scored": 1, "fired": 1, "fired_on_wrong": 1, "changed": 1,
                      "wrong_to_right": 1, "right_to_wrong": 0}
    assert hall == {"questions": 3, "scored": 3, "fired": 2, "fired_on_wrong": 1, "changed": 1,
                    "wrong_to_right": 0, "right_to_wrong": 1}
    assert dict(table["cdf_rag"]["refiner"]) == {"expand": 1, "none": 1}
