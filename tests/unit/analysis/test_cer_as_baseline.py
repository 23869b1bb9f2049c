"""benchmarks/analysis/cer_as_baseline.py: CF-RAG's candidates with CER's answer in place of the baseline's."""

from tests.analysis_tools import load_tool


def cand(answer, em):
    return {"answer": answer, "em": em}


def test_the_baseline_candidate_is_swapped_and_the_challengers_kept():
    tool = load_tool("cer_as_baseline")
    standard = [{"qid": "a", "answer": "Heath Ledger", "em": 0.0}, {"qid": "b", "answer": "Bale", "em": 1.0},
                {"qid": "c", "answer": "Rhine", "em": 0.0}]
    cf_rag = [
        # a challenger was right: both oracles are 1 whatever CER answered
        {"qid": "a", "answer": "Heath Ledger", "em": 0.0,
         "candidates": [cand("Heath Ledger", 0.0), cand("Christian Bale", 1.0)]},
        # only the baseline was right: CER's wrong answer loses it
        {"qid": "b", "answer": "Bale", "em": 1.0, "candidates": [cand("bale", 1.0), cand("Ledger", 0.0)]},
        # nobody right, CER right: the variant gains it
        {"qid": "c", "answer": "Rhine", "em": 0.0, "candidates": [cand("The Rhine", 0.0)]},
    ]
    cer = [{"qid": "a", "answer": "Heath Ledger", "em": 0.0}, {"qid": "b", "answer": "Ledger", "em": 0.0},
           {"qid": "c", "answer": "Spree", "em": 1.0}, {"qid": "only-cer", "answer": "x", "em": 1.0}]
    out = tool.compare(cer, cf_rag, standard)
    assert out["questions"] == 3  # the questions all three systems answered
    assert (out["oracle_default"], out["oracle_variant"]) == (2.0, 2.0)
    assert [(r["qid"], r["oracle_default"], r["oracle_variant"]) for r in out["differ"]] == [("b", 1.0, 0.0),
                                                                                          ("c", 0.0, 1.0)]
    assert [r["qid"] for r in out["cer_changed"]] == ["b", "c"]
