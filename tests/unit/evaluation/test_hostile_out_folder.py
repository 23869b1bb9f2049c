"""Issue #43, item 7: `cfrag eval --out` never writes through a link and never adopts a user's report.

Before: a `report.md` link in an evaluation folder was followed (its target overwritten), and a
folder holding `records.jsonl` and a user's `report.md` (no metadata, no marker) was taken for
an old run folder, its `report.md` replaced.
"""

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from haystack_cfrag.cli import main
from haystack_cfrag.cli.evaluate import EVAL_MARKER, made_by_eval
from haystack_cfrag.common.files import open_append, replace_text
from haystack_cfrag.evaluation import write_outputs

HOTPOT = Path(__file__).resolve().parents[2] / "data" / "hotpotqa_dev_a_30.jsonl"
RECORD = {"condition": "pooled", "system": "standard_rag", "qid": "a", "em": 1.0, "f1": 1.0, "lenient": 1.0,
          "support_recall": 0.5, "seconds": 1.0, "seconds_equivalent": 1.0, "stages": {"generator": 1.0},
          "llm": {"calls": 1, "prompt_tokens": 10, "completion_tokens": 2}, "cache_hits": 0, "error": None,
          "qtype": "bridge", "params": {}, "pipeline": "standard_rag", "inject": 0, "variant": None}


def _run_folder(folder: Path, *, marker: bool = True) -> Path:
    folder.mkdir()
    (folder / "records.jsonl").write_text(json.dumps(RECORD) + "\n", encoding="utf-8")
    if marker:
        (folder / EVAL_MARKER).write_text(json.dumps({"written_by": "cfrag eval"}), encoding="utf-8")
    return folder


def test_a_report_link_in_the_folder_is_refused_and_its_target_left_alone(tmp_path):
    folder = _run_folder(tmp_path / "run")
    precious = tmp_path / "bashrc"
    precious.write_text("export PATH=…", encoding="utf-8")
    (folder / "report.md").symlink_to(precious)
    result = CliRunner().invoke(main, ["eval", str(HOTPOT), "--report-only", "--no-plots", "--out", str(folder)])
    assert result.exit_code == 2, result.output
    assert "holds links (report.md)" in result.output
    assert precious.read_text(encoding="utf-8") == "export PATH=…"


def test_records_beside_a_users_report_are_not_an_old_run_folder(tmp_path):
    folder = _run_folder(tmp_path / "mine", marker=False)
    (folder / "report.md").write_text("my own notes", encoding="utf-8")
    assert not made_by_eval(folder)
    result = CliRunner().invoke(main, ["eval", str(HOTPOT), "--report-only", "--no-plots", "--out", str(folder)])
    assert result.exit_code == 2, result.output
    assert "did not write (records.jsonl, report.md)" in result.output
    assert (folder / "report.md").read_text(encoding="utf-8") == "my own notes"


def test_an_old_run_folder_with_records_and_its_caches_is_still_adopted(tmp_path):
    folder = _run_folder(tmp_path / "old", marker=False)
    (folder / "llm_cache.jsonl").write_text("", encoding="utf-8")
    assert made_by_eval(folder)
    result = CliRunner().invoke(main, ["eval", str(HOTPOT), "--report-only", "--no-plots", "--out", str(folder)])
    assert result.exit_code == 0, result.output
    assert (folder / "report.md").is_file() and (folder / EVAL_MARKER).is_file()


def test_the_writes_replace_a_link_planted_later_instead_of_following_it(tmp_path):
    folder = _run_folder(tmp_path / "run")
    precious = tmp_path / "precious.md"
    precious.write_text("keep", encoding="utf-8")
    for name in ("report.md", "results.json"):
        (folder / name).symlink_to(precious)
    write_outputs(folder, with_plots=False)  # the library path, no CLI check in front
    assert precious.read_text(encoding="utf-8") == "keep"
    assert not (folder / "report.md").is_symlink() and "standard_rag" in (folder / "report.md").read_text()
    assert [p.name for p in folder.iterdir() if p.name.endswith(".tmp")] == []


def test_appends_refuse_a_link_and_replacements_keep_the_usual_mode(tmp_path):
    target = tmp_path / "elsewhere.jsonl"
    target.write_text("", encoding="utf-8")
    (tmp_path / "records.jsonl").symlink_to(target)
    with pytest.raises(OSError):
        open_append(tmp_path / "records.jsonl")
    assert target.read_text(encoding="utf-8") == ""
    replace_text(tmp_path / "report.md", "x")
    mask = os.umask(0)
    os.umask(mask)
    assert (tmp_path / "report.md").stat().st_mode & 0o777 == 0o666 & ~mask


def test_a_marker_link_is_replaced_never_written_through(tmp_path):
    from haystack_cfrag.serving.deploy import mark_folder

    precious = tmp_path / "precious.json"
    precious.write_text('{"written_by": "cfrag serve"}', encoding="utf-8")
    folder = tmp_path / "deploy"
    folder.mkdir()
    (folder / ".cfrag-serve.json").symlink_to(precious)
    mark_folder(folder, "cfrag serve", ".cfrag-serve.json", written=["cf_rag"])
    assert precious.read_text(encoding="utf-8") == '{"written_by": "cfrag serve"}'
    assert not (folder / ".cfrag-serve.json").is_symlink()
