"""Issue #43, item 4: `cfrag serve`'s children live no longer than it; stale deploy folders, removed safely.

`run_children` runs in a real subprocess with a sleeping child (no Hayhooks: fast); the
stale-folder sweep runs on folders made here, with dead and live owners, links and foreign files.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from haystack_cfrag.serving.deploy import (
    OWNER_FILE,
    RUN_FOLDER_PREFIX,
    _process_start,
    make_run_folder,
    remove_stale_run_folders,
)

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG and /proc are Linux's")

PARENT = """
import sys
from haystack_cfrag.cli.serve import run_children
child = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(120)"
print("exit", run_children([[sys.executable, "-c", child, sys.argv[1]]], {}), flush=True)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def _start_parent(tmp_path: Path) -> tuple[subprocess.Popen, int]:
    pid_file = tmp_path / "child.pid"
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(pid_file)], stdout=subprocess.PIPE, text=True,
                              start_new_session=True)
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text()):
        assert time.monotonic() < deadline and parent.poll() is None, "the child did not start"
        time.sleep(0.05)
    return parent, int(pid_file.read_text())


def _wait_gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


@linux
@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM])
def test_sighup_is_handled_like_sigterm_the_children_stop_and_run_children_returns(tmp_path, signum):
    parent, child = _start_parent(tmp_path)
    os.kill(parent.pid, signum)
    out, _ = parent.communicate(timeout=20)
    assert out.startswith("exit "), out  # returned (so `cfrag serve` removes its deploy folder), not killed
    assert _wait_gone(child)


@linux
def test_a_child_dies_with_its_killed_parent(tmp_path):
    parent, child = _start_parent(tmp_path)
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait(timeout=10)
    assert _wait_gone(child), "the child outlived its SIGKILLed parent"


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def _folder(root: Path, name: str, owner: object) -> Path:
    folder = root / f"{RUN_FOLDER_PREFIX}{name}"
    (folder / "pipelines").mkdir(parents=True)
    if owner is not None:
        (folder / OWNER_FILE).write_text(json.dumps(owner), encoding="utf-8")
    return folder


@linux
def test_only_stale_folders_this_package_made_are_removed_and_links_are_never_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep", encoding="utf-8")
    stale = _folder(tmp_path, "dead", {"pid": _dead_pid(), "started": "1"})
    (stale / "pipelines" / "link").symlink_to(outside, target_is_directory=True)
    reused = _folder(tmp_path, "reused", {"pid": os.getppid(), "started": "-1"})  # a pid now another process's
    live = _folder(tmp_path, "live", {"pid": os.getppid(), "started": _process_start(os.getppid())})
    mine = _folder(tmp_path, "mine", {"pid": os.getpid(), "started": _process_start(os.getpid())})
    unmarked = _folder(tmp_path, "unmarked", None)
    garbled = _folder(tmp_path, "garbled", None)
    (garbled / OWNER_FILE).write_text("{not json", encoding="utf-8")
    linked_owner = _folder(tmp_path, "linked-owner", None)
    (linked_owner / OWNER_FILE).symlink_to(stale / OWNER_FILE)
    target = _folder(outside, "target", {"pid": _dead_pid()})
    (tmp_path / f"{RUN_FOLDER_PREFIX}link").symlink_to(target, target_is_directory=True)
    (tmp_path / f"{RUN_FOLDER_PREFIX}1416.log").write_text("a log", encoding="utf-8")
    other = tmp_path / "not-ours"
    other.mkdir()
    (other / OWNER_FILE).write_text(json.dumps({"pid": _dead_pid()}), encoding="utf-8")

    removed = remove_stale_run_folders(tmp_path)

    assert sorted(removed) == sorted([stale, reused])
    assert not stale.exists() and not reused.exists()
    assert (outside / "precious.txt").read_text(encoding="utf-8") == "keep"
    for kept in (live, mine, unmarked, garbled, linked_owner, target, other):
        assert kept.is_dir(), kept
    assert (tmp_path / f"{RUN_FOLDER_PREFIX}link").is_symlink()
    assert (tmp_path / f"{RUN_FOLDER_PREFIX}1416.log").is_file()


def test_a_run_folder_names_its_owner_and_is_private(tmp_path):
    folder = make_run_folder(tmp_path)
    owner = json.loads((folder / OWNER_FILE).read_text(encoding="utf-8"))
    assert folder.name.startswith(RUN_FOLDER_PREFIX) and owner["pid"] == os.getpid()
    assert folder.stat().st_mode & 0o077 == 0
    assert remove_stale_run_folders(tmp_path) == []  # its owner runs


@pytest.mark.parametrize(("host", "key", "warned"), [("0.0.0.0", None, True), ("0.0.0.0", "s3cret", False),
                                                     ("127.0.0.1", None, False)])
def test_serving_beyond_loopback_without_a_token_is_warned_about(tmp_path, monkeypatch, host, key, warned):
    from click.testing import CliRunner

    import haystack_cfrag.cli.serve as cli_serve
    from haystack_cfrag.cli import main

    monkeypatch.setattr(cli_serve, "run_children", lambda commands, env: 0)
    if key:
        monkeypatch.setenv("CFRAG_API_KEY", key)
    else:
        monkeypatch.delenv("CFRAG_API_KEY", raising=False)
    result = CliRunner().invoke(main, ["serve", "--mock", "--host", host, "--deploy-dir", str(tmp_path / "d")])
    assert result.exit_code == 0, result.output
    assert ("without CFRAG_API_KEY" in result.output) is warned
