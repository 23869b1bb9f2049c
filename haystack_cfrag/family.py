"""What a method family declares, in one object: the layers above the families read only this.

Each family package exports one `Family` (its `family.py` module's `FAMILY`): its parameters
with their ranges, which of them a request may set, its shipped pipelines, how to read its
trace (the served answer's warnings, alternatives, degradations: `read`; what an evaluation record
keeps: `record`), what it needs at index time (`prepare_store`), and what only some families add:
`Commands` (the CLI's trace view, short options, a micro-benchmark) and `Sweeps` (eval's short
names, sweep axes, ablations). The
registry (`haystack_cfrag.registry`) collects them; the runtime, CLI, server and evaluation
branch on no family's name. This module imports no family.

    >>> from haystack_cfrag.common.parameters import Parameter
    >>> toy = Family(name="toy", parameters={"k": Parameter("k", "retriever", "top_k", int, low=1)},
    ...              pipelines=(Entry("toy_rag", "top-k then one generation"),), request_parameters=("k",))
    >>> toy.entry("toy_rag").indexing, toy.read(None, {}, "an answer", {}), toy.record({"steps": []})
    (False, Reading(warnings=[], alternatives=[], failure=None), {})
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from haystack_cfrag.common.parameters import Parameter


@dataclass(frozen=True)
class Entry:
    """One pipeline of a family: its YAML (a shipped name, or `path`), what it is, and where it takes part."""

    name: str
    description: str
    parameters: tuple[str, ...] | Mapping[str, Parameter] | None = None
    """The names of the family's table this pipeline has (None: all of them), or a table of its own
    (a parameter that sets another component here: `hybrid_rag`'s `top_k` is its joiner's)."""
    injection: bool = False
    """Run by `cfrag eval --inject` by default."""
    api_description: str = ""
    """What the served `/run` route and MCP tool say the pipeline does (default: `description`)."""
    indexing: bool = False
    """An index-time pipeline (documents in, no answer): never asked, evaluated or served."""
    default_system: bool = False
    """In `cfrag eval`'s default systems."""
    control: str = ""
    """A cheap control every method is read beside: "retrieval" (what a Haystack user would try first: standard
    RAG, one passage more, hybrid retrieval) or "order" (the same passages reordered: the reader's order noise)."""
    path: Path | None = None
    """The YAML file when it is not a shipped one (a family of your own: `registry.register_family`)."""
    cascade: bool = False
    """A cascade (`*_auto`): standard RAG, then the family's method where the escalation gate opens; its table
    adds the gate's parameters (`haystack_cfrag.cascade.parameters`) to the family's."""


@dataclass(frozen=True)
class Reading:
    """What a family reads of one run for the served answer: warnings (degraded), alternatives, or a failure.

    `failure` (a reason): the run has no answer to degrade to (HTTP 503).
    """

    warnings: list[str] = field(default_factory=list)
    alternatives: list[dict[str, Any]] = field(default_factory=list)
    failure: str | None = None


def read_degradations(trace: Any, outputs: Mapping[str, Any], answer: str, values: Mapping[str, Any]) -> Reading:
    """The default reading: no answer, and every degradation the run reported (a `degradations` output
    socket, or a trace's or a stage's trace's list), once each, as warnings.

    >>> read_degradations({"refiner": {"degradations": [{"stage": "refine", "reason": "timeout"}]}}, {}, "x", {})
    Reading(warnings=['refine: timeout'], alternatives=[], failure=None)
    """
    warnings = [] if answer else ["no answer: the model's reply held no answer or no evidence was found"]
    found: list[Any] = []
    for holder in [trace, *(trace.values() if isinstance(trace, dict) else ()), *outputs.values()]:
        if isinstance(holder, dict) and isinstance(holder.get("degradations"), list):
            found += holder["degradations"]
    for d in found:
        text = f"{d.get('stage', 'stage')}: {d.get('reason', 'degraded')}" if isinstance(d, dict) else str(d)
        if text not in warnings:
            warnings.append(text)
    return Reading(warnings=warnings)


@dataclass(frozen=True)
class StorePreparation:
    """What a family needs built over the store before it answers (CausalRAG's graph), built once per store.

    The runtime calls `build(passages, chat_generator=…, text_embedder=…, cache_dir=…,
    graph_extractor=…)` → (handle, stats) the first time a pipeline of the family meets a store,
    `attach(pipeline, handle_of)` on every pipeline it builds or re-points (`handle_of()` builds on
    first call, so a pipeline that needs nothing of it builds nothing), and `release(handle)` when
    it moves to another store.
    """

    build: Callable[..., tuple[Any, dict[str, Any]]]
    attach: Callable[[Any, Callable[[], Any]], None]
    release: Callable[[Any], None]
    what: str = "the index-time parts"
    load: Callable[[Any], Any | None] | None = None
    """`load(store_spec)` → the handle `cfrag index --graph` stored beside that store, or None (then `build`)."""
    needed_by: Callable[[Any], bool] = lambda data: True  # noqa: E731
    """Whether a pipeline's dict has a part that `attach` points at the handle (what `Runtime.prepare_stores` asks)."""
    index: Callable[..., dict[str, Any]] | None = None
    """`cfrag index --graph`: build ahead of time into the cache `build` reads, `index(passages, *, chat_generator,
    cache_dir, progress, extractor, engine, ray_address)` → stats (None: nothing to build ahead)."""
    summarize: Callable[[dict[str, Any]], str] = str
    """One line of what `index` did, from its stats."""
    extractors: tuple[str, ...] = ()
    """The names of what can build it (`--extractor`, `--graph-extractor`)."""
    default_extractor: str = ""
    parse_only: tuple[str, ...] = ()
    """Those of `extractors` that need no LLM."""
    scale_out: tuple[str, ...] = ()
    """Those of `extractors` that `--engine ray` can run."""
    writes: Callable[[], Any] | None = None
    """What `cfrag index` asks of what it stores beside a store, returned on first call (imported then): an object with
    `check_graph_writable(spec)`, `prepare_graph(spec)`, `mark_stale(spec) -> bool` and `forget_marks()`."""


def no_record(trace: Any) -> dict[str, Any]:
    """The default `Family.record`: nothing of the trace beyond the answer, its evidence and its cost."""
    return {}


@dataclass(frozen=True)
class Commands:
    """What a family adds to the `cfrag` command beyond its parameters (every field optional)."""

    view: Any = None
    """The trace view of `cfrag ask/compare`: an object with `format_trace`, `decision_lines`, `why_no_answer`
    (None: no trace to show)."""
    options: Mapping[str, str] = field(default_factory=dict)
    """Short `cfrag ask/compare` options → parameter (CF-RAG's -N -K -M --lambda --seed); any takes --param."""
    bench: Callable[[tuple[int, ...], float | None, str], str] | None = None
    """`cfrag bench`: a micro-benchmark of its non-generative stages, `bench(candidate counts, seconds of one
    generation or None to time one with the LLM spec, LLM spec)` → the table to print (None: none)."""


@dataclass(frozen=True)
class Sweeps:
    """What `cfrag eval` may vary of a family beyond its parameter table (every field optional)."""

    names: Mapping[str, str] = field(default_factory=dict)
    """Short names an eval system or sweep may use for a parameter (`lambda` → `causal_weight`)."""
    axes: tuple[str, ...] | None = None
    """The parameters `cfrag eval --sweep FAMILY:NAME=…` sweeps (None: every one)."""
    ablations: Mapping[str, tuple[str, Mapping[str, Any]]] = field(default_factory=dict)
    """Eval system names that are a pipeline with fixed values (`cf_rag_n0` → cf_rag with N = 0)."""
    defaults: tuple[str, ...] = ()
    """Those of `ablations` in `cfrag eval`'s default systems (after every family's default pipelines)."""


@dataclass(frozen=True)
class Family:
    """One method family, as the layers above it see it (see the module docstring)."""

    name: str
    parameters: Mapping[str, Parameter]
    pipelines: tuple[Entry, ...]
    request_parameters: tuple[str, ...] = ()
    """What a served request (and `Runtime.ask`'s per-question values) may set; the rest are the CLI's and eval's."""
    read: Callable[[Any, Mapping[str, Any], str, Mapping[str, Any]], Reading] = read_degradations
    """The served answer's warnings, alternatives and failure, from (trace, raw outputs, answer, the
    parameters' effective values: the request's, else the pipeline file's)."""
    record: Callable[[Any], Mapping[str, Any]] = no_record
    """What an evaluation record keeps of a (non-empty) trace: fields merged into the record as they are, and
    `candidates` (every scored candidate answer: `index`, `answer`, …), which the evaluation scores for the
    oracle over candidates. The evaluation names none of a family's keys."""
    by_stage: bool = False
    """Read the trace as {component: trace} even when one stage left one."""
    commands: Commands = Commands()
    """Its trace view, short options and micro-benchmark for the `cfrag` command."""
    sweeps: Sweeps = Sweeps()
    """Short names, sweep axes and ablations for `cfrag eval`."""
    borrowed: Mapping[str, str] = field(default_factory=dict)
    """Parameters of another family's component this family's YAML names: parameter → that family."""
    prepare_store: StorePreparation | str | None = None
    """What it needs at index time; a string names the family whose preparation its YAML uses."""
    components: tuple[str, ...] = ()
    """Module prefixes of its components: a YAML of your own is read as the family whose components it has most."""

    def entry(self, name: str) -> Entry:
        """Its pipeline `name`; KeyError naming its pipelines otherwise."""
        for e in self.pipelines:
            if e.name == name:
                return e
        raise KeyError(f"Family '{self.name}' has no pipeline '{name}' (it has {[e.name for e in self.pipelines]}).")

    def axes(self) -> tuple[str, ...]:
        """What `--sweep` may sweep, short names included."""
        names = tuple(self.parameters) if self.sweeps.axes is None else self.sweeps.axes
        return (*names, *(short for short, name in self.sweeps.names.items() if name in names))


__all__ = ["Commands", "Entry", "Family", "Reading", "StorePreparation", "Sweeps", "no_record", "read_degradations"]
