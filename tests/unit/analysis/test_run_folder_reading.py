"""Issue 71, item 2: the analysis tools read a run folder, or its replay archive, through the one safe opener.

Before (58316b0): a FIFO at `records.jsonl` was waited on for ever, a `reply_sources.json` naming `..` or
holding a list was followed or raised AttributeError, and a line that was JSON but not an object was returned
as a record.
"""

import io
import json
import os
import tarfile

import pytest

from tests.analysis_tools import load_tool
from tests.unit.evaluation.test_hostile_run_folders import within

run_folder = load_tool("run_folder")


def _archive(folder, **members):
    folder.mkdir(exist_ok=True)
    with tarfile.open(folder / run_folder.ARCHIVE, "w:xz") as tar:
        for name, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(name.replace("__", "."))
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def test_a_fifo_at_the_records_is_refused_in_one_line_naming_it(tmp_path):
    os.mkfifo(tmp_path / "records.jsonl")
    with within(10), pytest.raises(ValueError, match=r"records.jsonl is a FIFO .*nothing read"):
        run_folder.read_run_records(tmp_path)


def test_only_json_objects_are_records_in_the_folder_or_its_archive(tmp_path):
    lines = "\n".join([json.dumps({"system": "a"}), "[1]", "3", "{", json.dumps({"system": "b"})])
    _archive(tmp_path / "archived", records__jsonl=lines)
    assert [r["system"] for r in run_folder.read_run_records(tmp_path / "archived")] == ["a", "b"]
    (tmp_path / "records.jsonl").write_text(lines)
    assert [r["system"] for r in run_folder.read_run_records(tmp_path)] == ["a", "b"]


@pytest.mark.parametrize("sources", ['{"archives": [".."]}', '{"archives": ["../x"]}', '["x"]',
                                     '{"archives": 3}'])
def test_reply_sources_name_folders_beside_the_run_only(tmp_path, sources):
    _archive(tmp_path / "run", llm_cache__jsonl='{"k": 1}\n', reply_sources__json=sources)
    with pytest.raises(ValueError, match="does not list run folders beside it"):
        run_folder.reply_cache_lines(tmp_path / "run")
