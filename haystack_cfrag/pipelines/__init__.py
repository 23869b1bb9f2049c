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


__all__ = ["PIPELINES_DIR", "pipeline_path", "shipped_pipelines"]
