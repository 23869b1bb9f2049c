"""The method families and their pipelines, in one place: what the CLI, the runtime, the evaluation and the server know.

It collects each family's `Family` (`FAMILY_MODULES`, or `register_family`), lists the pipelines (`REGISTRY`)
and resolves a name or file once into a `Resolved` (path, YAML, inputs, outputs, family, table). Adding a method:
its package with a `family.py`, its YAML in `pipelines/`, its module in `FAMILY_MODULES` (docs/architecture.md).

    >>> from haystack_cfrag.registry import REGISTRY, resolve, served_pipelines
    >>> REGISTRY["cf_rag"].family, "cer" in served_pipelines()
    ('cf_rag', True)
    >>> REGISTRY["standard_rag"].path.name
    'standard_rag.yml'
    >>> resolve("cer").family.name, sorted(resolve("cer").inputs)
    ('cer', ['query'])
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from haystack_cfrag.cascade.parameters import GATE_PARAMETERS, GATE_SWEEP_NAMES
from haystack_cfrag.common.parameters import Parameter, ParameterError, check_parameters
from haystack_cfrag.family import Cascade, Entry, Family, StorePreparation
from haystack_cfrag.pipelines import OWN_FILES, pipeline_path, read_pipeline

BASELINE = "standard_rag"
"""The pipeline every comparison measures against (standard RAG: top-k retrieval, one generation)."""

FAMILY_MODULES = ("haystack_cfrag.baseline.family", "haystack_cfrag.cfrag.family", "haystack_cfrag.cer.family",
                  "haystack_cfrag.causal_rag.family", "haystack_cfrag.cdf_rag.family")
"""Where the shipped families declare themselves (each module's `FAMILY`), in the order they are listed."""

OWN_FILE_FAMILY = "baseline"
"""The family a pipeline file of your own is read as when it holds no family's component."""


@dataclass(frozen=True)
class ShippedPipeline:
    """One pipeline of a family: its name (= its YAML file's stem), family, description, table and roles."""

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
    default_system: bool = False
    file: Path | None = None
    control: str = ""
    """A cheap control every method is read beside: "retrieval" or "order" (`family.Entry.control`)."""
    cascade: Cascade | None = None
    """A cascade's declaration, its method and prefix filled in (`family.Cascade`); None: not a cascade."""

    @property
    def request_parameters(self) -> tuple[str, ...]:
        """The parameters a served request may set: the family's request parameters this pipeline has."""
        wanted = request_names(FAMILIES[self.family])
        return tuple(name for name in self.parameters if name in wanted)

    @property
    def request_table(self) -> dict[str, Parameter]:
        """The request parameters with their ranges (what the served request model is made of)."""
        return {name: self.parameters[name] for name in self.request_parameters}

    @property
    def path(self) -> Path:
        """The YAML file (the installed package's copy, or the checkout's `pipelines/`)."""
        return self.file if self.file is not None else pipeline_path(self.name)


FAMILIES: dict[str, Family] = {}
REGISTRY: dict[str, ShippedPipeline] = {}


def _table(family: Family, entry: Entry) -> Mapping[str, Parameter]:
    table = _method_table(family, entry)
    return {**table, **GATE_PARAMETERS} if entry.cascade else table


def _method_table(family: Family, entry: Entry) -> Mapping[str, Parameter]:
    if isinstance(entry.parameters, Mapping):
        return entry.parameters
    if entry.parameters is None and not family.borrowed:
        return family.parameters
    table = {**family.parameters, **{name: FAMILIES[owner].parameters[name] for name, owner in family.borrowed.items()}}
    return table if entry.parameters is None else {name: table[name] for name in entry.parameters}


def _cascade(family: Family, entry: Entry) -> Cascade | None:
    """The entry's cascade with its defaults filled in: the family's first pipeline, its name less `_rag`."""
    if not entry.cascade:
        return None
    declared = entry.cascade if isinstance(entry.cascade, Cascade) else Cascade()
    method = declared.method or family.pipelines[0].name
    return replace(declared, method=method, prefix=declared.prefix or method.removesuffix("_rag"))


def request_names(family: Family) -> tuple[str, ...]:
    """What a request may set on a pipeline of `family`: its request parameters, and a cascade's gate threshold."""
    return (*family.request_parameters, *GATE_PARAMETERS)


def register_family(family: Family) -> None:
    """Add a family and its pipelines (a family of your own: its entries name their YAML with `path`).

    :raises ValueError: a pipeline name another family already has.
    """
    for entry in family.pipelines:
        owner = REGISTRY.get(entry.name)
        if owner is not None and owner.family != family.name:
            raise ValueError(f"Pipeline '{entry.name}' of family '{family.name}' is already family '{owner.family}''s.")
    FAMILIES[family.name] = family
    for entry in family.pipelines:
        if entry.path is not None:  # loading and checking find it by name too
            OWN_FILES[entry.name] = entry.path
        REGISTRY[entry.name] = ShippedPipeline(
            entry.name, family.name, entry.description, _table(family, entry), served=not entry.indexing,
            injection=entry.injection, api_description=entry.api_description, indexing=entry.indexing,
            default_system=entry.default_system, file=entry.path,
            control=entry.control, cascade=_cascade(family, entry))
    _changed()


def unregister_family(name: str) -> None:
    """Remove a family registered with `register_family` (tests)."""
    FAMILIES.pop(name, None)
    for pipeline in [p for p, entry in REGISTRY.items() if entry.family == name]:
        del REGISTRY[pipeline]
        OWN_FILES.pop(pipeline, None)
    _changed()


def _changed() -> None:
    """Forget the resolved files."""
    _resolved.clear()


# ---------------------------------------------------------------- one resolution per pipeline file
@dataclass(frozen=True)
class Resolved:
    """A pipeline name or file resolved once: what every layer above the families passes around."""

    name: str
    path: Path
    data: dict[str, Any] = field(repr=False)
    family: Family = field(repr=False)
    parameters: Mapping[str, Parameter] = field(repr=False)
    entry: ShippedPipeline | None = field(default=None, repr=False)

    @property
    def inputs(self) -> dict[str, list[str]]:
        """The file's declared inputs: name -> the sockets that receive it."""
        return dict(self.data.get("inputs") or {})

    @property
    def outputs(self) -> dict[str, str]:
        """The file's declared outputs: name -> component.socket."""
        return dict(self.data.get("outputs") or {})

    @property
    def components(self) -> dict[str, Any]:
        """The file's components (name -> its type and init parameters)."""
        return dict(self.data.get("components") or {})

    @property
    def request_table(self) -> dict[str, Parameter]:
        """What a request may set on this pipeline."""
        wanted = request_names(self.family)
        return {name: p for name, p in self.parameters.items() if name in wanted}

    def run_data(self, **values: Any) -> dict[str, dict[str, Any]]:
        """Run-time data from the file's `inputs`: every socket listed under `inputs.query` gets `query`."""
        data: dict[str, dict[str, Any]] = {}
        for name, value in values.items():
            if name not in self.inputs:
                raise KeyError(f"The pipeline declares no input '{name}' (it has {sorted(self.inputs)}).")
            for target in self.inputs[name]:
                comp, socket = target.split(".", 1)
                data.setdefault(comp, {})[socket] = value
        return data

    def values(self, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Each parameter's effective value: `params`' where set, else the file's init parameter (if it has one)."""
        out = {}
        for name, p in self.parameters.items():
            if (params or {}).get(name) is not None:
                out[name] = params[name]
                continue
            init = (self.components.get(p.component) or {}).get("init_parameters") or {}
            if p.target in init:
                out[name] = init[p.target]
        return out

    def check(self, params: Mapping[str, Any], *, request: bool = False) -> dict[str, Any]:
        """`params` checked against this pipeline's table (a request: its request parameters only)."""
        table = self.request_table if request else self.parameters
        return check_parameters(params, table)

    def preparation(self) -> StorePreparation | None:
        """What the family needs built over the store first (another family's, when it names one)."""
        return preparation_of(self.family)


_resolved: dict[tuple[str, int, int], Resolved] = {}
_lock = threading.Lock()


def resolve(name_or_path: str | Path | Resolved) -> Resolved:
    """A shipped name or a YAML file, resolved once while unchanged (its `data` is shared: copy before changing);
    a file's family is the one whose components it names most (none: the baselines').

    :raises FileNotFoundError: neither a file nor a registered name.
    :raises ValueError: not readable YAML, or no `components` mapping (one line naming the file).
    """
    if isinstance(name_or_path, Resolved):
        return name_or_path
    entry = REGISTRY.get(str(name_or_path))
    path = entry.path if entry is not None else pipeline_path(name_or_path)
    stat = path.stat()
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    with _lock:
        found = _resolved.get(key)
    if found is not None:
        return found
    data = read_pipeline(path)
    if entry is None:
        shipped = REGISTRY.get(path.stem)
        if shipped is not None and path.resolve() == shipped.path.resolve():
            entry = shipped
    if entry is not None:
        family, table = FAMILIES[entry.family], entry.parameters
    else:
        family = _family_of(data)
        table = {**family.parameters,
                 **{name: FAMILIES[owner].parameters[name] for name, owner in family.borrowed.items()}}
    found = Resolved(path.stem, path, data, family, table, entry)
    with _lock:
        _resolved[key] = found
    return found


def _family_of(data: dict[str, Any]) -> Family:
    """The family whose components a file of your own names most (none: `OWN_FILE_FAMILY`)."""
    types = [str((c or {}).get("type", "")) for c in (data.get("components") or {}).values() if isinstance(c, dict)]
    counts = {name: sum(t.startswith(f.components) for t in types) for name, f in FAMILIES.items() if f.components}
    best = max(counts, key=lambda name: counts[name], default=None)
    return FAMILIES[best] if best is not None and counts[best] else FAMILIES[OWN_FILE_FAMILY]


def preparation_of(family: Family) -> StorePreparation | None:
    """A family's index-time preparation (following a family that names another's)."""
    seen = set()
    prep: Any = family.prepare_store
    while isinstance(prep, str) and prep not in seen:
        seen.add(prep)
        prep = FAMILIES[prep].prepare_store
    return None if isinstance(prep, str) else prep


def store_preparation() -> StorePreparation | None:
    """The index-time preparation `cfrag index --graph` builds ahead (the first family's that has one)."""
    return next((p for f in FAMILIES.values() if (p := preparation_of(f)) is not None and p.index), None)


def cascades() -> dict[str, Cascade]:
    """Every cascade's declaration (`family.Cascade`), by name: what `cascade.contract.composed` checks."""
    return {name: p.cascade for name, p in REGISTRY.items() if p.cascade is not None}


def benchmarks() -> dict[str, Callable[[tuple[int, ...], float | None, str], str]]:
    """`cfrag bench`'s micro-benchmarks, by family."""
    return {name: f.commands.bench for name, f in FAMILIES.items() if f.commands.bench is not None}


# ---------------------------------------------------------------- lists
def query_pipelines() -> tuple[str, ...]:
    """Names that answer questions (every entry but the index-time ones)."""
    return tuple(name for name, p in REGISTRY.items() if not p.indexing)


def served_pipelines() -> tuple[str, ...]:
    """Names `cfrag serve` and the service offer: every query pipeline."""
    return tuple(name for name, p in REGISTRY.items() if p.served)


def injection_pipelines() -> tuple[str, ...]:
    """Names `cfrag eval --inject` runs by default."""
    return tuple(name for name, p in REGISTRY.items() if p.injection)


def default_systems() -> tuple[str, ...]:
    """`cfrag eval`'s default systems: the families' default pipelines, then their default ablations."""
    return (*(name for name, p in REGISTRY.items() if p.default_system),
            *(a for f in FAMILIES.values() for a in f.sweeps.defaults))


def ablations() -> dict[str, tuple[str, Mapping[str, Any]]]:
    """Every family's named ablations: name -> (pipeline, fixed values)."""
    return {name: spec for f in FAMILIES.values() for name, spec in f.sweeps.ablations.items()}


def cli_options() -> dict[str, tuple[str, Parameter]]:
    """The short `cfrag ask/compare` options every family declares: option -> (parameter name, its Parameter)."""
    return {option: (name, f.parameters[name]) for f in FAMILIES.values()
            for option, name in f.commands.options.items()}


def sweep_names(family: Family) -> dict[str, str]:
    """Short names of a family's parameters in eval systems and sweeps (`lambda` -> `causal_weight`)."""
    return {**family.sweeps.names, **GATE_SWEEP_NAMES}


def parameters_of(name_or_path: str | Path) -> Mapping[str, Parameter]:
    """The parameter table of a pipeline name or file (`resolve(…).parameters`).

    >>> by_path, by_name = sorted(parameters_of(REGISTRY["cer"].path)), sorted(parameters_of("cer"))
    >>> by_path == by_name == sorted(REGISTRY["cer"].parameters)
    True
    """
    return resolve(name_or_path).parameters


def trace_view(name_or_path: str | Path | Resolved) -> Any | None:
    """The CLI's trace view of a pipeline's family (None: no trace to show)."""
    return resolve(name_or_path).family.commands.view


def controls() -> dict[str, str]:
    """Pipeline name -> control role ("retrieval" or "order"), for the reports' comparisons with the best control."""
    return {name: p.control for name, p in REGISTRY.items() if p.control}


def describe() -> str:
    """The shipped names with their descriptions, one per line (for `--help` texts)."""
    return "\n".join(f"{name}: {p.description}" for name, p in REGISTRY.items())


def _load() -> None:
    for module in FAMILY_MODULES:
        register_family(importlib.import_module(module).FAMILY)


_load()

__all__ = ["BASELINE", "FAMILIES", "FAMILY_MODULES", "REGISTRY", "ParameterError", "Resolved",
           "ShippedPipeline", "ablations", "benchmarks", "cascades", "cli_options", "controls",
           "default_systems", "describe", "injection_pipelines", "parameters_of", "preparation_of",
           "query_pipelines", "register_family", "resolve", "served_pipelines", "store_preparation",
           "trace_view", "unregister_family"]
