"""`cfrag` refuses bad input before loading any model (exit code 2, one readable line)."""

import importlib.util

import pytest
from click.testing import CliRunner

from haystack_cfrag.adapters import factories
from haystack_cfrag.cfrag.trace import format_trace
from haystack_cfrag.cli import app, main
from haystack_cfrag.common.parameters import clip, parse_integer, parse_value
from tests.server import free_port


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


# ------------------------------------------------ issue 53, item 5: each refused in one line, up front
@pytest.fixture
def no_models(monkeypatch):
    """Any check that lets a command through fails loudly here instead of loading a model."""
    def loading(*_args, **_kwargs):
        raise RuntimeError("a model would load")

    monkeypatch.setattr(app, "_runtime", loading)
    monkeypatch.setattr(factories, "document_embedder", loading)


def refused(args, *parts):
    """The command's exit code 2 and one line holding `parts` (before any model loads: the `no_models` fixture
    makes a load fail with another code, so the timing needs no assert)."""
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and len(lines[0]) < 1000, result.output
    for part in parts:
        assert part in lines[0], (part, lines[0])
    return lines[0]


def index_args(tmp_path, *extra):
    (tmp_path / "a.txt").write_text("Christian Bale plays Batman.", encoding="utf-8")
    return ["index", str(tmp_path / "a.txt"), "--store", str(tmp_path / "s.json"), *extra]


RAY = ("--graph", "--engine", "ray", "--extractor", "spacy")


def test_a_ray_address_where_nothing_listens_is_refused_before_the_store_is_written(tmp_path, no_models):
    port = free_port()
    refused(index_args(tmp_path, *RAY, "--ray-address", f"127.0.0.1:{port}"),
            "--ray-address", f"nothing answers at 127.0.0.1:{port}")
    assert not (tmp_path / "s.json").exists()


@pytest.mark.parametrize(("address", "part"), [
    ("127.0.0.1:0", "the port must be in 1-65535"), ("127.0.0.1:65536", "the port must be in 1-65535"),
    ("127.0.0.1", "is not a Ray address"), ("http://127.0.0.1:6379", "is not a Ray address"),
    ("127.0.0.1:٣", "is not a Ray address"), ("h" * 10_000 + ":1", "…' is not a Ray address"),
    ("", "is empty"), ("  ", "is empty")])
def test_a_malformed_or_empty_ray_address_is_refused_up_front(tmp_path, no_models, address, part):
    refused(index_args(tmp_path, *RAY, "--ray-address", address), "--ray-address", part)
    assert not (tmp_path / "s.json").exists()


def test_a_listening_ray_address_passes_the_checks(tmp_path, no_models):
    pytest.importorskip("grpc", reason="the fake Ray answers over gRPC (Ray's own dependency)")
    from haystack_cfrag.stores.timeouts import RAY_METHODS
    from tests.unit.stores.hostile_stores import grpc_server

    with grpc_server(tuple(RAY_METHODS.values())) as port:  # answers Ray's question (issue 62, D19)
        args = index_args(tmp_path, *RAY, "--ray-address", f"ray://127.0.0.1:{port}")
        result = CliRunner().invoke(main, args)
    assert result.exit_code == 1 and "a model would load" in result.output  # past the checks, at the embedder


def test_engine_ray_and_ray_address_without_graph_are_refused(tmp_path, no_models):
    refused(index_args(tmp_path, "--engine", "ray"), "--engine", "only with --graph")
    only = "only with --graph --engine ray"
    refused(index_args(tmp_path, "--ray-address", "127.0.0.1:6379"), "--ray-address", only)
    refused(index_args(tmp_path, "--graph", "--ray-address", ""), "--ray-address", only)
    assert not (tmp_path / "s.json").exists()


def test_engine_ray_without_ray_installed_is_refused_up_front(tmp_path, no_models, monkeypatch):
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "ray" else find_spec(name, *args))
    refused(index_args(tmp_path, *RAY), "--engine", "pip install 'haystack-cfrag[ray]'")
    assert not (tmp_path / "s.json").exists()


@pytest.mark.parametrize("args", [["--seed", "99999999999999999999999"], ["--seed", "4294967296"],
                                  ["--param", "random_state=99999999999999999999999"]])
def test_a_seed_beyond_32_bits_is_refused_before_the_models_load(no_models, args):
    assert "must be an integer in [0, 4294967295]" in refused(["ask", "Q?", *args])


@pytest.mark.parametrize(("name", "bad", "allowed"), [
    ("top_k", 101, "[1, 100]"), ("draft_workers", 65, "[1, 64]"), ("anchors", 51, "[0, 50]")])
def test_top_k_draft_workers_and_anchors_have_an_upper_bound(no_models, name, bad, allowed):
    line = refused(["ask", "Q?", "--param", f"{name}={bad}"])
    assert f"--param {name}" in line and allowed in line, line


@pytest.mark.parametrize(("args", "hint"), [
    (["ask", "Q?", "-N", "٣"], "-N"), (["ask", "Q?", "-K", "1_0"], "-K"),
    (["ask", "Q?", "--lambda", "٠.٥"], "--lambda"),
    (["ask", "Q?", "--seed", "１"], "--seed"), (["ask", "Q?", "--param", "top_k=1_0"], "--param top_k"),
    (["compare", "Q?", "--param", "n_subsets=٢"], "-M")])
def test_numbers_in_other_digits_or_with_underscores_are_refused_naming_the_parameter(no_models, args, hint):
    assert f"Invalid value for {hint}: must be" in refused(args)


def test_sweeps_and_integer_lists_take_ascii_digits_only(tmp_path, no_models):
    data = tmp_path / "d.jsonl"
    data.write_text("{}\n", encoding="utf-8")
    out = ["--out", str(tmp_path / "out")]
    refused(["eval", str(data), "--sweep", "N=٣", *out], "'n_counterfactuals' must be an integer")
    refused(["eval", str(data), "--limit", "1_0", *out], "--limit", "is not an integer")
    refused(["bench", "--sizes", "20,٣"], "--sizes", "not a comma-separated list of integers")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("sweep", "part"), [
    ("cer:theta=,,,", "names no value"), ("cer:theta=", "names no value"),
    ("lambda=0.2,,0.4", "has an empty value"), ("N=1,", "has an empty value")])
def test_an_empty_sweep_or_value_is_refused(tmp_path, no_models, sweep, part):
    data = tmp_path / "d.jsonl"
    data.write_text("{}\n", encoding="utf-8")
    line = refused(["eval", str(data), "--sweep", sweep, "--out", str(tmp_path / "out")])
    assert "--sweep" in line and part in line, line


def test_long_user_text_is_cut_short_in_the_error(tmp_path, no_models):
    data = tmp_path / "d.jsonl"
    data.write_text("{}\n", encoding="utf-8")
    long = "x" * 100_000
    for args in (["ask", "Q?", "--param", f"{long}=1"], ["ask", "Q?", "--param", long],
                 ["ask", "Q?", "--param", f"theta={long}", "--pipeline", "cer"],
                 ["eval", str(data), "--sweep", f"cer:theta={long}", "--out", str(tmp_path / "out")],
                 ["eval", str(data), "--sweep", f"{long}=1", "--out", str(tmp_path / "out")]):
        line = refused(args)
        assert "x" * 41 not in line and "…" in line, line[:200]


def test_text_is_read_as_a_number_only_in_ascii_decimal():
    assert [parse_value(t) for t in ("3", "-2", "+0.5", ".5", "1e-3", "no")] == [3, -2, 0.5, 0.5, 1e-3, "no"]
    assert [parse_value(t) for t in ("٣", "1_0", "１", "0x10", "ınf")] == ["٣", "1_0", "１", "0x10", "ınf"]
    assert parse_value("-inf") == float("-inf")  # read as numbers: the checks refuse them as not finite
    assert parse_integer(" 42 ") == 42
    for text in ("٣", "1_0", "4.0", ""):
        with pytest.raises(ValueError, match="is not an integer"):
            parse_integer(text)
    assert clip("a" * 41) == "a" * 40 + "…" and clip("a\nb\u202e") == "a b " and clip("short") == "short"
