"""The shipped pipeline files (package data), found by name after a plain `pip install`.

| name | what it is |
|---|---|
| `cf_rag` | the default CF-RAG: standard RAG's answer as the baseline, counterfactual challengers |
| `cf_rag_fast` | the same graph with fewer calls (N=0, M=1) |
| `cf_rag_paper` | the paper's configuration (docs/method.md, "Two configurations") |
| `standard_rag` | top-k retrieval → one generation: the baseline of every comparison |
| `closed_book` | the same LLM without retrieval |

The three CF-RAG files are written by hand; their components and connections are those of
`haystack_cfrag.graph`, which `CounterfactualRAG` builds from (tests/unit/test_graph.py checks).

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

PIPELINES_DIR = Path(__file__).resolve().parent


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
