"""Fitting a gate on measured outcomes: features, the model's checks, cross-validation by sample, the curve, and
`cfrag gate fit`'s round trip (fit → YAML → load into a cascade → the same decisions)."""

import json
import random

import pytest
from click.testing import CliRunner

from haystack_cfrag.cascade.features import FEATURES, features
from haystack_cfrag.cascade.fit import Example, curve, fit_gate, held_out_folds, page_of
from haystack_cfrag.cascade.math import decide
from haystack_cfrag.cascade.model import GateModel
from haystack_cfrag.cli.gate import read_gate_model
from haystack_cfrag.evaluation.gate_data import examples_from_runs


def reading(support, holding, top_holds, answer="Mount Everest", margin=3.0):
    return {"answer": answer, "support": support, "passages": 5, "holding": holding, "rivals": 5 - holding,
            "top_holds": top_holds, "score_gap": 0.02, "margin": margin, "min_margin": margin / 2, "rank": 0}


def samples(seed=0):
    """Three samples; the method wins where a pile states the answer and the best passage does not."""
    rng = random.Random(seed)
    out = []
    for sample in ("trap", "hotpot", "popqa"):
        for i in range(30):
            win = sample == "trap" and i % 5 == 0 or sample == "hotpot" and i == 7
            lost = sample == "popqa" and i == 3
            r = (reading(rng.uniform(-0.6, -0.1), 3, False, margin=rng.uniform(0.2, 1.0)) if win
                 else reading(rng.uniform(-0.4, -0.001), rng.choice([1, 2, 4]), True, margin=rng.uniform(1, 8)))
            out.append(Example(sample, f"{sample}-{i}", "Which is the tallest mountain?", r,
                               "won" if win else "lost" if lost else "same"))
    return out


def test_features_read_the_answer_and_the_question():
    f = features(reading(-0.2, 3, False, answer="1969"), "When did Apollo 11 land?")
    assert set(f) == set(FEATURES)
    assert [f[k] for k in ("pile", "unstated", "a_year", "a_number", "q_when", "q_who")] == [1, 0, 1, 1, 1, 0]
    assert features({"answer": "yes"}, "Is Paris in France?")["a_yesno"] == 1.0
    assert features({"answer": "x"}, "q")["support"] is None  # unread: the model's mean stands in


def test_cross_validation_by_sample_keeps_every_win_and_escalates_few():
    result = fit_gate(samples())
    rows = {r["sample"]: r for r in result.by_sample}
    assert rows["trap"]["wins_kept"] == rows["trap"]["wins"] == 6
    assert rows["hotpot"]["wins_kept"] == 1
    assert rows["popqa"]["rate"] < 0.5  # no win there: the gate should stay mostly shut
    assert 0.0 < result.model.threshold < 1.0
    assert result.model.weights[result.model.features.index("pile")] > 0  # the trap's shape raises P(win)


def test_the_curve_runs_from_the_perfect_gate_to_the_always_on_method():
    result = fit_gate(samples())
    rows = result.curve()
    assert rows[0]["gate"] == "perfect" and rows[0]["escalated"] == rows[0]["wins"] == 7
    assert rows[-1]["gate"] == "always on" and rows[-1]["escalated"] == 90
    escalated = [r["escalated"] for r in rows[1:-1]]
    assert escalated == sorted(escalated)  # lower operating points escalate more


def test_curve_counts_losses_avoided():
    ex = [Example("s", str(i), "q", {}, o) for i, o in enumerate(["won", "lost", "same"])]
    assert [(r["wins_kept"], r["losses_avoided"]) for r in curve(ex, [0.9, 0.1, 0.5])][1:3] == [(1, 1), (1, 1)]


def test_a_fit_without_labels_or_with_an_unknown_feature_is_refused():
    with pytest.raises(ValueError, match="no labelled examples"):
        fit_gate([])
    with pytest.raises(ValueError, match="unknown feature"):
        fit_gate(samples(), feature_names=("support", "colour"))


def paged(seed=0):
    """One sample of 20 pages, three questions each; the method wins on the pile's shape, on whole pages."""
    rng = random.Random(seed)
    out = []
    for page in range(20):
        for q in range(3):
            win = page % 4 == 0 and q == 0
            r = (reading(rng.uniform(-0.6, -0.1), 3, False, margin=rng.uniform(0.2, 1.0)) if win
                 else reading(rng.uniform(-0.4, -0.001), rng.choice([1, 2, 4]), True, margin=rng.uniform(1, 8)))
            out.append(Example("timeqa", f"timeqa-Page{page}#P1-q{q}", "Who?", r, "won" if win else "same"))
    return out


def test_one_sample_is_held_out_in_folds_of_whole_pages():
    data = paged()
    by_sample = fit_gate(data)  # one sample: 5 folds by default, else every held-out P is the base rate
    assert by_sample.held_out_by == "5 folds of each sample, whole pages together"
    assert len(set(by_sample.held_out)) > 2
    assert by_sample.by_sample[0]["wins_kept"] == by_sample.by_sample[0]["wins"] == 5
    assert by_sample.by_sample[0]["rate"] < 0.5
    whole = fit_gate(data, folds=0)  # held out whole: nothing to fit on
    assert whole.held_out_by == "sample" and len(set(whole.held_out)) == 1
    folds = held_out_folds(data, 4)
    pages = {}
    for e, fold in zip(data, folds, strict=True):
        pages.setdefault(page_of(e.qid), set()).add(fold)
    assert all(len(f) == 1 for f in pages.values()) and len(set(folds)) > 1  # a page is never split
    assert held_out_folds(list(reversed(data)), 4) == list(reversed(folds))  # by the page, not the order


@pytest.mark.parametrize("folds", [1, -2])
def test_a_bad_fold_count_is_refused(folds):
    with pytest.raises(ValueError, match="'folds' must be 0"):
        fit_gate(paged(), folds=folds)


def _run_folder(path, sample, examples, method="cf_rag"):
    path.mkdir()
    (path / "metadata.json").write_text(json.dumps({"config": {"data": f"../data/{sample}.jsonl"}}))
    lines = []
    for e in examples:
        std_em = 0.0 if e.outcome == "won" else 1.0
        m_em = 1.0 if e.outcome == "won" else 0.0 if e.outcome == "lost" else std_em
        base = {"condition": "pooled", "inject": 0, "variant": None, "params": {}, "qid": e.qid, "question": e.question}
        lines += [{**base, "key": f"pooled|standard_rag[]|{e.qid}", "system": "standard_rag", "em": std_em},
                  {**base, "key": f"pooled|{method}[]|{e.qid}", "system": method, "em": m_em},
                  {**base, "key": f"pooled|benchmarks/gate_signals.yml[]|{e.qid}",
                   "system": "benchmarks/gate_signals.yml", "em": std_em, "gate": {"signals": e.signals}}]
    (path / "records.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")


def test_gate_fit_round_trip_fit_yaml_load_same_decisions(tmp_path):
    from haystack_cfrag.cli.app import main

    data = samples()
    for sample in ("trap", "hotpot", "popqa"):
        _run_folder(tmp_path / sample, sample, [e for e in data if e.sample == sample])
    examples, missing = examples_from_runs([tmp_path / s for s in ("trap", "hotpot", "popqa")], "cf_rag")
    assert len(examples) == 90 and missing == {}
    out = tmp_path / "my_gate.yml"
    result = CliRunner().invoke(main, ["gate", "fit", "--method", "cf_rag", "--out", str(out),
                                       *[f"--runs={tmp_path / s}" for s in ("trap", "hotpot", "popqa")]])
    assert result.exit_code == 0, result.output
    assert "operating point" in result.output and "trap | 30 |" in result.output
    text = out.read_text()
    assert "!!python" not in text and "import" not in text  # plain numbers, nothing executable
    loaded = GateModel.from_dict(read_gate_model(out))
    expected = fit_gate(data).model
    assert loaded == expected
    for e in data:  # the loaded gate decides as the fit did
        assert (decide(e.signals, e.question, loaded, threshold=loaded.threshold).escalate
                == decide(e.signals, e.question, expected, threshold=expected.threshold).escalate)
    again = CliRunner().invoke(main, ["gate", "fit", "--method", "cf_rag", "--out", str(out),
                                      f"--runs={tmp_path / 'trap'}"])
    assert again.exit_code != 0 and "exists" in again.output  # nothing is overwritten


def test_gate_fit_holds_out_page_grouped_folds_when_asked(tmp_path):
    from haystack_cfrag.cli.app import main

    _run_folder(tmp_path / "timeqa", "timeqa", paged())
    out = tmp_path / "gate.yml"
    result = CliRunner().invoke(main, ["gate", "fit", "--method", "cf_rag", "--out", str(out), "--folds", "4",
                                       f"--runs={tmp_path / 'timeqa'}"])
    assert result.exit_code == 0, result.output
    assert "held out by 4 folds of each sample, whole pages together" in result.output
    assert "timeqa | 60 |" in result.output
    bad = CliRunner().invoke(main, ["gate", "fit", "--method", "cf_rag", "--out", str(tmp_path / "b.yml"),
                                    "--folds", "1", f"--runs={tmp_path / 'timeqa'}"])
    assert bad.exit_code != 0 and "'folds' must be 0" in bad.output and "Traceback" not in bad.output


def test_gate_fit_writes_a_cascade_that_loads_with_the_new_gate(tmp_path):
    from haystack_cfrag.cli.app import main
    from haystack_cfrag.registry import resolve

    data = samples()
    for sample in ("trap", "popqa"):
        _run_folder(tmp_path / sample, sample, [e for e in data if e.sample == sample])
    out = tmp_path / "my_cf_rag_auto.yml"
    result = CliRunner().invoke(main, ["gate", "fit", "--method", "cf_rag", "--cascade", "cf_rag_auto", "--out",
                                       str(out), f"--runs={tmp_path / 'trap'}", f"--runs={tmp_path / 'popqa'}"])
    assert result.exit_code == 0, result.output
    gate = resolve(out).data["components"]["gate"]["init_parameters"]
    assert GateModel.from_dict(gate["model"]) == GateModel.from_dict(read_gate_model(out))
    assert "threshold" not in gate  # the model's own operating point
    assert gate["answer_prefix"] == "Answer:" and "support_scorer" in gate  # the rest of the gate as it was
    assert "/root/" not in out.read_text() and "/work/" not in out.read_text()


@pytest.mark.parametrize(("content", "message"), [
    ("features: [support]\nmeans: [0]\nscales: [1]\nweights: [1]\nintercept: 0\nthreshold: 2\n", "probability in"),
    ("!!python/object/apply:os.system ['true']\n", "not a readable YAML file"),
    ("[1, 2]\n", "must be a mapping"),
])
def test_a_bad_gate_file_is_refused_in_one_line(tmp_path, content, message):
    path = tmp_path / "gate.yml"
    path.write_text(content)
    with pytest.raises(ValueError, match=message) as info:
        read_gate_model(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)
