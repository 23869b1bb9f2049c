"""benchmarks/analysis/dedupe_archives.py and replay_folder.py: each cached reply in one archive, replays whole."""

import io
import json
import tarfile

import pytest

from tests.analysis_tools import load_tool

dedupe_archives = load_tool("dedupe_archives")
replay_folder = load_tool("replay_folder")
run_folder = load_tool("run_folder")


def _reply(key):
    return json.dumps({"key": key, "replies": [{"content": [{"text": f"Answer: {key}"}]}]})


def _run(results, name, started, replies, records=("r",)):
    """A committed run folder: records, metadata (its start time) and a reply cache."""
    folder = results / name
    folder.mkdir(parents=True)
    members = {
        "records.jsonl": "".join(json.dumps({"key": r, "system": "standard_rag"}) + "\n" for r in records),
        "llm_cache.jsonl": "".join(_reply(k) + "\n" for k in replies),
        "metadata.json": json.dumps({"invocations": [{"started": started}]}),
    }
    with tarfile.open(folder / "replay.tar.xz", "w:xz") as tar:
        for member, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return folder


def _cache(folder):
    return [json.loads(line)["key"] for line in (run_folder.read_member(folder, "llm_cache.jsonl") or "").splitlines()]


@pytest.fixture()
def results(tmp_path):
    results = tmp_path / "results"
    # "a_late" sorts first by name but started last: the start time decides who keeps a reply
    _run(results, "a_late", "2026-11-27T10:00:00+00:00", ["q1", "q2", "q5"])
    _run(results, "b_first", "2026-11-25T10:00:00+00:00", ["q1", "q2"])
    _run(results, "c_middle", "2026-11-26T10:00:00+00:00", ["q2", "q3", "q4"])
    return results


def test_each_reply_stays_in_the_earliest_archive_and_the_later_ones_name_it(results):
    before = {f.name: set(_cache(f)) for f in results.iterdir()}
    assert dedupe_archives.main([str(results), "--check"]) == 1  # pending, nothing written yet
    assert set(_cache(results / "a_late")) == {"q1", "q2", "q5"}
    assert dedupe_archives.main([str(results)]) == 0
    assert _cache(results / "b_first") == ["q1", "q2"]
    assert _cache(results / "c_middle") == ["q3", "q4"]
    assert _cache(results / "a_late") == ["q5"]
    sources = json.loads(run_folder.read_member(results / "a_late", run_folder.REPLY_SOURCES))
    assert sources == {"archives": ["b_first"], "lines": 2}
    assert run_folder.read_member(results / "b_first", run_folder.REPLY_SOURCES) is None
    # a replay gets back every reply each run read, and the records are untouched
    for folder in results.iterdir():
        assert before[folder.name] <= {json.loads(line)["key"] for line in run_folder.reply_cache_lines(folder)}
        assert [r["key"] for r in run_folder.read_run_records(folder)] == ["r"]
    # idempotent: a second pass changes no byte
    snapshot = {f.name: (f / "replay.tar.xz").read_bytes() for f in results.iterdir()}
    assert dedupe_archives.main([str(results), "--check"]) == 0
    assert dedupe_archives.main([str(results)]) == 0
    assert snapshot == {f.name: (f / "replay.tar.xz").read_bytes() for f in results.iterdir()}


def test_a_later_archive_adds_to_the_sources_it_already_names(results):
    dedupe_archives.main([str(results)])
    _run(results, "d_last", "2026-11-28T10:00:00+00:00", ["q5", "q3", "q6"])
    dedupe_archives.main([str(results)])
    assert _cache(results / "d_last") == ["q6"]
    sources = json.loads(run_folder.read_member(results / "d_last", run_folder.REPLY_SOURCES))
    assert sources == {"archives": ["a_late", "c_middle"], "lines": 2}


def test_replay_folder_unpacks_the_whole_cache_into_a_new_folder(results, tmp_path):
    dedupe_archives.main([str(results)])
    out = tmp_path / "runs" / "a_late"
    assert replay_folder.main([str(results / "a_late"), str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["llm_cache.jsonl", "metadata.json", "records.jsonl"]
    keys = [json.loads(line)["key"] for line in (out / "llm_cache.jsonl").read_text().splitlines()]
    assert keys == ["q5", "q1", "q2"]  # its own reply first, then its source's


def test_replay_folder_never_writes_over_a_folder_of_yours(results, tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "records.jsonl").write_text("my records\n")
    assert replay_folder.main([str(results / "a_late"), str(out)]) == 2
    assert "exists and is not an empty folder" in capsys.readouterr().err
    assert (out / "records.jsonl").read_text() == "my records\n"


def test_a_missing_source_folder_is_named_and_nothing_is_written(results, tmp_path, capsys):
    dedupe_archives.main([str(results)])
    (results / "b_first" / "replay.tar.xz").unlink()
    out = tmp_path / "runs" / "a_late"
    assert replay_folder.main([str(results / "a_late"), str(out)]) == 2
    assert "its replies are also in b_first" in capsys.readouterr().err
    assert not out.exists()


def test_the_examples_in_the_docstrings_hold():
    import doctest

    for module in (dedupe_archives, run_folder):
        result = doctest.testmod(module)
        assert result.attempted >= 1 and result.failed == 0
