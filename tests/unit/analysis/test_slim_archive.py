"""benchmarks/analysis/slim_archive.py: a committed run archive without machine paths, packed at xz -9e."""

import doctest
import io
import json
import lzma
import re
import tarfile

import pytest

from tests.analysis_tools import load_tool

GGUF = "/root/.cache/haystack-cfrag/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MACHINE = re.compile(rb'"/(work|root|home|tmp)/')


def _reply(model):
    meta = {"response_id": "chatcmpl-4e1f", "model": model, "created": 1795665022,
            "usage": {"prompt_tokens": 9}}
    return {"role": "assistant", "meta": meta, "name": None,
            "content": [{"text": "Answer: Christian Bale"}]}


def _archive(path, members):
    """A tiny replay.tar.xz as `cfrag eval` leaves one (default xz preset, owners set)."""
    with tarfile.open(path, "w:xz") as tar:
        for name, text in members:
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.uid, info.uname, info.mtime = len(data), 1000, "someone", 1_795_000_000
            tar.addfile(info, io.BytesIO(data))


def _members(path):
    with tarfile.open(path, "r:xz") as tar:
        return [(m.name, tar.extractfile(m).read().decode(), m.uname, m.mtime) for m in tar.getmembers()]


@pytest.fixture()
def run(tmp_path):
    folder = tmp_path / "trap_ks"
    folder.mkdir()
    cache = [
        json.dumps({"key": "k1", "seconds": 13.712400404001528, "replies": [_reply(GGUF)]}),
        json.dumps({"key": "k2", "seconds": 0.5, "replies": [_reply("cfrag-qwen")]}),  # an alias: kept
        '{"key": "k3", "replies": [',  # a line cut by an interrupted run: kept as it was
    ]
    records = [json.dumps({"system": "standard_rag", "qid": "q1", "em": 1.0, "f1": 0.6666666666666666,
                           "seconds": 9.0000014000001, "stages": {"generator": 8.123456789},
                           "answer": "Christian Bale",
                           "graph_cache": "/work/main/runs/trap_ks/graph_cache/g.json",
                           "source": "https://example.org/home/page"})]
    metadata = json.dumps({"data": "../shared/data/trap_dev.jsonl", "out": "/tmp/pytest-7/runs/trap_ks",
                           "models": {"llm": "embedded:qwen2.5-coder-1.5b-instruct"}}, indent=2)
    _archive(folder / "replay.tar.xz", [("records.jsonl", "\n".join(records) + "\n"),
                                        ("llm_cache.jsonl", "\n".join(cache) + "\n"),
                                        ("metadata.json", metadata)])
    return folder


def test_machine_paths_leave_every_member_and_nothing_else_changes(run):
    tool = load_tool("slim_archive")
    archive = run / "replay.tar.xz"
    before = _members(archive)
    assert tool.main([str(run)]) == 0
    after = _members(archive)
    assert [m[0] for m in after] == [m[0] for m in before]  # the same members, in their order
    assert all(uname == "" for _, _, uname, _ in after) and [m[3] for m in after] == [m[3] for m in before]
    text = {name: body for name, body, _, _ in after}
    assert not MACHINE.search(lzma.decompress(archive.read_bytes()))
    cache = text["llm_cache.jsonl"].splitlines()
    reply = json.loads(cache[0])["replies"][0]
    assert reply["meta"] == {"model": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", "created": 1795665022,
                             "usage": {"prompt_tokens": 9}}  # the server's random id dropped, the rest kept
    assert reply["content"] == [{"text": "Answer: Christian Bale"}]
    assert json.loads(cache[0])["seconds"] == 13.7124
    assert "response_id" not in cache[1]
    assert json.loads(cache[1])["replies"][0]["meta"]["model"] == "cfrag-qwen"
    assert cache[2] == '{"key": "k3", "replies": ['  # a cut line: kept as it was
    record = json.loads(text["records.jsonl"])
    assert record["graph_cache"] == "graph_cache/g.json"  # relative to the run folder
    assert record["source"] == "https://example.org/home/page"  # a URL's path is not the machine's
    assert record["answer"] == "Christian Bale" and record["em"] == 1.0
    assert record["seconds"] == 9.000001 and record["stages"] == {"generator": 8.123457}  # to the µs
    assert record["f1"] == 0.6666666666666666  # scores are not timings: untouched
    metadata = json.loads(text["metadata.json"])
    assert metadata["out"] == "." and metadata["data"] == "../shared/data/trap_dev.jsonl"
    # the analysis tools still read the records straight from the slim archive
    assert [r["qid"] for r in load_tool("run_folder").read_run_records(run)] == ["q1"]


def test_slimming_twice_changes_nothing_and_check_says_so(run, capsys):
    tool = load_tool("slim_archive")
    archive = run / "replay.tar.xz"
    assert tool.main([str(archive), "--check"]) == 1  # would change; --check writes nothing
    untouched = archive.read_bytes()
    assert tool.slim_archive(archive, write=False)["changed"] and archive.read_bytes() == untouched
    first = tool.slim_archive(archive)
    assert first["changed"] and first["paths"] == 3
    slim = archive.read_bytes()
    second = tool.slim_archive(archive)
    assert second == {"before": len(slim), "after": len(slim), "paths": 0, "changed": False}
    assert archive.read_bytes() == slim
    assert tool.main([str(run), "--check"]) == 0
    assert "already slim, 0 paths" in capsys.readouterr().out


def test_a_broken_archive_or_a_missing_path_is_named_in_one_line(tmp_path, capsys):
    tool = load_tool("slim_archive")
    broken = tmp_path / "replay.tar.xz"
    broken.write_bytes(b"not xz")
    assert tool.main([str(broken)]) == 2
    assert f"{broken}: not a readable .tar.xz" in capsys.readouterr().err
    assert broken.read_bytes() == b"not xz"
    with pytest.raises(SystemExit, match="no such file or folder"):
        tool.main([str(tmp_path / "absent")])


def test_the_docstring_examples_run():
    result = doctest.testmod(load_tool("slim_archive"))
    assert result.attempted > 0 and result.failed == 0
