"""From per-question records to `results.json`, a Markdown report and PNG plots.

Scores are fractions in `results.json` and percentages in the report. Differences against the
baseline (standard RAG) are paired over the questions both systems answered, with a 95%
percentile bootstrap interval. Latency is wall time per question; where a system's replies came
from the LLM cache (the λ sweep reuses cf_rag's drafts), `latency_equivalent` adds back the
seconds those calls took when they were made.

Usage:
    >>> recs = [{"condition": "pooled", "system": s, "qid": q, "em": e, "f1": e, "lenient": e,
    ...          "support_recall": None, "seconds": 1.0, "seconds_equivalent": 1.0, "stages": {},
    ...          "llm": {"calls": 1}, "cache_hits": 0, "error": None, "qtype": "bridge", "params": {},
    ...          "pipeline": s, "inject": 0, "variant": None}
    ...         for s, q, e in [("standard_rag", "a", 0.0), ("standard_rag", "b", 1.0), ("cf_rag", "a", 1.0), ("cf_rag", "b", 1.0)]]
    >>> res = summarize(recs)
    >>> res["conditions"]["pooled"]["systems"]["cf_rag"]["vs_baseline"]["em"]["difference"]
    0.5
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from haystack import logging

from haystack_cfrag.common.files import replace_text
from haystack_cfrag.evaluation.controls import against_controls, kinds_text
from haystack_cfrag.evaluation.metrics import paired_bootstrap
from haystack_cfrag.evaluation.systems import BASELINE
from haystack_cfrag.registry import controls, resolve
from haystack_cfrag.timing import UNKNOWN_MACHINE

logger = logging.getLogger(__name__)

METRICS = ("em", "f1", "lenient")
LLM_COUNTS = ("calls", "prompt_tokens", "completion_tokens")
"""Chat calls and their tokens, per question (0 for a question that failed)."""
SCORING_COUNTS = ("scorings", "scoring_tokens", "scoring_seconds")
"""The reader's support scorings, the tokens they evaluated and the seconds they took, per question (None in records
written before scorings were counted, 2026-11-26: those runs' scorings are in their traces only)."""


def read_records(out: Path) -> list[dict[str, Any]]:
    """Every record of an output folder (an unfinished last line is skipped with a warning)."""
    path = Path(out) / "records.jsonl"
    if not path.exists():
        return []
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            logger.warning("Skipping an unreadable line in {path}", path=str(path))
    return records


def write_outputs(out: Path, *, with_plots: bool = True) -> dict[str, Any]:
    """`results.json`, `report.md` and the plots of an output folder, from its records and metadata."""
    out = Path(out)
    records = read_records(out)
    if not records:
        raise ValueError(f"No records in {out}: run `cfrag eval` first.")
    meta_path = out / "metadata.json"
    metadata = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.exists() else None
    results = {"metadata": metadata, **summarize(records), "index": index_cost(read_graph_stats(out))}
    replace_text(out / "results.json", json.dumps(results, indent=2, default=str))  # a link there: replaced
    report = markdown(results, metadata)
    if with_plots:
        images = plots(results, out)
        report += "\n## Plots\n\n" + "\n".join(f"![{p.stem}]({p.name})" for p in images) + "\n"
    replace_text(out / "report.md", report)
    return results


def read_graph_stats(out: Path) -> list[dict[str, Any]]:
    """CausalRAG's graph builds of an output folder (`graph_stats.jsonl`: one line per build, a resumed run's load included)."""
    path = Path(out) / "graph_stats.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def index_cost(builds: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The graph builds summed, with the cost per passage the LLM extracted, each passage counted once
    (`counted_once`); None: no graph was built.

    A run that resumes loads the graph again from the extraction cache: that build counts its
    passages as cached and costs no call. A folder restored where the extraction cache is not
    (another machine) extracts again through the run's reply cache: those calls are `replayed`, at
    the seconds they took when made, and a passage an earlier build counted is not counted again.

    >>> cost = index_cost([{"passages": 4, "extracted": 4, "llm_calls": 4, "prompt_tokens": 300,
    ...                     "completion_tokens": 100, "seconds": 40.0},
    ...                    {"passages": 4, "cached": 4, "seconds": 1.0}])
    >>> cost["builds"], cost["extracted"], cost["cached"], cost["seconds_per_extracted"], cost["tokens_per_extracted"]
    (2, 4, 4, 10.25, 100.0)
    >>> index_cost([{"passages": 4, "extracted": 4, "replayed": 4, "seconds": 0.4, "replayed_seconds": 39.6}])["replayed"]
    4
    """
    if not builds:
        return None
    keys = ("passages", "extracted", "replayed", "cached", "llm_calls", "prompt_tokens", "completion_tokens",
            "parse_failures")
    total: dict[str, Any] = {k: sum(int(b.get(k, 0) or 0) for b in builds) for k in keys}
    total["seconds"] = sum(float(b.get("seconds", 0.0) or 0.0) for b in builds)
    total["replayed_seconds"] = sum(float(b.get("replayed_seconds", 0.0) or 0.0) for b in builds)
    counted = counted_once(builds)
    total["timed_on"] = timed_shares([{"timed_on": counted["timed_on"]}])
    total["parse_failures"] = unparsed_chunks(builds)  # each passage once, not again at each reload
    n = counted["passages"]
    return {"builds": len(builds), **total, "counted": counted,
            "priced": any(isinstance(b.get("passage_costs"), list) for b in builds),
            "all_priced": all(isinstance(b.get("passage_costs"), list) for b in builds),
            "seconds_per_extracted": counted["seconds"] / n if n else None,
            "tokens_per_extracted": (counted["prompt_tokens"] + counted["completion_tokens"]) / n if n else None}


def _extracted_by(results: dict[str, Any]) -> str:
    """Who extracted the graph, from the run's settings: "the LLM" (also for runs from before the setting).

    >>> _extracted_by({"metadata": {"config": {"graph_extractor": "spacy"}}}), _extracted_by({})
    ("the 'spacy' extractor", 'the LLM')
    """
    name = ((results.get("metadata") or {}).get("config") or {}).get("graph_extractor")
    return "the LLM" if name in (None, "llm") else f"the {name!r} extractor"


def counted_once(builds: list[dict[str, Any]]) -> dict[str, Any]:
    """The graph builds' extraction cost with each distinct passage counted once: passages, seconds (and by
    machine, `timed_on`) and tokens.

    A build with per-passage prices (`passage_costs`, the builder's `costs`) counts its time outside the
    calls (reading the cache, merging, embedding the nodes: `seconds - call_seconds`) and, for each
    passage no earlier build counted, the price its extraction had when made: made in this build,
    replayed from the run's reply cache, or found in the extraction cache with its price (a build
    stopped before it wrote its line is paid for by the one that resumes it). A passage whose price
    is unknown (cached before prices were kept) is not counted. A build from before the prices counts
    as a whole: its seconds, replayed ones included, over the passages it extracted.

    `distinct_passages`: the priced builds' distinct passages (extracted or cached): the graph's.

    >>> priced = {"how": "extracted", "seconds": 10.0, "timed_on": {"a1": 10.0}, "prompt_tokens": 90, "completion_tokens": 10}
    >>> first = {"seconds": 12.0, "call_seconds": 10.0, "built_on": "a1", "passage_costs": [{"key": "k1", **priced}]}
    >>> again = {"seconds": 1.0, "call_seconds": 0.5, "built_on": "b2", "passage_costs": [
    ...     {"key": "k1", **priced, "how": "replayed"}, {"key": "k2", "how": "cached", "seconds": None}]}
    >>> counted = counted_once([first, again])
    >>> counted["passages"], counted["seconds"], counted["timed_on"], counted["distinct_passages"]
    (1, 12.5, {'a1': 12.0, 'b2': 0.5}, 2)
    """
    passages, tokens, seen, distinct = 0, [0, 0], set(), set()
    where: dict[str, float] = defaultdict(float)
    for b in builds:
        costs = b.get("passage_costs")
        if not isinstance(costs, list):  # a build from before per-passage prices
            passages += int(b.get("extracted", 0) or 0)
            tokens[0] += int(b.get("prompt_tokens", 0) or 0)
            tokens[1] += int(b.get("completion_tokens", 0) or 0)
            whole = float(b.get("seconds", 0.0) or 0.0) + float(b.get("replayed_seconds", 0.0) or 0.0)
            for machine, value in (b.get("timed_on") or {UNKNOWN_MACHINE: whole}).items():
                where[machine] += float(value)
            continue
        outside = float(b.get("seconds", 0.0) or 0.0) - float(b.get("call_seconds", 0.0) or 0.0)
        where[str(b.get("built_on") or UNKNOWN_MACHINE)] += max(0.0, outside)
        for cost in costs:
            if not isinstance(cost, dict):
                continue
            distinct.add(cost.get("key"))
            if cost.get("seconds") is None or cost.get("key") in seen:
                continue
            seen.add(cost.get("key"))
            passages += 1
            tokens[0] += int(cost.get("prompt_tokens", 0) or 0)
            tokens[1] += int(cost.get("completion_tokens", 0) or 0)
            for machine, value in (cost.get("timed_on") or {UNKNOWN_MACHINE: cost["seconds"]}).items():
                where[machine] += float(value)
    return {"passages": passages, "seconds": round(sum(where.values()), 3), "prompt_tokens": tokens[0],
            "completion_tokens": tokens[1], "timed_on": {m: round(v, 3) for m, v in sorted(where.items())},
            "distinct_passages": len(distinct)}


def unparsed_chunks(builds: list[dict[str, Any]]) -> int:
    """The graph's chunks whose extraction reply did not parse, each passage once however many builds read it.

    A passage's price says how many (`unparsed`); a build whose prices do not (written before that
    field, 2026-11-27) counts its own total unless a later build says it for its passages; a build
    from before the prices counts its total.

    >>> older = {"parse_failures": 1, "passage_costs": [{"key": "k1"}, {"key": "k2"}]}
    >>> reload = {"parse_failures": 1, "passage_costs": [{"key": "k1", "unparsed": 1}, {"key": "k2", "unparsed": 0}]}
    >>> unparsed_chunks([older]), unparsed_chunks([older, reload, reload]), unparsed_chunks([{"parse_failures": 2}])
    (1, 1, 2)
    """
    known: dict[Any, int] = {}
    for b in builds:
        for cost in b.get("passage_costs") or []:
            if isinstance(cost, dict) and "unparsed" in cost:
                known.setdefault(cost.get("key"), int(cost["unparsed"] or 0))
    total = sum(known.values())
    for b in builds:
        costs = b.get("passage_costs")
        keys = {c.get("key") for c in costs if isinstance(c, dict)} if isinstance(costs, list) else set()
        if not keys & known.keys():  # no build says it per passage for this one's passages
            total += int(b.get("parse_failures", 0) or 0)
    return total


def _mean(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return float(np.mean(values)) if values else None


def oracle_em(record: dict[str, Any]) -> float:
    """1 when the answer or any recorded candidate draft is right (EM): what arbitration could reach at best.

    >>> oracle_em({"em": 0.0, "candidates": [{"em": 0.0}, {"em": 1.0}]}), oracle_em({"em": 1.0})
    (1.0, 1.0)
    """
    return max([float(c.get("em") or 0.0) for c in record.get("candidates") or []] + [float(record["em"])])


def _system_summary(recs: list[dict[str, Any]]) -> dict[str, Any]:
    seconds = [r["seconds"] for r in recs]
    equivalent = [r.get("seconds_equivalent", r["seconds"]) for r in recs]
    stages: dict[str, list[float]] = defaultdict(list)
    for r in recs:
        for stage, value in (r.get("stages") or {}).items():
            stages[stage].append(value)
    by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    by_mode: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in recs:
        if r.get("qtype"):
            by_type[r["qtype"]].append(r)
        if r.get("failure_mode"):
            by_mode[r["failure_mode"]].append(r)
    em = _mean([r["em"] for r in recs]) or 0.0
    latency = float(np.mean(equivalent))
    gated = [r["gate"] for r in recs if isinstance(r.get("gate"), dict)]
    return {
        "n": len(recs),
        **({"escalated": sum(bool(g.get("escalated")) for g in gated)} if gated else {}),
        **{m: _mean([r[m] for r in recs]) for m in METRICS},
        "support_recall": _mean([r.get("support_recall") for r in recs]),
        "oracle": _mean([oracle_em(r) for r in recs]),
        "errors": sum(1 for r in recs if r.get("error")),
        "by_type": {t: {"n": len(rs), **{m: _mean([r[m] for r in rs]) for m in METRICS}} for t, rs in sorted(by_type.items())},
        "by_failure_mode": {
            mode: {"n": len(rs), "error_rate": 1.0 - (_mean([r["em"] for r in rs]) or 0.0),
                   "lenient_error_rate": 1.0 - (_mean([r["lenient"] for r in rs]) or 0.0),
                   "trap_rate": _mean([float(bool(r.get("trapped"))) for r in rs])}
            for mode, rs in sorted(by_mode.items())
        },
        "latency": {"mean": float(np.mean(seconds)), "p50": float(np.median(seconds)),
                    "p95": float(np.quantile(seconds, 0.95)), "mean_equivalent": latency},
        "stages": {k: float(np.mean(v)) for k, v in sorted(stages.items())},
        "llm": {**{k: _mean([(r.get("llm") or {}).get(k, 0) for r in recs]) for k in LLM_COUNTS},
                **{k: _mean([(r.get("llm") or {}).get(k) for r in recs]) for k in SCORING_COUNTS}},
        "cache_hits": _mean([r.get("cache_hits", 0) for r in recs]),
        "em_efficiency": em / latency if latency > 0 else None,
        "timed_on": timed_shares(recs),
    }


def timed_shares(recs: list[dict[str, Any]]) -> dict[str, float]:
    """The share of the records' (or graph builds') uncached-equivalent seconds timed on each machine
    (`timing.timed_on`); those from before the field count as "unknown".

    >>> timed_shares([{"seconds": 1.0, "timed_on": {"a1": 3.0}}, {"seconds": 1.0, "seconds_equivalent": 1.0}])
    {'a1': 0.75, 'unknown': 0.25}
    """
    seconds: dict[str, float] = defaultdict(float)
    for r in recs:
        untagged = r.get("seconds_equivalent", r.get("seconds", 0.0))
        for machine, value in (r.get("timed_on") or {UNKNOWN_MACHINE: untagged}).items():
            seconds[machine] += float(value)
    total = sum(seconds.values())
    return {m: v / total for m, v in sorted(seconds.items())} if total > 0 else {}


def machines_differ(a: dict[str, float], b: dict[str, float], floor: float = 0.01) -> bool:
    """Whether two systems' seconds were timed on different machines (each machine's share above `floor` counted).

    >>> machines_differ({"a1": 1.0}, {"a1": 0.995, "b2": 0.005}), machines_differ({"a1": 1.0}, {"unknown": 1.0})
    (False, True)
    """
    return {m for m, v in a.items() if v > floor} != {m for m, v in b.items() if v > floor}


def paired(recs_a: list[dict[str, Any]], recs_b: list[dict[str, Any]], metric: str) -> dict[str, float] | None:
    """`metric` of system A's records against system B's over the questions both answered (None if none)."""
    a = {(r["condition"], r["qid"]): r[metric] for r in recs_a}
    b = {(r["condition"], r["qid"]): r[metric] for r in recs_b}
    common = sorted(set(a) & set(b))
    if not common:
        return None
    return paired_bootstrap([a[q] for q in common], [b[q] for q in common])


def summarize(records: list[dict[str, Any]], baseline: str = BASELINE) -> dict[str, Any]:
    """Aggregate records by condition and system (see the module doc)."""
    grouped: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        grouped[r["condition"]][r["system"]].append(r)
    conditions: dict[str, Any] = {}
    for cond, systems in grouped.items():
        out = {name: _system_summary(recs) for name, recs in systems.items()}
        base = systems.get(baseline)
        base_latency = out[baseline]["latency"]["mean_equivalent"] if base else None
        for name, s in out.items():
            if base and name != baseline:
                s["vs_baseline"] = {m: paired(systems[name], base, m) for m in METRICS}
            if base_latency:
                s["overhead_vs_baseline"] = s["latency"]["mean_equivalent"] / base_latency
                s["overhead_across_machines"] = machines_differ(s["timed_on"], out[baseline]["timed_on"])
        first = next(iter(systems.values()))
        conditions[cond] = {"inject": first[0].get("inject", 0), "variant": first[0].get("variant"),
                            "n_questions": len({r["qid"] for rs in systems.values() for r in rs}), "systems": out,
                            "controls": against_controls(systems, controls(), baseline, paired)}
    return {"baseline": baseline, "conditions": conditions, "injection": _injection(records),
            "sweeps": _sweeps(records)}


def _injection(records: list[dict[str, Any]]) -> dict[str, Any]:
    """variant → system → level → scores, from the `inject:*` conditions and `per-question` as N_inject = 0.

    A variant's table covers only the questions that every level and system of it answered, so a run stopped
    part-way does not set 30 questions at N=0 against 11 at N=16; `em_vs_0` is ΔEM against N=0, paired.
    """
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
    return {"n": len(recs), **{m: _mean([r[m] for r in recs]) for m in METRICS}, "em_vs_0": vs_0}


def _file_default(pipeline: str, parameter: str, cache: dict[tuple[str, str], Any]) -> Any:
    """A parameter's value in a pipeline's own file (None: not a pipeline the registry resolves, or not set there)."""
    key = (pipeline, parameter)
    if key not in cache:
        try:
            cache[key] = resolve(pipeline).values().get(parameter)
        except (FileNotFoundError, KeyError, ValueError, OSError):
            cache[key] = None
    return cache[key]


def _sweeps(records: list[dict[str, Any]]) -> dict[str, Any]:
    """"pipeline:parameter" → {"default", "values": value → scores}: every pipeline's variants with one parameter changed.

    The default is the pipeline file's own value (any family's: `registry.resolve(…).values()`); the
    pipeline's records without parameters stand for it. Each parameter's values are compared over the
    questions that every value answered (an ablation run on the first 50 questions is not set against
    the default's 100), with ΔEM against the default, paired.
    """
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
    return {str(v): {"n": len(rs), **{m: _mean([r[m] for r in rs]) for m in METRICS},
                     "latency_equivalent": _mean([r.get("seconds_equivalent", r["seconds"]) for r in rs]),
                     "em_vs_default": paired(rs, kept[default], "em") if default in kept and v != default else None}
            for v, rs in kept.items()}


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def _pct(value: float | None) -> str:
    return _num(None if value is None else 100 * value)


def _scorings(llm: dict[str, float | None]) -> str:
    """Support scorings per question, with the tokens they evaluated and their seconds ("–": not counted in these records).

    >>> _scorings({"scorings": 13.9, "scoring_tokens": 812.0, "scoring_seconds": 9.62}), _scorings({"scorings": None})
    ('13.9 (812 tok, 9.6 s)', '–')
    """
    if llm.get("scorings") is None:
        return "–"
    return f"{llm['scorings']:.1f} ({llm.get('scoring_tokens') or 0:.0f} tok, {llm.get('scoring_seconds') or 0:.1f} s)"


def _ci(b: dict[str, float] | None) -> str:
    if not b:
        return "–"
    counts = f" ({b['wins']}↑ {b['losses']}↓)" if "wins" in b else ""
    return f"{100 * b['difference']:+.1f} [{100 * b['low']:+.1f}, {100 * b['high']:+.1f}]{counts}"


def _across_machines(systems: dict[str, Any], baseline: str) -> list[str]:
    """The note under a cost table whose overhead ratios divide one machine's seconds by another's."""
    flagged = [name for name, s in systems.items() if s.get("overhead_across_machines")]
    if not flagged:
        return []

    def where(name: str) -> str:
        return ", ".join(f"{m} {v:.0%}" for m, v in systems[name].get("timed_on", {}).items())

    return ["", f"† timed on other machines than `{baseline}` ({where(baseline)}): "
            + "; ".join(f"`{n}` {where(n)}" for n in flagged)
            + ". These ratios compare machines as much as systems; run both systems with `--no-cache` in one "
            "session for a ratio (docs/evaluation.md)."]


def _controls_lines(cond: dict[str, Any], baseline: str) -> list[str]:
    """The report's comparison with the best control and the order-noise floor (`evaluation.controls`)."""
    ctl = cond.get("controls")
    if not ctl or ctl.get("best_control") is None:
        return []
    best, noise = ctl["best_control"], ctl.get("order_noise")
    lines = ["", f"Against the controls: the best retrieval control here is `{best}` (highest EM of the retrieval "
             "controls). " + (f"Order noise: `{noise['system']}` (the same passages reordered) changed "
                              f"{noise['changed']} of {noise['n']} answers, ΔEM {_ci(noise['em'])} against "
                              f"`{baseline}` — a method that re-orders passages moves answers this much without new "
                              "evidence." if noise else "No order control in this run (`order_rag`)."),
             "", f"| system | ΔEM vs `{baseline}` | what changed vs `{baseline}` | ΔEM vs best control `{best}` | "
             "ΔF1 vs best control | what changed vs best control |", "|---|---|---|---|---|---|"]
    for name, entry in ctl["systems"].items():
        if not entry:
            continue
        vs = entry.get("vs_best_control") or {}
        em_vs_baseline = (cond["systems"][name].get("vs_baseline") or {}).get("em")
        lines.append(f"| {name} | {_ci(em_vs_baseline)} | {kinds_text(entry.get('kinds_vs_baseline'))} | "
                     f"{_ci(vs.get('em'))} | {_ci(vs.get('f1'))} | {kinds_text(entry.get('kinds_vs_best_control'))} |")
    return lines


def markdown(results: dict[str, Any], metadata: dict[str, Any] | None = None) -> str:
    """The report: one table of answers and one of cost per condition, then injection and sweeps."""
    lines = ["# CF-RAG evaluation report", ""]
    if metadata:
        m = metadata["models"]
        lines += [f"- data: `{metadata['data']['path']}` (sha256 {metadata['data']['sha256'][:12]}…)",
                  f"- models: LLM `{m['llm']}` ({(m['llm_sha256'] or '')[:12]}…), embedder `{m['embedder']}`"
                  f" ({(m['embedder_sha256'] or '')[:12]}…), greedy decoding",
                  f"- haystack-cfrag {metadata['haystack_cfrag']}, haystack-ai {metadata['haystack_ai']}, "
                  f"Python {metadata['python']}, {metadata['machine']}", ""]
    lines += ["EM and F1 are strict (SQuAD/HotpotQA normalisation); *lenient* is the paper-style containment "
              "(a gold answer inside the prediction), not exact match. Δ columns: difference to "
              f"`{results['baseline']}` in points, paired over the same questions, 95% bootstrap interval; "
              "↑/↓ count the questions where the system scored higher/lower than the baseline. *oracle*: share of "
              "questions where the answer or some candidate draft is right (EM), the best any arbitration could do.", ""]
    for name, cond in results["conditions"].items():
        lines += [f"## Condition `{name}` ({cond['n_questions']} questions)", "",
                  "| system | n | EM | F1 | lenient | ΔEM [95% CI] | ΔF1 [95% CI] | oracle | gold recall | errors |",
                  "|---|---:|---:|---:|---:|---|---|---:|---:|---:|"]
        for sys_name, s in cond["systems"].items():
            vs = s.get("vs_baseline") or {}
            lines.append(f"| {sys_name} | {s['n']} | {_pct(s['em'])} | {_pct(s['f1'])} | {_pct(s['lenient'])} | "
                         f"{_ci(vs.get('em'))} | {_ci(vs.get('f1'))} | {_pct(s.get('oracle'))} | "
                         f"{_pct(s['support_recall'])} | {s['errors']} |")
        lines += ["", "| system | latency mean / p50 / p95 (s) | overhead × | LLM calls | prompt tok | completion tok "
                  "| support scorings (tok, s) | cached calls | EM-efficiency (1/s) |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
        for sys_name, s in cond["systems"].items():
            lat, llm = s["latency"], s["llm"]
            eq = "" if abs(lat["mean_equivalent"] - lat["mean"]) < 1e-6 else f" (≡ {lat['mean_equivalent']:.1f} uncached)"
            over = "–" if s.get("overhead_vs_baseline") is None else f"{s['overhead_vs_baseline']:.2f}"
            over += " †" if s.get("overhead_across_machines") else ""
            eff = "–" if s["em_efficiency"] is None else f"{s['em_efficiency']:.4f}"
            lines.append(
                f"| {sys_name} | {lat['mean']:.1f} / {lat['p50']:.1f} / {lat['p95']:.1f}{eq} | {over} | "
                f"{llm['calls'] or 0:.1f} | {llm['prompt_tokens'] or 0:.0f} | {llm['completion_tokens'] or 0:.0f} | "
                f"{_scorings(llm)} | {s['cache_hits'] or 0:.1f} | {eff} |")
        escalated = [f"{sys_name} {s['escalated']} of {s['n']}" for sys_name, s in cond["systems"].items()
                     if "escalated" in s]
        if escalated:  # the cascades: how often the gate ran the method
            lines += ["", "Escalated by the gate (the method ran): " + "; ".join(escalated) + "."]
        lines += _across_machines(cond["systems"], results["baseline"])
        lines += _controls_lines(cond, results["baseline"])
        types = sorted({t for s in cond["systems"].values() for t in s["by_type"]})
        if types:
            lines += ["", "EM by question type: " + "; ".join(
                f"{sys_name} " + ", ".join(f"{t} {_pct(s['by_type'][t]['em'])} (n={s['by_type'][t]['n']})"
                                          for t in types if t in s["by_type"]) for sys_name, s in cond["systems"].items())]
        modes = sorted({m for s in cond["systems"].values() for m in s["by_failure_mode"]})
        if modes:
            lines += ["", "| system | " + " | ".join(f"{m} error / trap" for m in modes) + " |",
                      "|---|" + "---|" * len(modes)]
            for sys_name, s in cond["systems"].items():
                cells = [f"{_pct(s['by_failure_mode'][m]['error_rate'])} / {_pct(s['by_failure_mode'][m]['trap_rate'])}"
                         if m in s["by_failure_mode"] else "–" for m in modes]
                lines.append(f"| {sys_name} | " + " | ".join(cells) + " |")
        lines.append("")
    index = results.get("index")
    if index:
        per = ("no extraction: every passage came from the cache" if index["seconds_per_extracted"] is None else
               f"{index['seconds_per_extracted']:.1f} s and {index['tokens_per_extracted']:.0f} LLM tokens per "
               "extracted passage")
        lines += ["## Index time: CausalRAG's graph (`graph_stats.jsonl`)", "",
                  f"{index['builds']} graph build(s) over "
                  + (f"{index['counted']['distinct_passages']} distinct passages" if index.get("all_priced") else
                     f"{index['passages']} passages")
                  + f": {index['extracted']} extracted "
                  f"by {_extracted_by(results)} ({index['llm_calls']} LLM calls, {index['prompt_tokens']} prompt / "
                  f"{index['completion_tokens']} completion tokens, {index['parse_failures']} unparsed"
                  + (f"; {index['replayed']} of them replayed from the run's reply cache, counted at the "
                     f"{index['replayed_seconds']:.0f} s they took when made" if index["replayed"] else "")
                  + f"), {index['cached']} passage reads from the extraction cache; "
                  f"{index['counted']['seconds']:.0f} s in all, {per}"
                  + (f" ({index['counted']['passages']} distinct passages, each counted once at what its extraction "
                     "cost when made)" if index.get("priced") else "") + ". "
                  "Not in the per-question latency above."
                  + (" Timed on more than one machine: " + ", ".join(f"{m} {v:.0%}" for m, v in index["timed_on"].items())
                     + "." if len(index.get("timed_on") or {}) > 1 else ""), ""]
    for variant, systems in results["injection"].items():
        levels = sorted({lv for s in systems.values() for lv in s})
        n = max((s["n"] for by_level in systems.values() for s in by_level.values()), default=0)
        header = ["| system | " + " | ".join(f"N={lv}" for lv in levels) + " |", "|---|" + "---|" * len(levels)]
        lines += [f"## Injection `{variant}`: EM / F1 by N_inject", "",
                  f"Over the {n} questions that every level and system answered.", "", *header]
        for sys_name, by_level in systems.items():
            cells = [f"{_pct(by_level[lv]['em'])} / {_pct(by_level[lv]['f1'])}" if lv in by_level else "–"
                     for lv in levels]
            lines.append(f"| {sys_name} | " + " | ".join(cells) + " |")
        lines += ["", "ΔEM against N=0 (same questions, paired) [95% CI]:", "", *header]
        for sys_name, by_level in systems.items():
            cells = [_ci(by_level[lv]["em_vs_0"]) if lv in by_level and lv else "–" for lv in levels]
            lines.append(f"| {sys_name} | " + " | ".join(cells) + " |")
        lines.append("")
    for name, sweep in results["sweeps"].items():
        pipeline, param = name.rsplit(":", 1)
        values = sweep["values"]
        lines += [f"## Sweep of `{param}` ({pipeline}, other parameters at their defaults)", "",
                  f"Over the questions every value answered; ΔEM against the default ({sweep['default']}), paired.", "",
                  "| value | n | EM | F1 | lenient | ΔEM vs default [95% CI] | latency (s, uncached) |",
                  "|---|---:|---:|---:|---:|---|---:|"]
        for value, s in values.items():
            lines.append(f"| {value} | {s['n']} | {_pct(s['em'])} | {_pct(s['f1'])} | {_pct(s['lenient'])} | "
                         f"{_ci(s.get('em_vs_default'))} | {_num(s['latency_equivalent'])} |")
        lines.append("")
    return "\n".join(lines)


def plots(results: dict[str, Any], out: Path) -> list[Path]:
    """accuracy vs N_inject, λ sensitivity and stacked latency per stage, as PNG files."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    written = []
    for variant, systems in results["injection"].items():
        fig, ax = plt.subplots(figsize=(6, 4))
        for name, by_level in systems.items():
            levels = sorted(by_level)
            ax.plot(levels, [100 * (by_level[lv]["f1"] or 0) for lv in levels], marker="o", label=name)
        ax.set(xlabel="injected passages (N_inject)", ylabel="F1 (%)", title=f"F1 vs N_inject ({variant})")
        ax.legend()
        written.append(_save(fig, out / f"injection_{variant}.png", plt))
    for name, sweep in results["sweeps"].items():  # one plot per numeric sweep of three values or more
        values = sweep["values"]
        try:
            xs = [float(v) for v in values]
        except ValueError:
            continue
        if len(xs) < 3:
            continue
        pipeline, param = name.rsplit(":", 1)
        fig, ax = plt.subplots(figsize=(6, 4))
        for metric in METRICS:
            ax.plot(xs, [100 * (values[v][metric] or 0) for v in values], marker="o", label=metric)
        ax.set(xlabel=param, ylabel="score (%)", title=f"{param} sensitivity ({pipeline})")
        ax.legend()
        written.append(_save(fig, out / f"sensitivity_{pipeline}_{param}.png", plt))
    for name, cond in results["conditions"].items():
        if cond["variant"]:
            continue
        systems = cond["systems"]
        stages = sorted({st for s in systems.values() for st in s["stages"]})
        fig, ax = plt.subplots(figsize=(8, 4))
        bottom = np.zeros(len(systems))
        for stage in stages:
            heights = np.array([s["stages"].get(stage, 0.0) for s in systems.values()])
            ax.bar(list(systems), heights, bottom=bottom, label=stage)
            bottom += heights
        replayed = np.array([s["latency"]["mean_equivalent"] - s["latency"]["mean"] for s in systems.values()])
        if replayed.any():
            ax.bar(list(systems), replayed, bottom=bottom, label="cached LLM calls (replayed)", hatch="//", alpha=0.5)
        ax.set(ylabel="seconds per question", title=f"Latency per stage ({name})")
        ax.tick_params(axis="x", rotation=30)
        ax.legend(fontsize=7)
        fig.tight_layout()
        written.append(_save(fig, out / f"latency_{name}.png", plt))
    return written


def _save(fig: Any, path: Path, plt: Any) -> Path:
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
