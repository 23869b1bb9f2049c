"""The deploy directory `cfrag serve` hands to Hayhooks: wrapper folders and deployable YAML files.

Wrapper folders (`<name>/pipeline_wrapper.py`) are copied from `haystack_cfrag/serving/pipelines`.
A shipped YAML file deployed as a Hayhooks YAML pipeline (`<name>_yaml.yml`) is the file as it
is — top-level `inputs`/`outputs` included — with three changes Hayhooks cannot make itself:
`embedded:` model names resolved to local paths (Hayhooks loads YAML with Haystack's
`Pipeline.loads`, which knows nothing of them), the chat generator replaced by the mock when
serving with the mock, and the in-memory document store pointed at the service's named index,
so that it reads the same documents as the wrappers.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from haystack_cfrag.components._common import serialize_component
from haystack_cfrag.models import resolve_embedded_models
from haystack_cfrag.serving.service import PIPELINES, ServingConfig

WRAPPERS_DIR = Path(__file__).resolve().parent / "pipelines"


def deployable_yaml(name: str, config: ServingConfig) -> str:
    """A shipped pipeline file as Hayhooks can deploy and run it in the served process."""
    from haystack_cfrag.runtime import pipeline_path  # noqa: PLC0415

    data = yaml.safe_load(pipeline_path(name).read_text(encoding="utf-8"))
    generator = serialize_component(config.mock_generator()) if config.generator == "mock" else None
    data = _rewrite(data, config, generator)
    data = resolve_embedded_models(data)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def _rewrite(data: Any, config: ServingConfig, generator: dict[str, Any] | None) -> Any:
    if isinstance(data, dict):
        kind = data.get("type") if isinstance(data.get("type"), str) else None
        if kind and "init_parameters" in data:
            if generator is not None and kind.endswith("ChatGenerator"):
                return generator
            if kind.endswith("TextEmbedder") and "model" in data["init_parameters"]:
                return {**data, "init_parameters": {**data["init_parameters"], "model": config.embedder}}
            if kind.endswith("InMemoryDocumentStore"):
                params = {**data["init_parameters"], "index": config.store_index}
                return {**data, "init_parameters": params}
        return {k: _rewrite(v, config, generator) for k, v in data.items()}
    if isinstance(data, list):
        return [_rewrite(v, config, generator) for v in data]
    return data


def write_deploy_dir(
    target: Path, config: ServingConfig, *, wrappers: list[str], yaml_pipelines: list[str] | None = None
) -> Path:
    """Fill `target` (emptied first) with the wrapper folders and YAML files to deploy."""
    for name in [*wrappers, *(yaml_pipelines or [])]:
        if name not in PIPELINES:
            raise ValueError(f"Unknown pipeline '{name}' (shipped: {', '.join(PIPELINES)}).")
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for name in wrappers:
        (target / name).mkdir()
        shutil.copy(WRAPPERS_DIR / name / "pipeline_wrapper.py", target / name / "pipeline_wrapper.py")
    for name in yaml_pipelines or []:
        (target / f"{name}_yaml.yml").write_text(deployable_yaml(name, config), encoding="utf-8")
    return target
