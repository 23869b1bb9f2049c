"""What the systems and the index cost: latency (where timed), LLM calls and tokens, support scorings, overhead
against the baseline (on uncached-equivalent seconds), and CausalRAG's graph builds (`graph_stats.jsonl`).

    >>> base = cost_summary([{"seconds": 1.0, "seconds_equivalent": 2.0, "llm": {"calls": 1}}])
    >>> base["latency"]["mean"], base["latency"]["mean_equivalent"], base["llm"]["calls"], base["llm"]["scorings"]
    (1.0, 2.0, 1.0, None)
    >>> overhead({"latency": {"mean_equivalent": 5.0}, "timed_on": {"a1": 1.0}}, {**base, "timed_on": {"a1": 1.0}})
    {'overhead_vs_baseline': 2.5, 'overhead_across_machines': False, 'token_overhead_vs_baseline': {}}
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from haystack_cfrag.common.timing import UNKNOWN_MACHINE
from haystack_cfrag.evaluation.statistics import mean_or_none
from haystack_cfrag.evaluation.token_model import by_component, token_seconds

LLM_COUNTS = ("calls", "prompt_tokens", "completion_tokens")
"""Chat calls and their tokens, per question (0 for a question that failed)."""
SCORING_COUNTS = ("scorings", "scoring_tokens", "scoring_seconds")
"""The reader's support scorings, their tokens and seconds, per question (None in records before they were counted)."""


def cost_summary(recs: list[dict[str, Any]]) -> dict[str, Any]:
    """One system's cost per question: latency, each stage's mean seconds, LLM calls and tokens, scorings, hits."""
    seconds = [r["seconds"] for r in recs]
    equivalent = [r.get("seconds_equivalent", r["seconds"]) for r in recs]
    stages: dict[str, list[float]] = defaultdict(list)
    for r in recs:
        for stage, value in (r.get("stages") or {}).items():
            stages[stage].append(value)
    return {
        "latency": {"mean": float(np.mean(seconds)), "p50": float(np.median(seconds)),
                    "p95": float(np.quantile(seconds, 0.95)), "mean_equivalent": float(np.mean(equivalent))},
        "stages": {k: float(np.mean(v)) for k, v in sorted(stages.items())},
        "llm": {**{k: mean_or_none([(r.get("llm") or {}).get(k, 0) for r in recs]) for k in LLM_COUNTS},
                **{k: mean_or_none([(r.get("llm") or {}).get(k) for r in recs]) for k in SCORING_COUNTS}},
        "cache_hits": mean_or_none([r.get("cache_hits", 0) for r in recs]),
        "token_model": {k: float(np.mean([token_seconds(r.get("llm"))[k] for r in recs]))
                        for k in ("all", "evaluated")},
        "by_component": by_component(recs),
    }


def overhead(system: dict[str, Any], baseline: dict[str, Any]) -> dict[str, Any]:
    """A system's uncached-equivalent latency over the baseline's, and whether they were timed on different
    machines; nothing when the baseline took no time."""
    base_latency = baseline["latency"]["mean_equivalent"]
    if not base_latency:
        return {}
    tokens, base_tokens = system.get("token_model") or {}, baseline.get("token_model") or {}
    return {"overhead_vs_baseline": system["latency"]["mean_equivalent"] / base_latency,
            "overhead_across_machines": machines_differ(system["timed_on"], baseline["timed_on"]),
            "token_overhead_vs_baseline": {k: tokens[k] / base_tokens[k] for k in ("all", "evaluated")
                                           if tokens.get(k) and base_tokens.get(k)}}


GRAPH_STATS = "graph_stats.jsonl"
"""CausalRAG's graph builds of an output folder: one line per build, a resumed run's load included."""


def index_cost(builds: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The graph builds summed, with the cost per extracted passage, each counted once (`counted_once`; a reload
    from the extraction cache is `cached`, one through the reply cache `replayed`); None: no graph was built.

    >>> cost = index_cost([{"passages": 4, "extracted": 4, "llm_calls": 4, "prompt_tokens": 300,
    ...                     "completion_tokens": 100, "seconds": 40.0},
    ...                    {"passages": 4, "cached": 4, "seconds": 1.0}])
    >>> cost["builds"], cost["extracted"], cost["cached"], cost["seconds_per_extracted"], cost["tokens_per_extracted"]
    (2, 4, 4, 10.25, 100.0)
    >>> index_cost([{"passages": 4, "extracted": 4, "replayed": 4, "seconds": 0.4,
    ...              "replayed_seconds": 39.6}])["replayed"]
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


def counted_once(builds: list[dict[str, Any]]) -> dict[str, Any]:
    """The graph builds' extraction cost, each distinct passage counted once: passages, seconds (by machine) and
    tokens. A priced build (`passage_costs`) counts its time outside the calls and each new passage's price when
    made (unknown prices not counted); an unpriced build counts whole. `distinct_passages`: the graph's.

    >>> priced = {"how": "extracted", "seconds": 10.0, "timed_on": {"a1": 10.0}, "prompt_tokens": 90,
    ...           "completion_tokens": 10}
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
    """The graph's chunks whose extraction reply did not parse, each passage once (a price's `unparsed`; else the
    build's `parse_failures` unless a later build says it per passage).

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


def timed_shares(recs: list[dict[str, Any]]) -> dict[str, float]:
    """The share of the records' uncached-equivalent seconds timed on each machine (untagged: "unknown").

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
    """Whether two systems' seconds were timed on different machines (shares above `floor`).

    >>> machines_differ({"a1": 1.0}, {"a1": 0.995, "b2": 0.005}), machines_differ({"a1": 1.0}, {"unknown": 1.0})
    (False, True)
    """
    return {m for m, v in a.items() if v > floor} != {m for m, v in b.items() if v > floor}
