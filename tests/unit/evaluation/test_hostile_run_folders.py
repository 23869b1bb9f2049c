"""Issue 71, E3: a run folder's files are read through the one safe opener (`stores.safe_files`).

Before (58316b0): `cfrag gate fit --runs DIR` blocked for ever on a FIFO at `records.jsonl` or
`metadata.json`, and read a link to /dev/zero until memory ran out; `cfrag eval --report-only` did the same.
Each case runs the command in a child bounded in time (60 s) and address space (3 GB), and asserts one line
naming the file, within the bound.
"""

import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from haystack_cfrag.evaluation.gate_data import sample_name
from haystack_cfrag.evaluation.summary import read_records

RECORD = {"condition": "pooled", "system": "standard_rag", "qid": "a", "question": "Who?", "em": 1.0,
          "inject": 0, "variant": None, "params": {}}
ROOT = Path(__file__).resolve().parents[3]


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


def _cfrag(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HAYSTACK_TELEMETRY_ENABLED": "False"}
    try:
        return subprocess.run([sys.executable, "-c", "from haystack_cfrag.cli import main; main()", *args],
                              capture_output=True, text=True, timeout=60, preexec_fn=_limits, env=env,
                              cwd=ROOT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"cfrag {' '.join(args)} still reading after 60 s (a FIFO waited on for ever)")


def _folder(tmp_path: Path, hostile: str, kind: str) -> Path:
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "records.jsonl").write_text(json.dumps(RECORD) + "\n")
    (folder / "metadata.json").write_text(json.dumps({"config": {"data": "trap.jsonl"}}))
    (folder / hostile).unlink()
    if kind == "fifo":
        os.mkfifo(folder / hostile)
    else:
        (folder / hostile).symlink_to("/dev/zero")
    return folder


def _assert_one_line(result: subprocess.CompletedProcess, *fragments: str) -> None:
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    assert result.returncode != 0 and len(lines) == 1, result.stdout + result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.mark.parametrize("kind", ["fifo", "zero"])
@pytest.mark.parametrize("hostile", ["records.jsonl", "metadata.json"])
def test_gate_fit_refuses_a_fifo_or_dev_zero_in_a_run_folder_in_one_line(tmp_path, hostile, kind):
    folder = _folder(tmp_path, hostile, kind)
    result = _cfrag("gate", "fit", "--method", "cf_rag", "--runs", str(folder),
                    "--out", str(tmp_path / "g.yml"))
    _assert_one_line(result, str(folder / hostile), "nothing read")
    assert not (tmp_path / "g.yml").exists()


def test_eval_report_only_refuses_a_fifo_at_the_records(tmp_path):  # a link there: refused as --out already
    folder = _folder(tmp_path, "records.jsonl", "fifo")
    (folder / ".cfrag-eval.json").write_text(json.dumps({"written_by": "cfrag eval"}))
    data = ROOT / "tests" / "data" / "hotpotqa_dev_a_30.jsonl"
    result = _cfrag("eval", str(data), "--report-only", "--no-plots", "--out", str(folder))
    _assert_one_line(result, str(folder / "records.jsonl"), "nothing read")


def test_the_readers_skip_what_is_not_a_record_and_name_a_special_file(tmp_path):
    (tmp_path / "records.jsonl").write_text("\n".join([json.dumps(RECORD), "[1, 2]", "7", "{", "1" * 5000,
                                                       "[" * 100_000, json.dumps({**RECORD, "qid": "b"})]))
    assert [r["qid"] for r in read_records(tmp_path)] == ["a", "b"]
    (tmp_path / "metadata.json").write_text('["not", "an object"]')
    assert sample_name(tmp_path) == tmp_path.name
    (tmp_path / "metadata.json").unlink()
    os.mkfifo(tmp_path / "metadata.json")
    with within(10), pytest.raises(ValueError, match="metadata.json is a FIFO"):
        sample_name(tmp_path)


@contextlib.contextmanager
def within(seconds: int):
    """Raise TimeoutError in this thread after `seconds` (a blocked open of a FIFO is interrupted)."""
    def late(*_):
        raise TimeoutError(f"still blocked after {seconds} s")

    previous = signal.signal(signal.SIGALRM, late)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
