"""Scores over evaluation records: means, paired differences (over the questions both answered, 95% bootstrap
interval, wins and losses), the oracle, and the injection and sweep tables.

    >>> a = [{"condition": "c", "qid": q, "em": e} for q, e in [("1", 1.0), ("2", 1.0), ("3", 0.0)]]
    >>> b = [{"condition": "c", "qid": q, "em": e} for q, e in [("1", 0.0), ("2", 1.0)]]
    >>> paired(a, b, "em")["difference"], mean_or_none([1.0, None, 0.0])
    (0.5, 0.5)
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from haystack_cfrag.evaluation.metrics import paired_bootstrap
from haystack_cfrag.registry import resolve

METRICS = ("em", "f1", "lenient")
"""The answer scores of a record, each a fraction."""


def mean_or_none(values: list[float | None]) -> float | None:
    """The mean of the values that are not None; None when there are none."""
    values = [v for v in values if v is not None]
    return float(np.mean(values)) if values else None


def oracle_em(record: dict[str, Any]) -> float:
    """1 when the answer or any recorded candidate draft is right (EM): what arbitration could reach at best.

    >>> oracle_em({"em": 0.0, "candidates": [{"em": 0.0}, {"em": 1.0}]}), oracle_em({"em": 1.0})
    (1.0, 1.0)
    """
    return max([float(c.get("em") or 0.0) for c in record.get("candidates") or []] + [float(record["em"])])


def paired(recs_a: list[dict[str, Any]], recs_b: list[dict[str, Any]], metric: str) -> dict[str, float] | None:
    """`metric` of system A's records against system B's over the questions both answered (None if none)."""
    a = {(r["condition"], r["qid"]): r[metric] for r in recs_a}
    b = {(r["condition"], r["qid"]): r[metric] for r in recs_b}
    common = sorted(set(a) & set(b))
    if not common:
        return None
    return paired_bootstrap([a[q] for q in common], [b[q] for q in common])


def scores(recs: list[dict[str, Any]]) -> dict[str, Any]:
    """One system's answers summed up: count, escalations, mean scores, recall, oracle, errors, by type and mode.

    >>> s = scores([{"em": 1.0, "f1": 1.0, "lenient": 1.0, "qtype": "bridge"}, {"em": 0.0, "f1": 0.5, "lenient": 1.0}])
    >>> s["n"], s["em"], s["f1"], s["support_recall"], s["by_type"]["bridge"]["n"]
    (2, 0.5, 0.75, None, 1)
    """
    by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    by_mode: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in recs:
        if r.get("qtype"):
            by_type[r["qtype"]].append(r)
        if r.get("failure_mode"):
            by_mode[r["failure_mode"]].append(r)
    gated = [r["gate"] for r in recs if isinstance(r.get("gate"), dict)]
    return {
        "n": len(recs),
        **({"escalated": sum(bool(g.get("escalated")) for g in gated)} if gated else {}),
        **{m: mean_or_none([r[m] for r in recs]) for m in METRICS},
        "support_recall": mean_or_none([r.get("support_recall") for r in recs]),
        "oracle": mean_or_none([oracle_em(r) for r in recs]),
        "errors": sum(1 for r in recs if r.get("error")),
        "by_type": {t: {"n": len(rs), **{m: mean_or_none([r[m] for r in rs]) for m in METRICS}}
                    for t, rs in sorted(by_type.items())},
        "by_failure_mode": {
            mode: {"n": len(rs), "error_rate": 1.0 - (mean_or_none([r["em"] for r in rs]) or 0.0),
                   "lenient_error_rate": 1.0 - (mean_or_none([r["lenient"] for r in rs]) or 0.0),
                   "trap_rate": mean_or_none([float(bool(r.get("trapped"))) for r in rs])}
            for mode, rs in sorted(by_mode.items())
        },
    }


def injection_tables(records: list[dict[str, Any]]) -> dict[str, Any]:
    """variant → system → level → scores (`per-question` as N_inject = 0), over the questions every level and
    system answered; `em_vs_0` is ΔEM against N=0, paired."""
    table: dict[str, Any] = defaultdict(lambda: defaultdict(lambda: defaultdict(dict)))  # → level → qid → record
    for r in records:
        if r.get("variant") and r["condition"].startswith("inject:"):
            table[r["variant"]][r["system"]][r["inject"]][r["qid"]] = r
    for r in records:  # N_inject = 0 is shared by every variant
        if r["condition"] == "per-question":
            for systems in table.values():
                if r["system"] in systems:
                    systems[r["system"]][0][r["qid"]] = r
    out: dict[str, Any] = {}
    for variant, systems in table.items():
        common = sorted(set.intersection(*(set(by_q) for levels in systems.values() for by_q in levels.values())))
        out[variant] = {name: {level: _level(levels[level], levels.get(0) if level else None, common)
                               for level in sorted(levels)}
                        for name, levels in systems.items()}
    return out


def _level(by_q: dict[str, dict[str, Any]], zero: dict[str, dict[str, Any]] | None, qids: list[str]) -> dict[str, Any]:
    """One system at one injection level over `qids`, with ΔEM against the same questions at N=0."""
    recs = [by_q[q] for q in qids]
    vs_0 = paired_bootstrap([r["em"] for r in recs], [zero[q]["em"] for q in qids]) if zero and qids else None
    return {"n": len(recs), **{m: mean_or_none([r[m] for r in recs]) for m in METRICS}, "em_vs_0": vs_0}


def _file_default(pipeline: str, parameter: str, cache: dict[tuple[str, str], Any]) -> Any:
    """A parameter's value in a pipeline's own file (None: not a pipeline the registry resolves, or not set there)."""
    key = (pipeline, parameter)
    if key not in cache:
        try:
            cache[key] = resolve(pipeline).values().get(parameter)
        except (FileNotFoundError, KeyError, ValueError, OSError):
            cache[key] = None
    return cache[key]


def sweep_tables(records: list[dict[str, Any]]) -> dict[str, Any]:
    """"pipeline:parameter" → {"default", "values": value → scores}: each one-parameter variant, over the questions
    every value answered, with ΔEM against the file's own value (its records without parameters), paired."""
    table: dict[str, dict[Any, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    defaults: dict[str, Any] = {}
    cache: dict[tuple[str, str], Any] = {}
    for r in records:
        params = r.get("params") or {}
        if r.get("variant") or len(params) != 1:
            continue
        (key, value), = params.items()
        default = _file_default(r.get("pipeline") or "", key, cache)
        if default is not None:
            name = f"{r['pipeline']}:{key}"
            defaults[name] = default
            table[name][value].append(r)
    for name, default in defaults.items():
        pipeline = name.rsplit(":", 1)[0]
        table[name][default] += [r for r in records if r.get("pipeline") == pipeline and not r.get("params")
                                 and not r.get("variant")]
    return {name: {"default": defaults[name], "values": _sweep(values, defaults[name])}
            for name, values in table.items()}


def _sweep(values: dict[Any, list[dict[str, Any]]], default: Any) -> dict[str, Any]:
    """One parameter's values, restricted to their common questions, with ΔEM against `default`."""
    common = set.intersection(*({(r["condition"], r["qid"]) for r in rs} for rs in values.values()))
    kept = {v: [r for r in rs if (r["condition"], r["qid"]) in common] for v, rs in sorted(values.items())}
    return {str(v): {"n": len(rs), **{m: mean_or_none([r[m] for r in rs]) for m in METRICS},
                     "latency_equivalent": mean_or_none([r.get("seconds_equivalent", r["seconds"]) for r in rs]),
                     "em_vs_default": paired(rs, kept[default], "em") if default in kept and v != default else None}
            for v, rs in kept.items()}
