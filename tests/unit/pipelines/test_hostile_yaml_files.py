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
from haystack_cfrag.pipelines.loading import PipelineRefusedError, check_pipeline_file
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


# ------------------------------------------------------------ issue 71, E4: nothing in a YAML file can hang the check
def laughs(levels: int = 9) -> str:
    """A file of nested aliases, each level ten of the one before (10**levels leaves in about 500 bytes)."""
    lines = ['l0: &l0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, levels)]
    return "\n".join(lines) + f"\ncomponents: {{a: {{type: x.Y, init_parameters: {{v: *l{levels - 1}}}}}}}\n"


def refused(path):
    """The one-line error `check_pipeline_file` gives for `path`, in seconds (the walks never ran)."""
    import time

    start = time.perf_counter()
    with pytest.raises(ValueError) as info:
        check_pipeline_file(path)
    assert time.perf_counter() - start < 5
    message = str(info.value)
    assert message.startswith(str(path)) and "\n" not in message and len(message) < 300
    return message


def test_nested_aliases_are_refused_before_any_walk(tmp_path):
    from haystack_cfrag.pipelines import MAX_YAML_NODES

    path = tmp_path / "laughs.yml"
    path.write_text(laughs())
    assert len(path.read_bytes()) < 600  # the 526-byte file, give or take
    assert f"aliases expand to more than {MAX_YAML_NODES:,} nodes" in refused(path)
    small = tmp_path / "small.yml"  # aliases are YAML: a file that uses a few still loads
    small.write_text(laughs(2).replace("x.Y", "haystack.components.joiners.document_joiner.DocumentJoiner")
                     .replace("{v: *l1}", "{}"))
    assert check_pipeline_file(small, build=False)["l1"] == [["x"] * 10] * 10


def test_a_recursive_alias_and_a_deep_file_are_refused_in_one_line(tmp_path):
    (tmp_path / "loop.yml").write_text("components: &c {a: *c}\n")
    assert "recursive" in refused(tmp_path / "loop.yml")
    (tmp_path / "deep.yml").write_text("components: " + "[" * 5000 + "]" * 5000 + "\n")
    assert "not a readable YAML file" in refused(tmp_path / "deep.yml")
    (tmp_path / "digits.yml").write_text("components: {a: {type: x.Y, init_parameters: {n: " + "9" * 5000 + "}}}\n")
    assert "not a readable YAML file" in refused(tmp_path / "digits.yml")


def test_a_pipeline_file_larger_than_the_cap_is_not_read(tmp_path):
    from haystack_cfrag.pipelines import MAX_YAML_BYTES

    path = tmp_path / "big.yml"
    path.write_text("components: {}\n# " + "x" * MAX_YAML_BYTES + "\n")
    assert "larger than 1 MiB" in refused(path)


def test_a_fifo_or_a_device_named_as_a_pipeline_file_is_refused_without_waiting(tmp_path):
    import os
    import threading

    fifo = tmp_path / "fifo.yml"
    os.mkfifo(fifo)
    link = tmp_path / "zero.yml"
    link.symlink_to("/dev/zero")
    messages = []
    worker = threading.Thread(target=lambda: messages.extend(refused(p) for p in (fifo, link)), daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive() and len(messages) == 2
    assert "FIFO" in messages[0] and "character device" in messages[1]
