"""`cfrag serve`: CF-RAG over HTTP with Hayhooks (REST `/<pipeline>/run`, OpenAI chat, optional MCP).

    cfrag serve                                   # cf_rag on 127.0.0.1:1416, embedded models
    cfrag serve --pipeline cf_rag_fast --yaml cf_rag_fast --port 8000
    cfrag serve --mock --mock-failure-rate 0.1    # the mock generator: tests and load runs
    cfrag serve --mcp --mcp-port 1417             # also the MCP server (needs hayhooks[mcp])

It writes a deploy directory (wrapper folders, and with `--yaml` the shipped YAML files made
deployable) and runs `hayhooks run` on it with sequential start-up deploys and Haystack's
deserialisation allowlist extended by `haystack_cfrag` for that process only. Models, store and
generator reach the server process as `CFRAG_*` environment variables (docs/serving.md).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import click

from haystack_cfrag import models

SERVED = ("cf_rag", "cf_rag_fast", "standard_rag")
# hayhooks' __main__ is empty: call its console-script entry point
HAYHOOKS = [sys.executable, "-c", "import sys; from hayhooks.cli import hayhooks_cli; sys.exit(hayhooks_cli())"]


def server_env(
    base: dict[str, str] | None = None,
    *,
    llm: str | None = None,
    embedder: str | None = None,
    scorer: str | None = None,
    store: Path | None = None,
    device: str | None = None,
    max_tokens: int | None = None,
    mock: bool = False,
    mock_failure_rate: float = 0.0,
    mock_delay: float = 0.0,
    mock_seed: int = 0,
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
                       ("CFRAG_STORE", str(store) if store else None), ("CFRAG_DEVICE", device),
                       ("CFRAG_MAX_TOKENS", str(max_tokens) if max_tokens else None)):
        if value:
            env[key] = value
    return env


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=1416, show_default=True, type=int)
@click.option("--pipeline", "pipelines", multiple=True, type=click.Choice(SERVED), default=("cf_rag",),
              show_default=True, help="Pipelines served through the CF-RAG wrapper (repeatable).")
@click.option("--yaml", "yaml_pipelines", multiple=True, type=click.Choice(SERVED),
              help="Also deploy this shipped YAML file as a Hayhooks YAML pipeline, '<name>_yaml' (repeatable).")
@click.option("--store", type=click.Path(path_type=Path), default=None,
              help="Saved document store (JSON). Default: the embedded demo corpus.")
@click.option("--llm", default=models.EMBEDDED_LLM, show_default=True,
              help="Chat model: embedded:…, a .gguf path, openai:http://host:port/v1[#model], hf:<id or dir>.")
@click.option("--embedder", default=models.EMBEDDED_EMBEDDER, show_default=True)
@click.option("--scorer", default=None, help="Cross-encoder for s(q, e); default: embedder cosine.")
@click.option("--device", default=None)
@click.option("--max-tokens", default=256, show_default=True)
@click.option("--mock", is_flag=True, help="Use haystack_cfrag.testing.MockChatGenerator instead of the LLM.")
@click.option("--mock-failure-rate", default=0.0, show_default=True, type=float, help="Share of mock calls that fail.")
@click.option("--mock-delay", default=0.0, show_default=True, type=float, help="Seconds per mock call.")
@click.option("--mock-seed", default=0, show_default=True, type=int)
@click.option("--mcp", is_flag=True, help="Also run Hayhooks' MCP server (pip install 'hayhooks[mcp]').")
@click.option("--mcp-port", default=1417, show_default=True, type=int)
@click.option("--deploy-dir", type=click.Path(path_type=Path), default=None,
              help="Where to write the deploy directory (emptied). Default: a temporary folder.")
def serve(host: str, port: int, pipelines: tuple[str, ...], yaml_pipelines: tuple[str, ...], store: Path | None,
          llm: str, embedder: str, scorer: str | None, device: str | None, max_tokens: int, mock: bool,
          mock_failure_rate: float, mock_delay: float, mock_seed: int, mcp: bool, mcp_port: int,
          deploy_dir: Path | None) -> None:
    """Serve CF-RAG with Hayhooks: POST /<pipeline>/run, /v1/chat/completions, and MCP with --mcp."""
    from haystack_cfrag.serving.deploy import write_deploy_dir  # noqa: PLC0415
    from haystack_cfrag.serving.service import ServingConfig  # noqa: PLC0415

    if not 0.0 <= mock_failure_rate <= 1.0:
        raise click.BadParameter("must be in [0, 1]", param_hint="--mock-failure-rate")
    if not 0.0 <= mock_delay <= 60.0:
        raise click.BadParameter("must be in [0, 60]", param_hint="--mock-delay")
    if store is not None and not store.exists():
        raise click.BadParameter(f"no such file: {store}", param_hint="--store")
    env = server_env(llm=llm, embedder=embedder, scorer=scorer, store=store, device=device, max_tokens=max_tokens,
                     mock=mock, mock_failure_rate=mock_failure_rate, mock_delay=mock_delay, mock_seed=mock_seed)
    config = ServingConfig.from_env(env)
    target = deploy_dir or Path(tempfile.mkdtemp(prefix="cfrag-serve-")) / "pipelines"
    write_deploy_dir(target, config, wrappers=list(pipelines), yaml_pipelines=list(yaml_pipelines))
    click.echo(f"[serve] deploy dir {target}: {', '.join([*pipelines, *(f'{n}_yaml' for n in yaml_pipelines)])}",
               err=True)
    commands = [[*HAYHOOKS, "run", "--host", host, "--port", str(port),
                 "--pipelines-dir", str(target)]]
    if mcp:
        commands.append([*HAYHOOKS, "mcp", "run", "--host", host, "--port", str(mcp_port),
                         "--pipelines-dir", str(target)])
    sys.exit(run_children(commands, env))


def run_children(commands: list[list[str]], env: dict[str, str]) -> int:
    """Start the commands, forward SIGINT/SIGTERM to them, and return when the first exits (the rest are stopped)."""
    children = [subprocess.Popen(cmd, env=env) for cmd in commands]  # noqa: S603

    def stop(signum: int, _frame: Any) -> None:
        for child in children:
            if child.poll() is None:
                child.send_signal(signum)

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while True:
            for child in children:
                try:
                    code = child.wait(timeout=0.5)
                except subprocess.TimeoutExpired:
                    continue
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
