"""Won / lost / same of each system against standard RAG, per failure mode and axis, with intervals and cost.

    python benchmarks/analysis/trap_outcomes.py runs/timeqa_train ../shared/data/timeqa_train_trap.jsonl
    python benchmarks/analysis/trap_outcomes.py runs/trap84 ../shared/data/trap_dev.jsonl ../shared/data/trap_tune.jsonl

Only the questions every listed system answered are compared (a run still going is read as it stands).
Per system: strict EM, ΔEM against standard RAG with its 95 % paired bootstrap interval, won/lost, the
token-model cost ratio (every prompt token, and the tokens llama.cpp evaluated), and the rows it won or lost,
each with what the win was (`override` by the duel, `reorder`: the same passages in another order, …).
`--systems` picks and orders the systems; `--json` writes the table for a docs page. `--dated-gold` keeps only
the time-qualified rows whose annotated (gold) paragraph dates some part of the question's period
(`undated_gold`): TimeQA's known noise (its data README), a secondary view chosen after the runs, never the figure.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import defaultdict
from pathlib import Path
from statistics import mean
from typing import Any

from run_folder import read_run_records

from haystack_cfrag.common.qualifiers import dating_scores, passage_periods
from haystack_cfrag.evaluation.statistics import paired
from haystack_cfrag.evaluation.token_model import token_seconds

BASE = "standard_rag"


def rows_by_id(paths: list[Path]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for p in paths:
        for line in p.open(encoding="utf-8"):
            row = json.loads(line)
            out[row["id"]] = row
    return out


def table(records: list[dict[str, Any]], rows: dict[str, dict[str, Any]], systems: list[str]) -> dict[str, Any]:
    by = defaultdict(dict)
    for r in records:
        if not r["condition"].startswith("inject"):
            by[r["system"]][r["qid"]] = r
    systems = [s for s in systems if s in by]
    common = sorted(set.intersection(*(set(by[s]) for s in systems))) if systems else []
    base = by[BASE]
    cost_base = [token_seconds(base[q].get("llm")) for q in common]
    out = {"n": len(common), "systems": {}}
    for s in systems:
        recs = [by[s][q] for q in common]
        o = paired(recs, [base[q] for q in common], "em") if s != BASE else None
        cost = [token_seconds(r.get("llm")) for r in recs]
        groups: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
        won, lost = [], []
        for q, r in zip(common, recs, strict=True):
            delta = r["em"] - base[q]["em"]
            row = rows.get(q, {})
            for g in (f"mode:{row.get('failure_mode', '?')}", f"axis:{row.get('axis', '?')}"):
                groups[g][0 if delta > 0 else 1 if delta < 0 else 2] += 1
            if delta:
                (won if delta > 0 else lost).append((q, base[q]["answer"], r["answer"], (r.get("decision") or "")))
        out["systems"][s] = {
            "em": 100 * mean(r["em"] for r in recs) if recs else None,
            "delta": None if o is None else [100 * o["difference"], 100 * o["low"], 100 * o["high"]],
            "won": won, "lost": lost, "groups": dict(groups),
            "cost_all": sum(c["all"] for c in cost) / max(1e-9, sum(c["all"] for c in cost_base)),
            "cost_evaluated": sum(c["evaluated"] for c in cost) / max(1e-9, sum(c["evaluated"] for c in cost_base)),
        }
    return out


def undated_gold(rows: dict[str, dict]) -> list[str]:
    """The ids of time-qualified rows (`axis` temporal) whose gold paragraphs date no part of the question's period
    (`qualifiers.dating`), or state no date at all where the question's period cannot be read ("in 828"; dates as
    `qualifiers.passage_periods` reads them, years of four digits).

    >>> undated_gold({"a": {"question": "Who ruled in 1828?", "gold_docs": [{"content": "In 1827 she married."}]},
    ...               "b": {"question": "Who ruled in 1827?", "gold_docs": [{"content": "In 1827 she married."}]},
    ...               "c": {"question": "Who ruled in 828?", "gold_docs": [{"content": "She married."}]},
    ...               "d": {"question": "Who ruled?", "gold_docs": [{"content": "She married."}], "axis": "entity"}})
    ['a', 'c']
    """
    out = []
    for qid, row in rows.items():
        if row.get("axis", "temporal") != "temporal":
            continue
        gold = [d.get("content") or "" for d in row.get("gold_docs") or []]
        scores = dating_scores(row.get("question") or "", gold)
        if (max(scores, default=0.0) == 0.0) if scores is not None else not any(passage_periods(g) for g in gold):
            out.append(qid)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("data", type=Path, nargs="+")
    parser.add_argument("--systems", default=None, help="comma-separated (default: every system of the folder)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--quiet", action="store_true", help="no per-question lines")
    parser.add_argument("--markdown", action="store_true", help="one Markdown table row per system")
    parser.add_argument("--drop", type=Path, default=None,
                        help="a file of question ids to leave out (first word of each line; # comments)")
    parser.add_argument("--dated-gold", action="store_true",
                        help="only rows whose gold paragraph dates the question's period (post hoc, secondary)")
    args = parser.parse_args()
    records = read_run_records(args.out)
    if args.dated_gold:
        undated = set(undated_gold(rows_by_id(args.data)))
        print(f"--dated-gold: {len(undated)} rows of the data left out (their gold dates no part of the period)")
        records = [r for r in records if r["qid"] not in undated]
    if args.drop:
        lines = args.drop.read_text(encoding="utf-8").splitlines()
        dropped = {line.split()[0] for line in lines if line.strip() and not line.startswith("#")}
        records = [r for r in records if r["qid"] not in dropped]
    systems = (re.split(r",(?![^\[]*\])", args.systems) if args.systems
               else list(dict.fromkeys(r["system"] for r in records)))
    if BASE not in systems:
        systems.insert(0, BASE)
    t = table(records, rows_by_id(args.data), systems)
    print(f"{args.out}: {t['n']} questions answered by every system")
    for s, v in t["systems"].items():
        d = v["delta"]
        shown = "" if d is None else f" Δ {d[0]:+.1f} [{d[1]:+.1f}, {d[2]:+.1f}]  {len(v['won'])}↑ {len(v['lost'])}↓"
        print(f"{s:60s} EM {v['em']:.1f}{shown}  cost {v['cost_all']:.2f}× all, {v['cost_evaluated']:.2f}× evaluated")
        if d is not None:
            print("    " + "  ".join(f"{g} {w}↑{lo}↓{n}=" for g, (w, lo, n) in sorted(v["groups"].items())))
            if not args.quiet:
                for q, b, a, how in v["won"]:
                    print(f"    won  {q}: {b!r} -> {a!r} ({how})")
                for q, b, a, how in v["lost"]:
                    print(f"    lost {q}: {b!r} -> {a!r} ({how})")
    if args.markdown:
        print("| system | EM | Δ EM [95 %] | won / lost | cost × standard RAG (evaluated, every token) |")
        print("|---|---:|---|---|---|")
        for s, v in t["systems"].items():
            d = v["delta"]
            delta = "–" if d is None else f"{d[0]:+.1f} [{d[1]:+.1f}, {d[2]:+.1f}]"
            print(f"| `{s}` | {v['em']:.1f} | {delta} | {len(v['won'])} / {len(v['lost'])} | "
                  f"{v['cost_evaluated']:.2f}×, {v['cost_all']:.2f}× |")
    if args.json:
        args.json.write_text(json.dumps(t, indent=1, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()
