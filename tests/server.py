"""Start `cfrag serve` (or stock `hayhooks run`) as a child process, wait until it is ready, always stop it
(the HTTP tests' and `benchmarks/load_test.py`'s helper).

```python
from tests.server import served, stock_hayhooks
with served(["--mock"], expect=["cf_rag"]) as server:
    print(server.url, server.rss())
with stock_hayhooks("my_pipelines/", expect=["standard_rag"]) as server:
    print(server.url)
```
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Server:
    """A running `cfrag serve`."""

    url: str
    process: subprocess.Popen
    log: Path
    mcp_url: str | None = None
    api_key: str | None = None

    def headers(self) -> dict[str, str]:
        """The Authorization header the server wants (empty without a token)."""
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def status(self) -> dict:
        """GET /status."""
        request = urllib.request.Request(f"{self.url}/status", headers=self.headers())
        with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310  (local URL)
            return json.load(response)

    def log_size(self) -> int:
        """The size of the server's log so far, in bytes (an offset for `log_since`)."""
        return self.log.stat().st_size if self.log.exists() else 0

    def log_since(self, offset: int) -> str:
        """What the server (REST and MCP) logged from byte `offset` on."""
        with self.log.open("rb") as fh:
            fh.seek(offset)
            return fh.read().decode("utf-8", errors="replace")

    def hayhooks_pid(self) -> int | None:
        """The pid of the REST server process (a child of `cfrag serve` running Hayhooks' app)."""
        try:
            import psutil  # noqa: PLC0415
        except ImportError:
            return None
        for child in psutil.Process(self.process.pid).children(recursive=True):
            command = child.cmdline()
            if "haystack_cfrag.serving.app" in command and "rest" in command:
                return child.pid
        return None

    def rss(self) -> int | None:
        """Resident memory of the hayhooks server process in bytes (from /proc), or None."""
        pid = self.hayhooks_pid()
        if pid is None:
            return None
        with open(f"/proc/{pid}/status", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return None


@contextlib.contextmanager
def served(
    args: list[str],
    *,
    expect: list[str],
    port: int | None = None,
    mcp_port: int | None = None,
    timeout: float = 300.0,
    log: Path | None = None,
    env: dict[str, str] | None = None,
) -> Iterator[Server]:
    """Run `cfrag serve ARGS` on 127.0.0.1 until every pipeline in `expect` is deployed (with `env`'s
    `CFRAG_API_KEY`); its process group is terminated, then killed, on exit."""
    port = port or free_port()
    command = [sys.executable, "-m", "haystack_cfrag.cli", "serve", "--host", "127.0.0.1", "--port", str(port), *args]
    if mcp_port:
        command += ["--mcp", "--mcp-port", str(mcp_port)]
    with _running(command, port=port, expect=expect, timeout=timeout, log=log, env=env, mcp_port=mcp_port) as server:
        yield server


@contextlib.contextmanager
def stock_hayhooks(
    pipelines_dir: str | Path,
    *,
    expect: list[str],
    timeout: float = 300.0,
    log: Path | None = None,
    env: dict[str, str] | None = None,
) -> Iterator[Server]:
    """Run stock `hayhooks run --pipelines-dir DIR` (durable mode) until `expect` is deployed."""
    port = free_port()
    command = [str(Path(sys.executable).parent / "hayhooks"), "run", "--host", "127.0.0.1", "--port", str(port),
               "--pipelines-dir", str(pipelines_dir)]
    env = {"HAYHOOKS_STARTUP_DEPLOY_STRATEGY": "sequential", "HAYHOOKS_DURABLE_MODE": "true", **(env or {})}
    with _running(command, port=port, expect=expect, timeout=timeout, log=log, env=env) as server:
        yield server


@contextlib.contextmanager
def _running(
    command: list[str],
    *,
    port: int,
    expect: list[str],
    timeout: float,
    log: Path | None,
    env: dict[str, str] | None,
    mcp_port: int | None = None,
) -> Iterator[Server]:
    log = log or Path(os.environ.get("TMPDIR", "/tmp")) / f"cfrag-serve-{port}.log"
    child_env = {**os.environ, "HAYSTACK_TELEMETRY_ENABLED": "False", **(env or {})}
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=child_env,  # noqa: S603
                                   start_new_session=True)
    server = Server(url=f"http://127.0.0.1:{port}", process=process, log=log,
                    mcp_url=f"http://127.0.0.1:{mcp_port}" if mcp_port else None,
                    api_key=child_env.get("CFRAG_API_KEY") or None)
    try:
        _wait_ready(server, expect, timeout)
        yield server
    finally:
        _stop(process)


def _wait_ready(server: Server, expect: list[str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"cfrag serve exited with {server.process.returncode}:\n{_tail(server.log)}")
        try:
            deployed = set(server.status().get("pipelines", []))
        except OSError:
            deployed = set()
        if set(expect) <= deployed:
            return
        time.sleep(0.5)
    raise TimeoutError(f"cfrag serve was not ready in {timeout:.0f} s:\n{_tail(server.log)}")


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM the process group (cfrag serve stops its hayhooks children), then SIGKILL what is left."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=20)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.killpg(process.pid, 0)  # is any process of the group left?
        except ProcessLookupError:
            return
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5)


def _tail(path: Path, n: int = 4000) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[-n:]
    except OSError:
        return ""
