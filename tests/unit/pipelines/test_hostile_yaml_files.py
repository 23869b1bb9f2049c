"""Issue #43, item 3: one check of every pipeline YAML before any model loads, for `ask`, `eval` and `serve`.

Before: `cfrag eval --systems evil.yml` (a class outside the allowlist) loaded the models, then
recorded a failed question per question; a `serve --yaml` file that Haystack refuses (a
connection to no socket) was caught only in the started server, 19 s later, with tracebacks.
Model loading is replaced by a fake that fails the test if it is reached.
"""

from pathlib import Path

import pytest
from click.testing import CliRunner

import haystack_cfrag.cli.app as cli_app
import haystack_cfrag.cli.serve as cli_serve
from haystack_cfrag.adapters import factories
from haystack_cfrag.cli import main
from haystack_cfrag.loading import PipelineRefusedError, check_pipeline_file
from tests.unit.serving.test_serving import USER_YAML

HOTPOT = Path(__file__).resolve().parents[2] / "data" / "hotpotqa_dev_a_30.jsonl"
GOOD = USER_YAML  # a pipeline of the user's that Hayhooks serves (one prompt builder)
EVIL = GOOD.replace("haystack.components.builders.chat_prompt_builder.ChatPromptBuilder", "os.system")
UNBUILDABLE = GOOD.replace("connections: []", "connections: [{sender: prompt.prompt, receiver: nowhere.messages}]")
BAD_INPUT = GOOD.replace("[prompt.query]", "[prompt.no_such_socket]")
BAD_INIT = GOOD.replace("init_parameters: {", "init_parameters: {no_such_parameter: 1, ")


@pytest.fixture
def files(tmp_path):
    for name, text in (("good", GOOD), ("evil", EVIL), ("unbuildable", UNBUILDABLE), ("bad_input", BAD_INPUT),
                       ("bad_init", BAD_INIT)):
        (tmp_path / f"{name}.yml").write_text(text, encoding="utf-8")
    return tmp_path


@pytest.fixture
def no_models(monkeypatch):
    """Every way a command loads a model fails the test."""
    def loaded(*_args, **_kwargs):
        raise AssertionError("a model was loaded before the pipeline file was checked")

    for name in ("chat_generator", "text_embedder", "document_embedder"):
        monkeypatch.setattr(factories, name, loaded)
    monkeypatch.setattr(cli_app, "_runtime", loaded)
    monkeypatch.setattr(cli_serve, "run_children", loaded)


def test_the_check_refuses_each_kind_in_one_line_naming_the_file(files):
    assert check_pipeline_file(files / "good.yml")["components"]
    with pytest.raises(PipelineRefusedError, match="os.system.*allowlist"):
        check_pipeline_file(files / "evil.yml")
    for name, fragment in (("unbuildable", "Haystack cannot build"), ("bad_init", "Haystack cannot build"),
                           ("bad_input", "inputs.query names 'prompt.no_such_socket'")):
        with pytest.raises(ValueError, match=fragment) as info:
            check_pipeline_file(files / f"{name}.yml")
        assert str(info.value).startswith(str(files / f"{name}.yml")) and "\n" not in str(info.value)


def test_eval_refuses_a_file_outside_the_allowlist_before_any_model_loads(files, no_models, tmp_path):
    result = CliRunner().invoke(main, ["eval", str(HOTPOT), "--systems", f"standard_rag,{files / 'evil.yml'}",
                                       "--out", str(tmp_path / "run"), "--limit", "1"])
    assert result.exit_code == 2, result.output
    assert "Invalid value for --systems" in result.output and "os.system" in result.output
    assert not (tmp_path / "run").exists()


def test_eval_refuses_a_file_haystack_cannot_build_before_any_model_loads(files, no_models, tmp_path):
    result = CliRunner().invoke(main, ["eval", str(HOTPOT), "--systems", str(files / "unbuildable.yml"),
                                       "--out", str(tmp_path / "run"), "--limit", "1"])
    assert result.exit_code == 2, result.output
    assert "Haystack cannot build this pipeline" in result.output


@pytest.mark.parametrize("name", ["evil", "unbuildable"])
def test_ask_refuses_the_file_before_any_model_loads(files, no_models, name):
    result = CliRunner().invoke(main, ["ask", "Who?", "--pipeline", str(files / f"{name}.yml")])
    assert result.exit_code == 2, result.output
    assert "Invalid value for --pipeline" in result.output


@pytest.mark.parametrize(("name", "fragment"), [("evil", "allowlist"), ("unbuildable", "Haystack cannot build"),
                                                ("bad_input", "no_such_socket")])
def test_serve_refuses_the_file_before_starting(files, no_models, tmp_path, name, fragment):
    result = CliRunner().invoke(main, ["serve", "--mock", "--yaml", str(files / f"{name}.yml"),
                                       "--deploy-dir", str(tmp_path / "deploy")])
    assert result.exit_code == 2, result.output
    assert fragment in result.output and "Traceback" not in result.output
    assert not (tmp_path / "deploy").exists()
