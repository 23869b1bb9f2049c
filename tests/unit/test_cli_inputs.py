"""`cfrag` refuses bad input before loading any model (exit code 2, one readable line)."""

from click.testing import CliRunner

from haystack_cfrag.cli import main
from haystack_cfrag.cfrag.trace import format_trace


def test_empty_question_is_refused():
    result = CliRunner().invoke(main, ["ask", "   "])
    assert result.exit_code == 2 and "the question is empty" in result.output


def test_unknown_pipeline_is_refused():
    result = CliRunner().invoke(main, ["compare", "Who?", "--pipelines", "standard_rag,nope"])
    assert result.exit_code == 2 and "No pipeline file 'nope'" in result.output


def test_format_trace_shows_the_decision_path():
    trace = {
        "counterfactual_details": [{"text": "Who played the villain?", "type": "role", "similarity": 0.81}],
        "clusters": {"0": ["a"], "1": ["b"]},
        "scorer": "embedding",
        "weights": {"coherence": 0.6, "causal": 0.4, "confidence": 0.0, "specificity": 0.0},
        "drafts": [
            {"index": 0, "answer": "Christian Bale", "psi": 0.3, "agreement": 1.0,
             "scores": {"coherence": 0.5, "causal": 0.05, "confidence": None, "specificity": 0.0},
             "evidence": [{"id": "a", "title": "Cast", "cluster": 0, "relevance": 0.8, "causal_margin": 0.05}]},
            {"index": 1, "answer": "", "error": "timeout", "evidence": []},
        ],
        "decision": "best_score", "agreement": 0.5, "answer": "Christian Bale",
    }
    text = format_trace(trace)
    for part in ("Who played the villain? [role, sim 0.81]", "Clusters: 2", "#0 'Christian Bale'",
                 "causal +0.050", "conf —", "Cast (cluster 0", "#1: FAILED (timeout)", "Decision: best_score"):
        assert part in text, part
