"""The systems an evaluation compares: a pipeline file plus parameter overrides.

Names: every shipped pipeline of `haystack_cfrag.registry` (`closed_book`, `standard_rag`,
`cf_rag`, `cf_rag_fast`, `cf_rag_paper`, …), the ablations `cf_rag_n0` (no counterfactuals), `cf_rag_k1` (one cluster),
`cf_rag_lambda0` (no causal term), `cf_rag_no_override` (the baseline always stands), any YAML path,
and any of these with overrides in brackets: `cf_rag[causal_weight=0.2,n_subsets=2]`
(parameters: see `haystack_cfrag.cfrag.parameters`; each value is checked against its range when the
system is read). `check_systems` also checks, before anything runs, that each pipeline is a
shipped name or a YAML pipeline file (`cfrag eval` refuses anything else; `run_eval` records
a system that cannot load as a failed result).

Usage:
    >>> [s.name for s in parse_systems("standard_rag,cf_rag[causal_weight=0.2]")]
    ['standard_rag', 'cf_rag[causal_weight=0.2]']
    >>> parse_systems("cf_rag_k1")[0].params
    {'n_clusters': 1}
    >>> parse_system("cf_rag[duel=true]").params
    {'duel': True}
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from haystack_cfrag.cfrag.parameters import ParameterError
from haystack_cfrag.common.validation import check_choice
from haystack_cfrag.registry import BASELINE, REGISTRY, parameters_of, query_pipelines

# the baselines and CF-RAG's pipelines, then ablations; the other families (cer, causal_rag: a graph to build
# first) cost several times more per question and are named with --systems
DEFAULT_SYSTEMS = (*(n for n in query_pipelines() if REGISTRY[n].family in ("baseline", "cf_rag")),
                   "cf_rag_lambda0", "cf_rag_n0", "cf_rag_k1")
ABLATIONS: dict[str, tuple[str, dict[str, Any]]] = {
    "cf_rag_n0": ("cf_rag", {"n_counterfactuals": 0}),
    "cf_rag_k1": ("cf_rag", {"n_clusters": 1}),
    "cf_rag_lambda0": ("cf_rag", {"causal_weight": 0.0}),
    "cf_rag_no_override": ("cf_rag", {"override_margin": 1.0, "duel": False}),
}
SWEEP_PARAMETERS = {"lambda": "causal_weight", "N": "n_counterfactuals", "K": "n_clusters", "M": "n_subsets"}


@dataclass(frozen=True)
class System:
    """A named pipeline with parameter overrides."""

    name: str
    pipeline: str
    params: dict[str, Any] = field(default_factory=dict)

    def key(self) -> str:
        """What identifies the system's configuration in cached results."""
        return f"{self.pipeline}{sorted(self.params.items())}"


def _value(text: str) -> Any:
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def parse_system(spec: str) -> System:
    """One system from its name (see the module doc)."""
    spec = spec.strip()
    match = re.fullmatch(r"([^\[\]]+)(?:\[(.*)\])?", spec)
    if not match or not match.group(1).strip():
        raise ValueError(f"Cannot read the system '{spec}': use NAME or NAME[param=value,...].")
    base, overrides = match.group(1).strip(), match.group(2)
    pipeline, params = ABLATIONS.get(base, (base, {}))
    params = dict(params)
    table = parameters_of(pipeline)  # each family's own table (a file of your own: CF-RAG's)
    for part in (overrides or "").split(","):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        key = SWEEP_PARAMETERS.get(key.strip(), key.strip())
        if not sep or key not in table:
            raise ValueError(f"System '{spec}': '{part}' is not param=value with param in {sorted(table)}.")
        params[key] = _value(value.strip())
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
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ValueError(f"System '{system.name}': {path} is not readable YAML ({type(exc).__name__}).") from exc
    if not isinstance(data, dict) or not isinstance(data.get("components"), dict):
        raise ValueError(f"System '{system.name}': {path} is not a Haystack pipeline file (no 'components').")


def check_systems(specs: str) -> list[System]:
    """`parse_systems`, each system's parameters and pipeline checked (`check_system`): ValueError on the first bad one."""
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


def sweep_systems(parameter: str, values: list[Any], base: str = "cf_rag") -> list[System]:
    """`base` with one parameter (lambda, N, K or M) at each value, the others at their defaults."""
    check_choice("sweep parameter", parameter, sorted(SWEEP_PARAMETERS))
    return [parse_system(f"{base}[{parameter}={v}]") for v in values]
