"""The systems an evaluation compares: a registered pipeline, a family's ablation (`cf_rag_n3`, `cf_rag_k1`, …)
or a YAML path, with checked overrides in brackets (`cf_rag[lambda=0.2]`); `sweep_systems` takes any family's axis.

Usage:
    >>> [s.name for s in parse_systems("standard_rag,cf_rag[causal_weight=0.2]")]
    ['standard_rag', 'cf_rag[causal_weight=0.2]']
    >>> parse_systems("cf_rag_k1")[0].params
    {'n_clusters': 1}
    >>> parse_system("cf_rag[duel=true]").params
    {'duel': True}
    >>> [s.name for s in sweep_systems("cer:theta", [0.5, 0.7])]
    ['cer[theta=0.5]', 'cer[theta=0.7]']
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from haystack_cfrag.common.parameters import ParameterError, parse_value
from haystack_cfrag.common.validation import check_choice
from haystack_cfrag.registry import FAMILIES, REGISTRY, ablations, default_systems, resolve

# the baselines and CF-RAG's pipelines, then ablations; the other families (cer, causal_rag: a graph to build
# first) cost several times more per question and are named with --systems (each family's entries say which)
DEFAULT_SYSTEMS = default_systems()
ABLATIONS: dict[str, tuple[str, dict[str, Any]]] = {name: (p, dict(v)) for name, (p, v) in ablations().items()}


@dataclass(frozen=True)
class System:
    """A named pipeline with parameter overrides."""

    name: str
    pipeline: str
    params: dict[str, Any] = field(default_factory=dict)

    def key(self) -> str:
        """What identifies the system's configuration in cached results."""
        return f"{self.pipeline}{sorted(self.params.items())}"


def parse_system(spec: str) -> System:
    """One system from its name (see the module doc)."""
    spec = spec.strip()
    match = re.fullmatch(r"([^\[\]]+)(?:\[(.*)\])?", spec)
    if not match or not match.group(1).strip():
        raise ValueError(f"Cannot read the system '{spec}': use NAME or NAME[param=value,...].")
    base, overrides = match.group(1).strip(), match.group(2)
    pipeline, params = ABLATIONS.get(base, (base, {}))
    params = dict(params)
    table, short = _table(pipeline, spec, bool(overrides and overrides.strip()))
    for part in (overrides or "").split(","):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        key = short.get(key.strip(), key.strip())
        if not sep or key not in table:
            raise ValueError(f"System '{spec}': '{part}' is not param=value with param in {sorted(table)}.")
        params[key] = parse_value(value.strip())
        try:
            table[key].check(params[key])  # the value as written is kept: it is part of the records' keys
        except ParameterError as exc:
            raise ValueError(f"System '{spec}': {exc}") from exc
    return System(spec, pipeline, params)


def check_system(system: System) -> None:
    """ValueError naming the system unless its pipeline is a shipped name or a YAML file with `components`."""
    from haystack_cfrag.pipelines import shipped_pipelines  # noqa: PLC0415

    if system.pipeline in shipped_pipelines():
        return
    path = Path(system.pipeline)
    if not path.is_file():
        raise ValueError(f"System '{system.name}': no pipeline '{system.pipeline}' (shipped: "
                         f"{', '.join(shipped_pipelines())}, ablations: {', '.join(ABLATIONS)}; or a .yml file).")
    if path.suffix.lower() not in (".yml", ".yaml"):
        raise ValueError(f"System '{system.name}': {path} is not a pipeline file (.yml or .yaml).")
    try:
        resolve(path)  # the one parse and structural check
    except ValueError as exc:
        raise ValueError(f"System '{system.name}': {exc}") from exc


def check_systems(specs: str) -> list[System]:
    """`parse_systems`, each system's parameters and pipeline checked (`check_system`): ValueError on the first bad."""
    systems = parse_systems(specs)
    for system in systems:
        check_system(system)
    return systems


def parse_systems(specs: str) -> list[System]:
    """Comma-separated systems; commas inside brackets belong to the overrides."""
    parts, depth, current = [], 0, ""
    for ch in specs:
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    systems = [parse_system(p) for p in parts if p.strip()]
    if not systems:
        raise ValueError("No systems given.")
    return systems


def _table(pipeline: str, spec: str, needed: bool) -> tuple[Any, dict[str, str]]:
    """(parameter table, short names) of a pipeline name or file; a file that is not there has none."""
    if pipeline not in REGISTRY and not Path(pipeline).is_file():
        if needed:
            raise ValueError(f"System '{spec}': no pipeline '{pipeline}' to set parameters of.")
        return {}, {}
    try:
        resolved = resolve(pipeline)
    except (OSError, ValueError) as exc:
        if needed:
            raise ValueError(f"System '{spec}': {pipeline} cannot be read ({type(exc).__name__}).") from exc
        return {}, {}
    return resolved.parameters, dict(resolved.family.sweeps.names)


def sweep_axes() -> dict[str, tuple[str, str]]:
    """Every sweep axis as written (`family:name`, and a bare name only one family has) -> (family, name)."""
    axes: dict[str, tuple[str, str]] = {}
    bare: dict[str, list[str]] = {}
    for family in FAMILIES.values():
        for name in family.axes():
            axes[f"{family.name}:{name}"] = (family.name, name)
            bare.setdefault(name, []).append(family.name)
    for name, owners in bare.items():
        if len(owners) == 1:
            axes[name] = (owners[0], name)
    return axes


def sweep_base(family: str) -> str:
    """The pipeline a sweep of `family` runs: its first query pipeline."""
    return next(e.name for e in FAMILIES[family].pipelines if not e.indexing)


def sweep_systems(parameter: str, values: list[Any], base: str | None = None) -> list[System]:
    """The family's pipeline (or `base`) with `parameter` (`cer:theta`, or a name one family has) at each value."""
    axes = sweep_axes()
    check_choice("sweep parameter", parameter, sorted(axes))
    family, name = axes[parameter]
    pipeline = base or sweep_base(family)
    return [parse_system(f"{pipeline}[{name}={v}]") for v in values]
