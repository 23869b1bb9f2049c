"""The `cfrag` command on the real embedded models."""

import json
import math

import pytest
from click.testing import CliRunner

from haystack_cfrag.cdf_rag.math.refinement import FIXED_ACTIONS
from haystack_cfrag.cli import main

QUESTION = "Who is the lead actor in The Dark Knight?"


def test_index_then_ask_json(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text("The Zorblax 3000 is a tea kettle designed by Mira Okonkwo in 2019. " * 3)
    (notes / "b.md").write_text("# Garden\n\nThe community garden on Elm Street grows tomatoes and basil.\n")
    ferry = "The night ferry to Tallinn leaves at 23:00 from terminal B."
    (tmp_path / "c.jsonl").write_text(json.dumps({"id": "p1", "title": "Ferry", "content": ferry}) + "\n")
    store = tmp_path / "store.json"
    runner = CliRunner()
    result = runner.invoke(main, ["index", str(notes), str(tmp_path / "c.jsonl"), "--store", str(store)])
    assert result.exit_code == 0, result.output
    assert "3 files" in result.output and store.exists()

    result = runner.invoke(main, ["ask", "Who designed the Zorblax 3000?", "--store", str(store),
                                  "--pipeline", "standard_rag", "--json", "--max-tokens", "32"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output[result.output.index("{"):])
    assert "Okonkwo" in data["answer"]
    assert data["llm"]["calls"] == 1 and data["stages"]


def test_ask_prints_a_readable_trace():
    result = CliRunner().invoke(main, ["ask", QUESTION, "--pipeline", "cf_rag_fast", "--max-tokens", "96"])
    assert result.exit_code == 0, result.output
    for part in ("Answer:", "Counterfactuals:", "Drafts (scorer: embedding", "Ψ", "causal", "Decision:"):
        assert part in result.output, part


FLOOD_QUESTION = "What destroyed the bridge at Millford?"


@pytest.fixture(scope="module")
def graph_store(tmp_path_factory):
    """`cfrag index --graph` over one note: (the store, the index command's output).

    The extraction cache is this module's own: the user's cache outlives test runs, and a passage
    an earlier run extracted would be read from it (no extraction, no cost to print).
    """
    from haystack_cfrag import models

    tmp_path = tmp_path_factory.mktemp("graph")
    cache = tmp_path / "graph-cache"
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "flood.txt").write_text("Heavy rain in March caused the Elm river to flood. The flood destroyed the "
                                     "bridge at Millford, and the closed bridge cut the village off for a week.")
    store = tmp_path / "store.json"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(models, "graph_cache_dir", lambda: cache)
        result = CliRunner().invoke(main, ["index", str(notes), "--store", str(store), "--graph"])
        assert result.exit_code == 0, result.output
        assert any(cache.rglob("*")), "the extraction was not cached where the runtime reads it"
        yield store, result.output


def test_index_with_graph_then_ask_causal_rag(graph_store):
    """`cfrag index --graph` extracts the causal graph ahead (cost per extracted passage in its summary line);
    causal_rag reads it."""
    store, output = graph_store
    line = next(x for x in output.splitlines() if x.startswith("graph: "))
    assert "1 passages" in line and "per extracted passage" in line

    result = CliRunner().invoke(main, ["ask", FLOOD_QUESTION, "--store", str(store),
                                       "--pipeline", "causal_rag", "--json", "--max-tokens", "64"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output[result.output.index("{"):])
    assert data["answer"] and data["documents"]
    assert data["trace"]["seeds"], data["trace"]  # the graph had nodes near the question


def test_cdf_rag_on_the_real_reader_refines_retrieves_on_two_paths_and_checks(graph_store):
    """CDF-RAG end to end on the embedded reader: each stage's trace, the graph's edges given to the
    causal check, the answer's claims scored by the reader's own support (real log-probabilities)."""
    store, _ = graph_store
    result = CliRunner().invoke(main, ["ask", FLOOD_QUESTION, "--store", str(store),
                                       "--pipeline", "cdf_rag", "--json", "--max-tokens", "64"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output[result.output.index("{"):])
    assert data["answer"] and data["documents"]
    trace = data["trace"]
    assert trace["refiner"]["action"] in FIXED_ACTIONS
    assert trace["causal_checker"]["edges"] > 0  # the note's edges reached the check
    hall = trace["hallucination_checker"]
    assert hall["decision"] in ("keep", "rewrite") and hall["claims"] >= 1
    assert len(hall["claim_supports"]) == hall["claims"]
    assert all(math.isfinite(s) and s <= 0 for s in hall["claim_supports"])  # log-probabilities per token
    # read as the reply to the prompt the generator just answered: llama.cpp still holds it (one model
    # instance), so the scoring evaluates the claims' tokens, not the question and passages again
    assert hall["scored_under"] == "answer prompt"
    assert data["llm"]["scorings"] == hall["claims"] and data["llm"]["scoring_tokens"] <= 20 * hall["claims"]


def test_grounded_rag_rewrites_a_flagged_answer_with_the_real_reader(graph_store):
    """A threshold no claim reaches (0 nats per token) flags standard RAG's answer: one reanswer call follows.

    Against the same pipeline with δ = 1, which never rewrites (S_hall ≤ 1), whatever the reader answered.
    """
    from haystack_cfrag import models
    from haystack_cfrag.runtime import Runtime
    from haystack_cfrag.stores import open_query_store

    store, _ = graph_store
    rt = Runtime(store=open_query_store(str(store), models.EMBEDDED_EMBEDDER), max_tokens=64)
    rt.warm_up()
    plain = rt.ask("grounded_rag", FLOOD_QUESTION, {"delta": 1.0})
    assert plain.trace["hallucination_checker"]["decision"] in ("keep", "undefined")
    flagged = rt.ask("grounded_rag", FLOOD_QUESTION, {"support_threshold": 0.0, "rewrite_mode": "reanswer"})
    hall = flagged.trace["hallucination_checker"]
    assert hall["decision"] == "rewrite" and hall["rewrite_mode"] == "reanswer"
    assert hall["original_answer"] == plain.trace["hallucination_checker"]["original_answer"]  # standard RAG's
    assert flagged.llm["calls"] == plain.llm["calls"] + 1 and flagged.answer  # the one rewrite call, an answer


def test_grounded_rag_lite_checks_standard_rags_answer_on_the_demo_store_with_no_graph(graph_cache):
    """The demo store has no graph and none is built: the hallucination check alone, with real log-probabilities."""
    result = CliRunner().invoke(main, ["ask", QUESTION, "--pipeline", "grounded_rag_lite", "--json",
                                       "--max-tokens", "64"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output[result.output.index("{"):])
    assert set(data["trace"]) == {"hallucination_checker"} and data["answer"]
    hall = data["trace"]["hallucination_checker"]
    assert hall["claims"] >= 1 and all(math.isfinite(s) and s <= 0 for s in hall["claim_supports"])
    assert not graph_cache.exists()  # it would be written to if a graph were built
