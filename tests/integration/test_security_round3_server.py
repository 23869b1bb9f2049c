"""Issue #43, item 4: the servers `cfrag serve` starts live no longer than it does (real processes).

Before: after SIGHUP (a closed terminal) `cfrag serve` died at once, its Hayhooks children kept
answering on the port and the temporary deploy folder stayed; after SIGKILL the same.
"""

import os
import re
import signal
import socket
import sys
import time
from pathlib import Path

import pytest

from haystack_cfrag.serving.deploy import OWNER_FILE, remove_stale_run_folders
from haystack_cfrag.testing.server import served

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")


def _deploy_folder(server) -> Path:
    match = re.search(r"\[serve\] deploy dir (\S+)/pipelines:", server.log.read_text(encoding="utf-8"))
    assert match, server.log.read_text(encoding="utf-8")[-2000:]
    return Path(match.group(1))


def _gone(pid: int, timeout: float = 40.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # a zombie of ours is gone too
            with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
                if fh.read().rpartition(")")[2].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.2)
    return False


def _port_closed(url: str) -> bool:
    host, port = url.removeprefix("http://").split(":")
    with socket.socket() as sock:
        sock.settimeout(2)
        return sock.connect_ex((host, int(port))) != 0


def test_sighup_stops_the_servers_and_removes_the_deploy_folder():
    with served(["--mock"], expect=["cf_rag"]) as server:
        child, folder = server.hayhooks_pid(), _deploy_folder(server)
        assert child is not None and folder.is_dir()
        os.kill(server.process.pid, signal.SIGHUP)
        server.process.wait(timeout=40)
        assert _gone(child), "the Hayhooks child outlived cfrag serve"
        assert _port_closed(server.url)
        assert not folder.exists(), f"{folder} was left behind"


def test_sigkill_of_cfrag_serve_stops_its_servers_and_the_next_start_removes_its_folder():
    with served(["--mock"], expect=["cf_rag"]) as server:
        child, folder = server.hayhooks_pid(), _deploy_folder(server)
        assert child is not None and (folder / OWNER_FILE).is_file()
        os.kill(server.process.pid, signal.SIGKILL)
        server.process.wait(timeout=10)
        assert _gone(child), "the Hayhooks child outlived a killed cfrag serve"
        assert _port_closed(server.url)
    assert folder.is_dir()  # nobody was left to remove it …
    assert folder in remove_stale_run_folders(folder.parent)  # … what the next cfrag serve does first
    assert not folder.exists()
