"""The `cfrag` command on the real embedded models."""

import json

from click.testing import CliRunner

from haystack_cfrag.cli import main

QUESTION = "Who is the lead actor in The Dark Knight?"


def test_index_then_ask_json(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text("The Zorblax 3000 is a tea kettle designed by Mira Okonkwo in 2019. " * 3)
    (notes / "b.md").write_text("# Garden\n\nThe community garden on Elm Street grows tomatoes and basil.\n")
    (tmp_path / "c.jsonl").write_text(json.dumps({"id": "p1", "title": "Ferry", "content":
                                                  "The night ferry to Tallinn leaves at 23:00 from terminal B."}) + "\n")
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


def test_index_with_graph_then_ask_causal_rag(tmp_path, monkeypatch):
    """`cfrag index --graph` extracts the causal graph ahead (cost per extracted passage in its summary line); causal_rag reads it.

    The extraction cache is this test's own: the user's cache outlives test runs, and a passage an
    earlier run extracted would be read from it (no extraction, no cost to print).
    """
    from haystack_cfrag import models

    monkeypatch.setattr(models, "graph_cache_dir", lambda: tmp_path / "graph-cache")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "flood.txt").write_text("Heavy rain in March caused the Elm river to flood. The flood destroyed the "
                                     "bridge at Millford, and the closed bridge cut the village off for a week.")
    store = tmp_path / "store.json"
    runner = CliRunner()
    result = runner.invoke(main, ["index", str(notes), "--store", str(store), "--graph"])
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if x.startswith("graph: "))
    assert "1 passages" in line and "per extracted passage" in line

    result = runner.invoke(main, ["ask", "What destroyed the bridge at Millford?", "--store", str(store),
                                  "--pipeline", "causal_rag", "--json", "--max-tokens", "64"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output[result.output.index("{"):])
    assert data["answer"] and data["documents"]
    assert data["trace"]["seeds"], data["trace"]  # the graph had nodes near the question
    assert any((tmp_path / "graph-cache").rglob("*")), "the extraction was not cached where the runtime reads it"
