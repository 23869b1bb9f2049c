"""benchmarks/analysis/gate_curves.py: the held-out curve in page-grouped folds, and the shipped cascade's own gate
(its model and declared rules) as one more row beside it."""

import json

from tests.analysis_tools import load_tool

tool = load_tool("gate_curves")

PILE = {"answer": "Sydney", "support": -0.3, "passages": 5, "holding": 3, "rivals": 2, "top_holds": False,
        "score_gap": 0.02, "margin": 0.5, "min_margin": 0.2, "rank": 0}
SURE = {**PILE, "answer": "Canberra", "support": -0.01, "holding": 1, "rivals": 4, "top_holds": True, "margin": 6.0,
        "min_margin": 6.0}


def run_folder(path, rows):
    """A `cfrag eval` folder: standard RAG, cf_rag and a gate reading per question (won where the pile's shape is)."""
    path.mkdir()
    (path / "metadata.json").write_text(json.dumps({"config": {"data": "../data/timeqa.jsonl"}}))
    lines = []
    for qid, signals, won in rows:
        base = {"condition": "pooled", "inject": 0, "variant": None, "params": {}, "qid": qid, "question": "Capital?"}
        lines += [{**base, "key": f"pooled|standard_rag[]|{qid}", "system": "standard_rag", "em": 0.0 if won else 1.0},
                  {**base, "key": f"pooled|cf_rag[]|{qid}", "system": "cf_rag", "em": 1.0},
                  {**base, "key": f"pooled|g[]|{qid}", "system": "g", "em": 0.0, "gate": {"signals": signals}}]
    (path / "records.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")


def test_the_curve_holds_out_page_folds_and_shows_the_shipped_gate(tmp_path):
    rows = [(f"timeqa-Page{p}#P1-q{q}", PILE if won else SURE, won)
            for p in range(12) for q in range(3) for won in [p % 3 == 0 and q == 0]]
    run_folder(tmp_path / "runs", rows)
    out = tmp_path / "out"
    out.mkdir()
    line = tool.write(out, "cf_rag", [str(tmp_path / "runs")], folds=4, shipped="cf_rag_auto")
    text = (out / "cf_rag_curve.md").read_text()
    assert "Held out: 4 folds of each sample, whole pages together" in text
    shipped = next(r for r in text.splitlines() if "the shipped `cf_rag_auto` gate" in r)
    # the shipped gate's pile rule escalates the four pile questions, and its model none of the sure ones
    assert shipped.split("|")[2:5] == [" 4 ", " 11% ", " 4/4 "]
    assert line["by_sample"][0]["wins"] == 4
    assert (out / "cf_rag.yml").exists() and (out / "cf_rag_curve.png").exists()
