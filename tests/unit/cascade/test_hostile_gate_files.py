"""Issue 71, E8 and E9: a hostile gate (or cascade) file is refused in one line naming the file and the field.

Before (58316b0): a 400-digit integer raised OverflowError (`math.isfinite`), a 5,000-digit one PyYAML's
digit-limit ValueError naming no file, 100,000 nested brackets a RecursionError, a cascade whose
`components` or gate is a list an AttributeError; a scale of 1e-300 was accepted (an all-or-nothing gate
whose explanation printed a 306-digit number).
"""

import pytest
import yaml
from click.testing import CliRunner

from haystack_cfrag.cascade.model import MIN_SCALE, GateModel
from haystack_cfrag.cli.gate import read_gate_model, with_gate_model

GOOD = {"features": ["support", "pile"], "means": [-0.3, 0.0], "scales": [0.3, 1.0], "weights": [-2.0, 3.0],
        "intercept": -1.0, "threshold": 0.5, "fitted_on": "a unit test"}


def _gate_text(**fields):
    return yaml.safe_dump({**GOOD, **fields}, sort_keys=False, default_flow_style=None)


@pytest.mark.parametrize(("text", "fragments"), [
    # E9: a scale far below any fitted spread
    (_gate_text(scales=[1e-300, 1.0]), ["'scales'[0]", f"at least {MIN_SCALE:g}"]),
    # E8: OverflowError from math.isfinite(10**400)
    (_gate_text().replace("means: [-0.3", "means: [1" + "0" * 400), ["'means'[0]", "a huge integer"]),
    (_gate_text().replace("intercept: -1.0", "intercept: -1" + "0" * 400), ["'intercept'", "not a finite"]),
    # E8: PyYAML's int() beyond Python's 4,300 digits: a ValueError that named no file
    (_gate_text().replace("intercept: -1.0", "intercept: 1" + "0" * 5000), ["not a readable YAML file"]),
    # E8: RecursionError in PyYAML's composer
    ("features: " + "[" * 100_000 + "]" * 100_000 + "\n", ["not a readable YAML file"]),
    # E8: AttributeError on a cascade whose parts are not mappings
    ("components: [gate]\n", ["must be a mapping"]),
    ("components:\n  gate: [1, 2]\n", ["must be a mapping"]),
    ("components:\n  gate:\n    init_parameters: 7\n", ["must be a mapping"]),
    ("features: [support]\nmeans: [true]\nscales: [1]\nweights: [1]\nintercept: 0\nthreshold: 0.5\n",
     ["'means'[0]", "True"]),
])
def test_a_hostile_gate_file_is_one_line_naming_the_file(tmp_path, text, fragments):
    path = tmp_path / "gate.yml"
    path.write_text(text)
    with pytest.raises(ValueError) as info:
        read_gate_model(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message and len(message) < 800, message
    for fragment in fragments:
        assert fragment in message, message


def test_e9_a_tiny_scale_is_refused_and_a_fitted_one_still_loads():
    with pytest.raises(ValueError, match=r"'scales'\[1\] holds 1e-300: every scale must be > 0"):
        GateModel.from_dict({**GOOD, "scales": [0.3, 1e-300]})
    model = GateModel.from_dict({**GOOD, "scales": [MIN_SCALE, 1.0]})
    worst = model.reasons({"support": 1e3, "pile": 1.0})
    assert len(worst) < 60, worst  # a bounded explanation, not a 306-digit number


def test_the_model_is_data_only_and_round_trips():
    model = GateModel.from_dict(GOOD)
    assert GateModel.from_dict(model.to_dict()) == model and model.to_dict() == GOOD
    with pytest.raises(ValueError, match=r"unknown \['code'\]"):
        GateModel.from_dict({**GOOD, "code": "import os"})
    with pytest.raises(ValueError, match=r"missing \['intercept'\]"):
        GateModel.from_dict({k: v for k, v in GOOD.items() if k != "intercept"})
    with pytest.raises(ValueError, match="'features' a feature is named twice"):
        GateModel.from_dict({**GOOD, "features": ["pile", "pile"]})
    with pytest.raises(ValueError, match="'fitted_on' String should have at most 500 characters"):
        GateModel.from_dict({**GOOD, "fitted_on": "x" * 501})
    with pytest.raises((TypeError, ValueError)):  # frozen: a checked model is never changed afterwards
        model.threshold = 2.0


def test_the_cascade_rewrite_keeps_every_other_character(tmp_path):
    from haystack_cfrag.registry import resolve

    text = resolve("cf_rag_auto").path.read_text(encoding="utf-8")
    model = {**GOOD, "threshold": 0.25}
    out = with_gate_model(text, model)
    gate = yaml.safe_load(out)["components"]["gate"]["init_parameters"]
    assert GateModel.from_dict(gate["model"]) == GateModel.from_dict(model)
    old_lines, new_lines = text.splitlines(), out.splitlines()
    start = next(i for i, line in enumerate(old_lines) if line.strip().startswith("features:"))
    assert old_lines[:start] == new_lines[:start]  # the model's key line and its comment kept
    assert old_lines[start + 7:] == new_lines[start + 7:]  # after the model's seven keys: every line kept
    assert "*generator  # the generator node itself" in out and "# CF-RAG on standard RAG's passages" in out


def test_a_sample_name_cannot_write_yaml_into_the_gate_file(tmp_path):
    """Before: the header comment held the samples' names from metadata.json: a newline there began a key."""
    import json

    from haystack_cfrag.cli.app import main
    from tests.unit.cascade.test_fit import _run_folder, samples

    folder = tmp_path / "trap"
    _run_folder(folder, "trap", [e for e in samples() if e.sample == "trap"])
    hostile = {"config": {"data": "x\nthreshold: 0.0\ncode: y.jsonl"}}
    (folder / "metadata.json").write_text(json.dumps(hostile))
    out = tmp_path / "gate.yml"
    result = CliRunner().invoke(main, ["gate", "fit", "--method", "cf_rag", "--runs", str(folder),
                                       "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert GateModel.from_dict(read_gate_model(out)).threshold > 0.0
