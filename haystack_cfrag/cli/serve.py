"""`cfrag serve`: CF-RAG over HTTP with Hayhooks (REST `/<pipeline>/run`, OpenAI chat, optional MCP).

    cfrag serve                                   # cf_rag on 127.0.0.1:1416, embedded models
    cfrag serve --pipeline cf_rag_fast --yaml cf_rag_fast --port 8000
    cfrag serve --yaml my_pipeline.yml            # a YAML file of your own, served as my_pipeline_yaml
    cfrag serve --store faiss:stores/demo          # any store spec `cfrag ask` takes (haystack_cfrag.stores)
    cfrag serve --mock --mock-failure-rate 0.1    # the mock generator: tests and load runs
    cfrag serve --mcp --mcp-port 1417             # also the MCP server (needs hayhooks[mcp])
    CFRAG_API_KEY=… cfrag serve --cors-origin https://ui.example   # a token on every route, one browser origin

It writes a deploy directory (wrapper folders; with `--yaml`, the YAML files made deployable) and runs Hayhooks' app
on it through `haystack_cfrag.serving.app` (only the served pipelines, no deploy routes or CORS unless asked).
Models, store and generator reach the server as `CFRAG_*` environment variables (docs/serving.md). Every option is
checked before anything starts.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from haystack_cfrag import models
from haystack_cfrag.cli.checks import FloatRange, IntRange, check_model_spec, check_store_spec
from haystack_cfrag.registry import served_pipelines

SERVED = served_pipelines()
SERVER = [sys.executable, "-m", "haystack_cfrag.serving.app"]
ORIGIN = re.compile(r"https?://[A-Za-z0-9.\-]+(:[0-9]{1,5})?|https?://\[[0-9A-Fa-f:]+\](:[0-9]{1,5})?")


def server_env(
    base: dict[str, str] | None = None,
    *,
    llm: str | None = None,
    embedder: str | None = None,
    scorer: str | None = None,
    store: str | None = None,
    device: str | None = None,
    max_tokens: int | None = None,
    mock: bool = False,
    mock_failure_rate: float = 0.0,
    mock_delay: float = 0.0,
    mock_seed: int = 0,
    pipelines: tuple[str, ...] = (),
) -> dict[str, str]:
    """The environment of the served process: CFRAG_* settings, sequential deploys, the allowlist."""
    env = dict(os.environ if base is None else base)
    allow = [p for p in env.get("HAYSTACK_DESERIALIZATION_ALLOWLIST", "").split(",") if p.strip()]
    if "haystack_cfrag" not in allow:
        allow.append("haystack_cfrag")
    env.update(
        {
            "HAYSTACK_DESERIALIZATION_ALLOWLIST": ",".join(allow),
            "HAYHOOKS_STARTUP_DEPLOY_STRATEGY": "sequential",  # the parallel start races on imports
            "HAYSTACK_TELEMETRY_ENABLED": env.get("HAYSTACK_TELEMETRY_ENABLED", "False"),
            "HF_HUB_OFFLINE": env.get("HF_HUB_OFFLINE", "1"),
            "TOKENIZERS_PARALLELISM": env.get("TOKENIZERS_PARALLELISM", "false"),
            "CFRAG_GENERATOR": "mock" if mock else "model",
            "CFRAG_MOCK_FAILURE_RATE": str(mock_failure_rate),
            "CFRAG_MOCK_DELAY_S": str(mock_delay),
            "CFRAG_MOCK_SEED": str(mock_seed),
        }
    )
    for key, value in (("CFRAG_LLM", llm), ("CFRAG_EMBEDDER", embedder), ("CFRAG_SCORER", scorer),
                       ("CFRAG_STORE", store), ("CFRAG_DEVICE", device),
                       ("CFRAG_MAX_TOKENS", str(max_tokens) if max_tokens else None),
                       ("CFRAG_PIPELINES", ",".join(pipelines) if pipelines else None)):
        if value:
            env[key] = value
    return env


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=1416, show_default=True, type=IntRange(1, 65535))
@click.option("--pipeline", "pipelines", multiple=True, type=click.Choice(SERVED), default=("cf_rag",),
              show_default=True, help="Pipelines served through the CF-RAG wrapper (repeatable).")
@click.option("--yaml", "yaml_pipelines", multiple=True, metavar="NAME|FILE",
              help=f"Also deploy a YAML pipeline, served as '<name>_yaml': a shipped one ({', '.join(SERVED)}) or a "
                   ".yml file of your own (repeatable).")
@click.option("--store", default=None,
              help="Store to answer from, as for ask: PATH.json | faiss:PATH[#INDEX] | pgvector:postgresql://…[#TABLE] "
                   "| qdrant:PATH|URL[#COLLECTION]. Default: the embedded demo corpus.")
@click.option("--llm", default=models.EMBEDDED_LLM, show_default=True,
              help="Chat model: embedded:…, a .gguf path, openai:http://host:port/v1[#model], hf:<id or dir>.")
@click.option("--embedder", default=models.EMBEDDED_EMBEDDER, show_default=True)
@click.option("--scorer", default=None, help="Cross-encoder for s(q, e); default: embedder cosine.")
@click.option("--device", default=None)
@click.option("--max-tokens", default=256, show_default=True, type=IntRange(1, 32768))
@click.option("--mock", is_flag=True, help="Use haystack_cfrag.testing.MockChatGenerator instead of the LLM.")
@click.option("--mock-failure-rate", default=0.0, show_default=True, type=FloatRange(),
              help="Share of mock calls that fail.")
@click.option("--mock-delay", default=0.0, show_default=True, type=FloatRange(),
              help="Seconds per mock call.")
@click.option("--mock-seed", default=0, show_default=True, type=IntRange(min=0))
@click.option("--mcp", is_flag=True, help="Also run Hayhooks' MCP server (pip install 'hayhooks[mcp]').")
@click.option("--mcp-port", default=1417, show_default=True, type=IntRange(1, 65535))
@click.option("--deploy-dir", type=click.Path(path_type=Path), default=None,
              help="Where to write the deploy directory: a new or empty folder, or one cfrag serve made "
                   "(never emptied). Default: a temporary folder, removed on exit.")
@click.option("--cors-origin", "cors_origins", multiple=True, metavar="ORIGIN",
              help="Let web pages of this origin (scheme://host[:port]) call the server (repeatable). Default: none.")
@click.option("--allow-deploy", is_flag=True,
              help="Keep Hayhooks' deploy/undeploy routes and MCP tools (they run code sent to them); "
                   "needs CFRAG_API_KEY.")
def serve(host: str, port: int, pipelines: tuple[str, ...], yaml_pipelines: tuple[str, ...], store: str | None,
          llm: str, embedder: str, scorer: str | None, device: str | None, max_tokens: int, mock: bool,
          mock_failure_rate: float, mock_delay: float, mock_seed: int, mcp: bool, mcp_port: int,
          deploy_dir: Path | None, cors_origins: tuple[str, ...], allow_deploy: bool) -> None:
    """Serve CF-RAG with Hayhooks: POST /<pipeline>/run, /v1/chat/completions, and MCP with --mcp.

    Set CFRAG_API_KEY to require `Authorization: Bearer <key>` on every route.
    """
    from haystack_cfrag.serving.app import API_KEY_ENV  # noqa: PLC0415
    from haystack_cfrag.serving.deploy import (  # noqa: PLC0415
        DeployDirError,
        check_deploy_dir,
        make_run_folder,
        remove_stale_run_folders,
        write_deploy_dir,
        yaml_deploy_name,
    )
    from haystack_cfrag.serving.middleware import LOOPBACK_HOSTS  # noqa: PLC0415
    from haystack_cfrag.serving.service import ServingConfig  # noqa: PLC0415

    if not 0.0 <= mock_failure_rate <= 1.0:
        raise click.BadParameter("must be in [0, 1]", param_hint="--mock-failure-rate")
    if not 0.0 <= mock_delay <= 60.0:
        raise click.BadParameter("must be in [0, 60]", param_hint="--mock-delay")
    yaml_names = []
    for item in yaml_pipelines:
        try:
            yaml_names.append(yaml_deploy_name(item))
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--yaml") from exc
    if len(set(yaml_names)) < len(yaml_names):
        raise click.BadParameter("two YAML pipelines would be served under one name", param_hint="--yaml")
    if store is not None:
        spec = check_store_spec(store, create=False)
        if yaml_pipelines and not spec.store_kind.native:
            raise click.BadParameter(f"--yaml pipelines read the in-memory store; serve a {spec.kind}: store through "
                                     "the wrappers (--pipeline) only", param_hint="--store")
    if not mock:
        check_model_spec(llm, "--llm")
    check_model_spec(embedder, "--embedder")
    for origin in cors_origins:
        if not ORIGIN.fullmatch(origin):
            raise click.BadParameter(f"'{origin}' is not an origin: use scheme://host[:port], e.g. "
                                     "https://ui.example:8080 (no path, no '*')", param_hint="--cors-origin")
    if allow_deploy and not os.environ.get(API_KEY_ENV):
        raise click.UsageError(f"--allow-deploy needs {API_KEY_ENV} (a token every request must carry): "
                               "the deploy routes run the code sent to them.")
    if host not in LOOPBACK_HOSTS and not os.environ.get(API_KEY_ENV):
        click.echo(f"[serve] warning: listening on {host} without {API_KEY_ENV}: anyone who reaches the port runs "
                   "the pipelines, and any Host header is accepted (set a token, or serve on 127.0.0.1)", err=True)
    if mcp and mcp_port == port:
        raise click.BadParameter(f"the REST server already listens on {port}", param_hint="--mcp-port")
    if deploy_dir is not None:
        try:
            check_deploy_dir(deploy_dir)
        except DeployDirError as exc:
            raise click.BadParameter(str(exc), param_hint="--deploy-dir") from exc

    env = server_env(llm=llm, embedder=embedder, scorer=scorer, store=store, device=device, max_tokens=max_tokens,
                     mock=mock, mock_failure_rate=mock_failure_rate, mock_delay=mock_delay, mock_seed=mock_seed,
                     pipelines=tuple(pipelines))
    config = ServingConfig.from_env(env)
    if deploy_dir is None:
        for stale in remove_stale_run_folders():
            click.echo(f"[serve] removed {stale}: the deploy folder of a killed cfrag serve", err=True)
    made = None if deploy_dir is not None else make_run_folder()
    target = deploy_dir or made / "pipelines"
    try:
        write_deploy_dir(target, config, wrappers=list(pipelines), yaml_pipelines=list(yaml_pipelines))
        click.echo(f"[serve] deploy dir {target}: "
                   f"{', '.join([*pipelines, *yaml_names])}", err=True)
        common = ["--host", host, "--pipelines-dir", str(target)] + (["--allow-deploy"] if allow_deploy else [])
        commands = [[*SERVER, "rest", "--port", str(port), *common,
                     *(a for origin in cors_origins for a in ("--cors-origin", origin))]]
        if mcp:
            commands.append([*SERVER, "mcp", "--port", str(mcp_port), *common])
        code = run_children(commands, env)
    finally:
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)
    sys.exit(code)


def run_children(commands: list[list[str]], env: dict[str, str]) -> int:
    """Start the commands and return when the first exits (the rest are stopped).

    The children run in their own process group: a terminal's Ctrl-C reaches only this process, which stops them
    with SIGTERM and then raises KeyboardInterrupt (exit 130); SIGTERM and SIGHUP stop them the same way and return
    (the deploy folder removed). On Linux each child gets SIGTERM when this process dies (`PR_SET_PDEATHSIG`): a
    killed `cfrag serve` leaves no server on the port, and the next removes its folder (`remove_stale_run_folders`).
    """
    children: list[subprocess.Popen[bytes]] = []
    interrupted: list[int] = []

    def stop(signum: int, _frame: Any) -> None:
        if signum == signal.SIGINT:
            interrupted.append(signum)
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)

    handled = (signal.SIGINT, signal.SIGTERM, *((signal.SIGHUP,) if hasattr(signal, "SIGHUP") else ()))
    previous = {s: signal.signal(s, stop) for s in handled}  # before any child starts
    die_with_parent = parent_death_signal()
    try:
        for cmd in commands:
            if interrupted:
                break
            children.append(subprocess.Popen(cmd, env=env, process_group=0,  # noqa: S603
                                             preexec_fn=die_with_parent))  # noqa: PLW1509
        while True:
            if interrupted:  # the finally below stops and waits for every child
                raise KeyboardInterrupt
            for child in children:
                try:
                    code = child.wait(timeout=0.5)
                except subprocess.TimeoutExpired:
                    continue
                if interrupted:
                    raise KeyboardInterrupt
                return code
    finally:
        for child in children:
            if child.poll() is None:
                child.terminate()
                try:
                    child.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    child.kill()
        for s, handler in previous.items():
            signal.signal(s, handler)


PR_SET_PDEATHSIG = 1


def parent_death_signal() -> Callable[[], None] | None:
    """A `preexec_fn` that has the kernel send the child SIGTERM when this process dies (Linux); else None. libc is
    loaded before the fork; a child whose parent died before it asked exits at once."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        if prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0 or os.getppid() != parent:
            os._exit(1)

    return preexec
