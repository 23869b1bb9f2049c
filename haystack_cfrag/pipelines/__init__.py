"""Where the shipped pipeline files are: found by name, from a wheel or from a checkout.

The one source is the repository's top-level `pipelines/` folder (flat YAML: hand it to
`hayhooks run --pipelines-dir pipelines`). The wheel ships the same files as
`haystack_cfrag/pipelines/*.yml` (hatchling's `force-include`, pyproject.toml); an editable
install has none there, so the checkout's folder is used. What each pipeline is, its family
and parameters: `haystack_cfrag.registry`.

The three CF-RAG files are written by hand; their components and connections are those of
`haystack_cfrag.cfrag.wiring`, which `CounterfactualRAG` builds from (tests/unit/cfrag/test_wiring.py checks).

Load one with `haystack_cfrag.load_pipeline("cf_rag")` (the allowlist check and `embedded:`
models included), or deploy the folder with stock Hayhooks (docs/serving.md):

    >>> from haystack_cfrag.pipelines import pipeline_path, shipped_pipelines
    >>> "cf_rag" in shipped_pipelines()
    True
    >>> pipeline_path("cf_rag").name
    'cf_rag.yml'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

_PACKAGED = Path(__file__).resolve().parent
_CHECKOUT = _PACKAGED.parents[1] / "pipelines"
PIPELINES_DIR = _PACKAGED if any(_PACKAGED.glob("*.yml")) or not _CHECKOUT.is_dir() else _CHECKOUT
"""The folder of the shipped YAML files: the installed package's, else the checkout's `pipelines/`."""


def shipped_pipelines() -> list[str]:
    """Names of the shipped pipeline files."""
    return sorted(p.stem for p in PIPELINES_DIR.glob("*.yml"))


def pipeline_path(name_or_path: str | Path) -> Path:
    """A shipped pipeline by name ("cf_rag", "cf_rag_fast", …) or any existing file path.

    :raises FileNotFoundError: neither a file nor a shipped name (the message lists the names).
    """
    path = Path(name_or_path)
    if path.is_file():
        return path
    shipped = PIPELINES_DIR / f"{name_or_path}.yml"
    if isinstance(name_or_path, str) and name_or_path in shipped_pipelines():
        return shipped
    raise FileNotFoundError(f"No pipeline file '{name_or_path}' (shipped: {shipped_pipelines()}).")


def read_yaml(path: Path) -> Any:
    """A YAML file's data, safely loaded (no Python objects): the package's one YAML parse (a pipeline, a gate).

    :raises ValueError: one line naming the file when it is not readable YAML.
    """
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: not a readable YAML file ({type(exc).__name__}).") from None


def read_pipeline(path: Path) -> dict[str, Any]:
    """The one parse of a pipeline file (`haystack_cfrag.registry.resolve` calls it once per file version):
    readable YAML, a mapping with a `components` mapping, each moved class's `type:` rewritten.

    :raises ValueError: one line naming the file and what is wrong with it.
    """
    data = read_yaml(path)
    if not isinstance(data, dict) or not isinstance(data.get("components"), dict):
        raise ValueError(f"{path}: not a Haystack pipeline file (no 'components' mapping).")
    return renamed_types(data)


# Type paths of YAML written before the family layout (0.1, issue #24) -> where the classes live now.
# Haystack 3.4's `default_from_dict` refuses a `type:` that is not the class's real import path, so
# a re-export could not keep such files loading; `read_pipeline` rewrites them (stock
# `Pipeline.loads` refuses them: write the new paths there).
_MOVED_MODULES = {
    ("components", "causal_arbitration_ranker"): "haystack_cfrag.cfrag.components.causal_arbitration_ranker",
    ("components", "counterfactual_query_expander"): "haystack_cfrag.cfrag.components.counterfactual_query_expander",
    ("components", "counterfactual_rag"): "haystack_cfrag.cfrag.components.counterfactual_rag",
    ("components", "embedding_deduplicator"): "haystack_cfrag.cfrag.components.embedding_deduplicator",
    ("components", "multi_query_retriever"): "haystack_cfrag.cfrag.components.multi_query_retriever",
    ("components", "parallel_draft_generator"): "haystack_cfrag.cfrag.components.parallel_draft_generator",
    ("components", "spectral_stratifier"): "haystack_cfrag.cfrag.components.spectral_stratifier",
    ("components", "llama_cpp_logprobs"): "haystack_cfrag.adapters.llama_cpp_logprobs",
    ("components", "model_spec_text_embedder"): "haystack_cfrag.adapters.model_spec_text_embedder",
}
RENAMED_TYPES = {".".join(("haystack_cfrag", *old)): new for old, new in _MOVED_MODULES.items()}
"""Old module path of a shipped class -> its module now (applied to every `type:` a pipeline file names)."""


def renamed_types(data: Any) -> Any:
    """A copy of a pipeline dict with every `type:` of a moved class rewritten to its current path.

    >>> old = "haystack_cfrag." + "components.spectral_stratifier.SpectralStratifier"
    >>> renamed_types({"type": old})["type"]
    'haystack_cfrag.cfrag.components.spectral_stratifier.SpectralStratifier'
    """
    if isinstance(data, dict):
        out = {k: renamed_types(v) for k, v in data.items()}
        kind = out.get("type")
        if isinstance(kind, str):
            module, _, name = kind.rpartition(".")
            if module in RENAMED_TYPES:
                out["type"] = f"{RENAMED_TYPES[module]}.{name}"
        return out
    if isinstance(data, list):
        return [renamed_types(v) for v in data]
    return data


__all__ = ["PIPELINES_DIR", "RENAMED_TYPES", "pipeline_path", "read_pipeline", "renamed_types", "shipped_pipelines"]
