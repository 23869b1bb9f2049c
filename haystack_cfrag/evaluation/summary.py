"""From per-question records to `results.json`, a Markdown report and PNG plots (gathering `statistics`,
`costs`, `report` and `plots`).

Usage:
    >>> recs = [{"condition": "pooled", "system": s, "qid": q, "em": e, "f1": e, "lenient": e,
    ...          "support_recall": None, "seconds": 1.0, "seconds_equivalent": 1.0, "stages": {},
    ...          "llm": {"calls": 1}, "cache_hits": 0, "error": None, "qtype": "bridge", "params": {},
    ...          "pipeline": s, "inject": 0, "variant": None}
    ...         for s, q, e in [("standard_rag", "a", 0.0), ("standard_rag", "b", 1.0),
    ...                         ("cf_rag", "a", 1.0), ("cf_rag", "b", 1.0)]]
    >>> res = summarize(recs)
    >>> res["conditions"]["pooled"]["systems"]["cf_rag"]["vs_baseline"]["em"]["difference"]
    0.5
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from haystack import logging

from haystack_cfrag.common.files import replace_text
from haystack_cfrag.evaluation.controls import against_controls
from haystack_cfrag.evaluation.costs import GRAPH_STATS, cost_summary, index_cost, overhead, timed_shares
from haystack_cfrag.evaluation.plots import plots
from haystack_cfrag.evaluation.provenance import read_metadata
from haystack_cfrag.evaluation.report import markdown
from haystack_cfrag.evaluation.statistics import METRICS, injection_tables, paired, scores, sweep_tables
from haystack_cfrag.registry import BASELINE, controls

logger = logging.getLogger(__name__)


def read_records(out: Path, name: str = "records.jsonl") -> list[dict[str, Any]]:
    """Every record of an output folder's `name` file (or `graph_stats.jsonl`) through the safe opener; a line
    that is not a JSON object is skipped with a warning.

    :raises ValueError: one line naming the file: a FIFO, a device, a link out of the folder, too large.
    """
    from haystack_cfrag.stores.safe_files import read_text  # noqa: PLC0415  (the stores package is large)

    path = Path(out) / name
    try:
        text = read_text(path, "run")
    except FileNotFoundError:
        return []
    records = []
    for line in filter(str.strip, text.splitlines()):
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):  # ValueError: not JSON, or an integer of more than 4,300 digits
            record = None
        if isinstance(record, dict):
            records.append(record)
        else:
            logger.warning("Skipping an unreadable line in {path}", path=str(path))
    return records


def write_outputs(out: Path, *, with_plots: bool = True) -> dict[str, Any]:
    """`results.json`, `report.md` and the plots of an output folder, from its records and metadata."""
    out = Path(out)
    records = read_records(out)
    if not records:
        raise ValueError(f"No records in {out}: run `cfrag eval` first.")
    metadata = read_metadata(out)
    index = index_cost(read_records(out, GRAPH_STATS))
    results = {"metadata": metadata, **summarize(records), "index": index}
    replace_text(out / "results.json", json.dumps(results, indent=2, default=str))  # a link there: replaced
    report = markdown(results, metadata)
    if with_plots:
        images = plots(results, out)
        report += "\n## Plots\n\n" + "\n".join(f"![{p.stem}]({p.name})" for p in images) + "\n"
    replace_text(out / "report.md", report)
    return results


def _system_summary(recs: list[dict[str, Any]]) -> dict[str, Any]:
    """One system's scores and cost, with its EM per uncached-equivalent second and the machines it was timed on."""
    quality, cost = scores(recs), cost_summary(recs)
    em, latency = quality["em"] or 0.0, cost["latency"]["mean_equivalent"]
    return {**quality, **cost, "em_efficiency": em / latency if latency > 0 else None, "timed_on": timed_shares(recs)}


def summarize(records: list[dict[str, Any]], baseline: str = BASELINE) -> dict[str, Any]:
    """Aggregate records by condition and system (see the module doc)."""
    grouped: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        grouped[r["condition"]][r["system"]].append(r)
    conditions: dict[str, Any] = {}
    for cond, systems in grouped.items():
        out = {name: _system_summary(recs) for name, recs in systems.items()}
        base = systems.get(baseline)
        for name, s in out.items():
            if base and name != baseline:
                s["vs_baseline"] = {m: paired(systems[name], base, m) for m in METRICS}
            if base:
                s.update(overhead(s, out[baseline]))
        first = next(iter(systems.values()))
        conditions[cond] = {"inject": first[0].get("inject", 0), "variant": first[0].get("variant"),
                            "n_questions": len({r["qid"] for rs in systems.values() for r in rs}), "systems": out,
                            "controls": against_controls(systems, controls(), baseline, paired)}
    return {"baseline": baseline, "conditions": conditions, "injection": injection_tables(records),
            "sweeps": sweep_tables(records)}
