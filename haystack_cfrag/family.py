"""What a method family declares, in one object: the layers above the families read only this.

Each family package exports one `Family` (`FAMILY`): its parameters, which a request may set, its pipelines,
how to `read` and `record` its trace, what it needs at index time (`prepare_store`), and optionally `Commands`
and `Sweeps`. The registry collects them; nothing above branches on a family's name.

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
from typing import Any, Protocol

from haystack_cfrag.common.parameters import Parameter


@dataclass(frozen=True)
class Cascade:
    """What a cascade's file holds besides standard RAG, the gate, router and joiner: the method's own nodes
    (`cascade.contract.composed`) but for `escalation`."""

    method: str | None = None
    """The method's pipeline (None: the family's first pipeline)."""
    prefix: str | None = None
    """The prefix of a method node whose name standard RAG uses (None: `method` less `_rag`)."""
    shared: tuple[str, ...] = ()
    """The method's nodes that are standard RAG's own."""
    escalation: Mapping[str, Any] = field(default_factory=dict)
    """What the escalation sets on the method's nodes, as dotted parameter overrides."""
    routing: Mapping[str, str] = field(default_factory=dict)
    """Routers of the cascade's own on the gate's rule (`decided_by`): node name -> the method's socket it sets."""


@dataclass(frozen=True)
class Entry:
    """One pipeline of a family: its YAML (a shipped name, or `path`), what it is, and where it takes part."""

    name: str
    description: str
    parameters: tuple[str, ...] | Mapping[str, Parameter] | None = None
    """The names of the family's table this pipeline has (None: all), or a table of its own."""
    injection: bool = False
    """Run by `cfrag eval --inject` by default."""
    api_description: str = ""
    """What the served `/run` route and MCP tool say the pipeline does (default: `description`)."""
    indexing: bool = False
    """An index-time pipeline (documents in, no answer): never asked, evaluated or served."""
    default_system: bool = False
    """In `cfrag eval`'s default systems."""
    control: str = ""
    """A cheap control every method is read beside: "retrieval" or "order" (the same passages reordered)."""
    path: Path | None = None
    """The YAML file when it is not a shipped one (a family of your own: `registry.register_family`)."""
    cascade: bool | Cascade = False
    """A cascade (`*_auto`; True: `Cascade()`): standard RAG, then the method where the gate opens."""


@dataclass(frozen=True)
class Reading:
    """What a family reads of one run for the served answer: warnings, alternatives, or a `failure` (503)."""

    warnings: list[str] = field(default_factory=list)
    alternatives: list[dict[str, Any]] = field(default_factory=list)
    failure: str | None = None


def read_degradations(trace: Any, outputs: Mapping[str, Any], answer: str, values: Mapping[str, Any]) -> Reading:
    """The default reading: every degradation the run reported, once each, as warnings.

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


class StoreWrites(Protocol):
    """What `cfrag index` asks of what a family stores beside a store while it writes the store."""

    def check_graph_writable(self, spec: Any) -> None:
        """ValueError (one line) where what is beside `spec` cannot be written (before a model loads)."""

    def prepare_graph(self, spec: Any) -> None:
        """Mark it as being written (a kill from then on leaves it marked, never silently stale)."""

    def mark_stale(self, spec: Any) -> bool:
        """Mark it stale (the store's passages changed without it); whether there was one to mark."""

    def forget_marks(self) -> None:
        """Forget the marks this process made (the command is over)."""


class StorePreparation(Protocol):
    """What a family needs built over the store before it answers (CausalRAG's graph), once per store: `load`ed or
    `build`t when `needed_by` a pipeline, `attach`ed, `release`d; `cfrag index --graph` runs `index`, `summarize`.
    """

    what: str
    extractors: tuple[str, ...]
    """The names of what can build it (`--extractor`, `--graph-extractor`)."""
    default_extractor: str
    parse_only: tuple[str, ...]
    """Those of `extractors` that need no LLM."""
    scale_out: tuple[str, ...]
    """Those of `extractors` that `--engine ray` can run."""

    def needed_by(self, data: Mapping[str, Any]) -> bool:
        """Whether a pipeline's dict has a part that `attach` points at the handle."""

    def load(self, store_spec: Any) -> Any | None:
        """What `cfrag index --graph` stored beside that store, opened; None: none stored (then `build`)."""

    def build(self, passages: list[Any], *, chat_generator: Any, text_embedder: Any, document_embedder: Any,
              cache_dir: Any, graph_extractor: str) -> tuple[Any, dict[str, Any]]:
        """(the handle, what building it cost) over `passages`."""

    def attach(self, pipeline: Any, handle_of: Callable[[], Any]) -> None:
        """Point the pipeline's parts that read it at `handle_of()`."""

    def release(self, handle: Any) -> None:
        """Free or close a handle."""

    def index(self, passages: list[Any], **kwargs: Any) -> dict[str, Any]:
        """`cfrag index --graph`: build ahead of time (`chat_generator`, `text_embedder`, `document_embedder`,
        `cache_dir`, `progress`, `extractor`, `engine`, `ray_address`, `store_spec`) → stats."""

    def summarize(self, stats: dict[str, Any]) -> str:
        """One line of what `index` did, from its stats."""

    def writes(self) -> StoreWrites:
        """What it stores beside a store, as `cfrag index` keeps it consistent (imported on first call; a
        preparation that stores nothing beside a store sets `writes = None`)."""


def no_record(trace: Any) -> dict[str, Any]:
    """The default `Family.record`: nothing of the trace beyond the answer, its evidence and its cost."""
    return {}


@dataclass(frozen=True)
class Commands:
    """What a family adds to the `cfrag` command beyond its parameters (every field optional)."""

    view: Any = None
    """The trace view of `cfrag ask/compare` (`format_trace`, `decision_lines`, `why_no_answer`), or None."""
    options: Mapping[str, str] = field(default_factory=dict)
    """Short `cfrag ask/compare` options → parameter (CF-RAG's -N -K -M --lambda --seed); any takes --param."""
    bench: Callable[[tuple[int, ...], float | None, str], str] | None = None
    """`cfrag bench`: `bench(candidate counts, seconds of one generation or None, LLM spec)` → a table, or None."""


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
    """The served answer's `Reading`, from (trace, raw outputs, answer, effective parameter values)."""
    record: Callable[[Any], Mapping[str, Any]] = no_record
    """What an evaluation record keeps of a trace: fields merged as they are, and `candidates` (for the oracle)."""
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


__all__ = ["Cascade", "Commands", "Entry", "Family", "Reading", "StorePreparation", "StoreWrites", "Sweeps",
           "no_record", "read_degradations"]
