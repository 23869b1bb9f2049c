"""The shipped pipelines, in one place: what the CLI, the runtime, the evaluation and the server know of them.

Each entry names a YAML file of the top-level `pipelines/` folder (shipped in the wheel as
`haystack_cfrag/pipelines/`), its method family, what it is, the family's parameter table
(`haystack_cfrag.cfrag.parameters`: which component and init parameter each tunable sets, its range)
and where it takes part: served by `cfrag serve`, run under injection by `cfrag eval --inject`,
or the baseline of every comparison. Nothing above the components names a pipeline or a node:
they read this registry, and the runtime reads a run's answer from its declared output sockets
(`answer`/`trace`, or a `GeneratedAnswer` list; see `haystack_cfrag.runtime.read_outputs`).

Adding a method is: its subpackage, its YAML in `pipelines/`, and one entry here.

    >>> from haystack_cfrag.registry import REGISTRY, served_pipelines
    >>> REGISTRY["cf_rag"].family, "cf_rag" in served_pipelines()
    ('cf_rag', True)
    >>> REGISTRY["standard_rag"].path.name
    'standard_rag.yml'
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from haystack_cfrag.baseline.parameters import HYBRID_PARAMETERS, ORDER_PARAMETERS, STANDARD_PARAMETERS
from haystack_cfrag.causal_rag.parameters import PARAMETERS as CAUSAL_RAG_PARAMETERS
from haystack_cfrag.cdf_rag.parameters import GROUNDED_LITE_PARAMETERS, GROUNDED_PARAMETERS
from haystack_cfrag.cdf_rag.parameters import PARAMETERS as CDF_RAG_PARAMETERS
from haystack_cfrag.cer.parameters import PARAMETERS as CER_PARAMETERS
from haystack_cfrag.cfrag.parameters import PARAMETERS, Parameter
from haystack_cfrag.pipelines import pipeline_path

BASELINE = "standard_rag"
"""The pipeline every comparison measures against (standard RAG: top-k retrieval, one generation)."""


CF_RAG_API = (
    "Answer a question with Counterfactual RAG: robust to related but non-decisive evidence.\n\n"
    "Writes counterfactual questions, retrieves evidence for all of them, drafts one answer per\n"
    "evidence stratum and picks the draft whose evidence is coherent and causally decisive."
)


@dataclass(frozen=True)
class ShippedPipeline:
    """One shipped pipeline: its name (= its YAML file's stem), family, description and roles."""

    name: str
    family: str
    description: str
    parameters: Mapping[str, Parameter] = field(default_factory=dict)
    served: bool = False
    injection: bool = False
    api_description: str = ""
    """What the served `/run` route and MCP tool say the pipeline does (default: `description`)."""
    indexing: bool = False
    """An index-time pipeline (documents in, no answer): never asked, evaluated or served."""
    control: str = ""
    """A cheap control every method is read beside: "retrieval" (what a Haystack user would try first: standard
    RAG, one passage more, hybrid retrieval) or "order" (the same passages reordered: the reader's order noise)."""

    @property
    def request_parameters(self) -> tuple[str, ...]:
        """The parameters a request may set (run-time inputs of the pipeline's components)."""
        return tuple(name for name, p in self.parameters.items() if p.per_request)

    @property
    def path(self) -> Path:
        """The YAML file (the installed package's copy, or the checkout's `pipelines/`)."""
        return pipeline_path(self.name)


REGISTRY: dict[str, ShippedPipeline] = {
    p.name: p
    for p in (
        ShippedPipeline("standard_rag", "baseline", "top-k retrieval -> one generation: the baseline of every "
                        "comparison (standard_rag[top_k=6]: one passage more)", STANDARD_PARAMETERS, served=True,
                        injection=True, control="retrieval", api_description=(
                            "Answer a question with standard RAG (top-k retrieval, one generation): the baseline "
                            "of CF-RAG.\n\nReturns the answer and the documents it was given (no trace: there is "
                            "no arbitration).")),
        ShippedPipeline("closed_book", "baseline", "the same LLM without retrieval"),
        ShippedPipeline("hybrid_rag", "baseline", "control: Haystack's hybrid, BM25 + embedding retrievers joined by "
                        "reciprocal rank fusion -> one generation", HYBRID_PARAMETERS, control="retrieval"),
        ShippedPipeline("order_rag", "baseline", "control: standard RAG's passages in another fixed order (reversed) -> "
                        "one generation: how many answers change from order alone", ORDER_PARAMETERS,
                        control="order"),
        ShippedPipeline("cf_rag", "cf_rag", "the default CF-RAG: standard RAG's answer as the baseline, "
                        "counterfactual challengers, a duel", PARAMETERS, served=True, injection=True,
                        api_description=CF_RAG_API),
        ShippedPipeline("cf_rag_fast", "cf_rag", "the same graph with fewer calls (N=0, M=1)", PARAMETERS,
                        served=True, injection=True, api_description=CF_RAG_API),
        ShippedPipeline("cf_rag_paper", "cf_rag", "the paper's configuration (docs/method.md, 'Two "
                        "configurations')", PARAMETERS),
        ShippedPipeline("cer", "cer", "standard RAG over a minimal sufficient evidence set of the top 5 "
                        "(docs/cer.md)", CER_PARAMETERS, served=True, api_description=(
                            "Answer a question with CER: the smallest set of the retrieved passages whose answer "
                            "the reader supports, then one generation over that set.\n\nReturns the answer, the "
                            "kept passages and the selector's trace (F̂ per step, pruned passages, necessity).")),
        ShippedPipeline("causal_rag", "causal_rag", "the question's k nearest graph nodes expanded s hops, summarised "
                        "in two calls, then an answer over the summary and the passages (docs/causal_rag.md)",
                        CAUSAL_RAG_PARAMETERS, served=True, api_description=(
                            "Answer a question with CausalRAG: a causal subgraph of the documents around the "
                            "question, its causal paths and summary, then one generation over the summary and "
                            "the passages.\n\nReturns the answer, the passages and the graph retriever's trace.")),
        ShippedPipeline("cdf_rag", "cdf_rag", "refine the question, retrieve on the dense and graph paths, answer, "
                        "then the causal-consistency and hallucination checks (docs/cdf_rag.md)", CDF_RAG_PARAMETERS,
                        served=True, api_description=(
                            "Answer a question with CDF-RAG: a refined question, dense and causal-graph retrieval "
                            "merged, one generation, then a causal-consistency check (one regeneration) and a "
                            "hallucination check (one rewrite).\n\nReturns the answer, the passages and each "
                            "check's score and decision.")),
        ShippedPipeline("grounded_rag", "cdf_rag", "standard RAG, then CDF-RAG's causal-consistency and hallucination "
                        "checks alone (docs/cdf_rag.md, 'Grounded standard RAG')", GROUNDED_PARAMETERS),
        ShippedPipeline("grounded_rag_lite", "cdf_rag", "standard RAG, then the hallucination check alone: no graph "
                        "to build (docs/cdf_rag.md, 'Grounded standard RAG')", GROUNDED_LITE_PARAMETERS),
        ShippedPipeline("causal_rag_indexing", "causal_rag", "index time: passages -> causal graph nodes and edges "
                        "(one extraction call per chunk, cached) -> the node store", indexing=True),
    )
}


def query_pipelines() -> tuple[str, ...]:
    """Names that answer questions (every entry but the index-time ones)."""
    return tuple(name for name, p in REGISTRY.items() if not p.indexing)


def served_pipelines() -> tuple[str, ...]:
    """Names `cfrag serve` and the service offer."""
    return tuple(name for name, p in REGISTRY.items() if p.served)


def injection_pipelines() -> tuple[str, ...]:
    """Names `cfrag eval --inject` runs by default."""
    return tuple(name for name, p in REGISTRY.items() if p.injection)


def parameters_of(name_or_path: str | Path) -> Mapping[str, Parameter]:
    """The parameter table of a shipped pipeline; a pipeline file of your own gets CF-RAG's table.

    A parameter applies only where the file has its component, so a table that names components
    a file lacks is harmless (the runtime and the checks skip them). A shipped pipeline named by
    its file (as the runtime does once it has resolved the name) gets its own family's table.

    >>> sorted(parameters_of(REGISTRY["cer"].path)) == sorted(parameters_of("cer")) == sorted(REGISTRY["cer"].parameters)
    True
    """
    path = Path(str(name_or_path))
    entry = REGISTRY.get(path.stem)
    if entry is not None and path.is_file() and path.resolve() != entry.path.resolve():
        entry = None  # a file of your own that shares a shipped name; the shipped file itself keeps its table
    return entry.parameters if entry is not None else PARAMETERS


TRACE_VIEWS = {"cf_rag": "haystack_cfrag.cfrag.trace", "cer": "haystack_cfrag.cer.trace",
               "cdf_rag": "haystack_cfrag.cdf_rag.trace"}
"""Each family's module that shows its trace (`decision_lines`, `format_trace`, `why_no_answer`)."""


def trace_view(name_or_path: str | Path) -> Any | None:
    """The trace module of a pipeline's family; a file of your own is read as CF-RAG's; None: no trace to show."""
    entry = REGISTRY.get(Path(str(name_or_path)).stem)
    family = entry.family if entry is not None else "cf_rag"
    return importlib.import_module(TRACE_VIEWS[family]) if family in TRACE_VIEWS else None


def controls() -> dict[str, str]:
    """Pipeline name -> control role ("retrieval" or "order"), for the reports' comparisons with the best control."""
    return {name: p.control for name, p in REGISTRY.items() if p.control}


def describe() -> str:
    """The shipped names with their descriptions, one per line (for `--help` texts)."""
    return "\n".join(f"{name}: {p.description}" for name, p in REGISTRY.items())


__all__ = ["BASELINE", "REGISTRY", "ShippedPipeline", "controls", "describe", "injection_pipelines", "parameters_of",
           "query_pipelines", "served_pipelines", "trace_view"]
