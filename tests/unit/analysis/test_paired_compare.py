"""benchmarks/analysis/paired_compare.py: a system of another run folder over the same questions (FOLDER::SYSTEM)."""

import json

from tests.analysis_tools import load_tool


def write_run(folder, records):
    folder.mkdir()
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def rec(system, qid, em, condition="pooled"):
    return {"condition": condition, "system": system, "qid": str(qid), "em": em}


def test_a_system_is_read_from_the_named_folder_and_the_others_from_the_default_one(tmp_path):
    tool = load_tool("paired_compare")
    write_run(tmp_path / "new",
              [rec("causal_rag", 1, 1.0), rec("causal_rag", 2, 0.0), rec("causal_rag", 3, 1.0, "inject")])
    write_run(tmp_path / "old", [rec("causal_rag", 1, 0.0), rec("causal_rag", 2, 0.0)])
    here = tool.system_records(tmp_path / "new", "causal_rag", "pooled")
    there = tool.system_records(tmp_path / "new", f"{tmp_path / 'old'}::causal_rag", "pooled")
    assert [r["em"] for r in here] == [1.0, 0.0]       # the inject condition left out
    assert [r["em"] for r in there] == [0.0, 0.0]      # the other folder's run, not this one's
    assert tool.system_records(tmp_path / "new", "cdf_rag", "pooled") == []
