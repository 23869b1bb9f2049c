"""The Markdown report (`report.md`) from `results.json`: percentages, differences with 95% interval, wins/losses.

    >>> _pct(0.125), _ci({"difference": 0.1, "low": -0.05, "high": 0.2, "wins": 4, "losses": 1}), _ci(None)
    ('12.5', '+10.0 [-5.0, +20.0] (4↑ 1↓)', '–')
"""

from __future__ import annotations

from typing import Any

from haystack_cfrag.evaluation.controls import kinds_text


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def _pct(value: float | None) -> str:
    return _num(None if value is None else 100 * value)


def _scorings(llm: dict[str, float | None]) -> str:
    """Support scorings per question, with their tokens and seconds ("–": not counted).

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


def _extracted_by(results: dict[str, Any]) -> str:
    """Who extracted the graph, from the run's settings (older runs: "the LLM").

    >>> _extracted_by({"metadata": {"config": {"graph_extractor": "spacy"}}}), _extracted_by({})
    ("the 'spacy' extractor", 'the LLM')
    """
    name = ((results.get("metadata") or {}).get("config") or {}).get("graph_extractor")
    return "the LLM" if name in (None, "llm") else f"the {name!r} extractor"


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
    """The report: one table of answers and one of cost per condition, then the index, injection and sweeps."""
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
              "questions where the answer or some candidate draft is right (EM), the best any arbitration could do.",
              ""]
    for name, cond in results["conditions"].items():
        lines += _condition_lines(name, cond, results["baseline"])
    if results.get("index"):
        lines += _index_lines(results["index"], _extracted_by(results))
    for variant, systems in results["injection"].items():
        lines += _injection_lines(variant, systems)
    for name, sweep in results["sweeps"].items():
        lines += _sweep_lines(name, sweep)
    return "\n".join(lines)


def _condition_lines(name: str, cond: dict[str, Any], baseline: str) -> list[str]:
    """One condition: its answers and their cost per system, the cascades' escalations, the controls, and the
    scores by question type and by failure mode."""
    lines = [f"## Condition `{name}` ({cond['n_questions']} questions)", "",
             "| system | n | EM | F1 | lenient | ΔEM [95% CI] | ΔF1 [95% CI] | oracle | gold recall | errors |",
             "|---|---:|---:|---:|---:|---|---|---:|---:|---:|"]
    for sys_name, s in cond["systems"].items():
        vs = s.get("vs_baseline") or {}
        lines.append(f"| {sys_name} | {s['n']} | {_pct(s['em'])} | {_pct(s['f1'])} | {_pct(s['lenient'])} | "
                     f"{_ci(vs.get('em'))} | {_ci(vs.get('f1'))} | {_pct(s.get('oracle'))} | "
                     f"{_pct(s['support_recall'])} | {s['errors']} |")
    lines += ["", "| system | latency mean / p50 / p95 (s) | overhead × (wall clock) | token model × (all / evaluated) "
              "| LLM calls | prompt tok | completion tok | support scorings (tok, s) | cached calls "
              "| EM-efficiency (1/s) |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for sys_name, s in cond["systems"].items():
        lat, llm = s["latency"], s["llm"]
        eq = "" if abs(lat["mean_equivalent"] - lat["mean"]) < 1e-6 else f" (≡ {lat['mean_equivalent']:.1f} uncached)"
        over = "–" if s.get("overhead_vs_baseline") is None else f"{s['overhead_vs_baseline']:.2f}"
        over += " †" if s.get("overhead_across_machines") else ""
        eff = "–" if s["em_efficiency"] is None else f"{s['em_efficiency']:.4f}"
        tok = s.get("token_overhead_vs_baseline") or {}
        tok_cell = " / ".join(f"{tok[k]:.2f}" for k in ("all", "evaluated") if k in tok) or "–"
        lines.append(
            f"| {sys_name} | {lat['mean']:.1f} / {lat['p50']:.1f} / {lat['p95']:.1f}{eq} | {over} | {tok_cell} | "
            f"{llm['calls'] or 0:.1f} | {llm['prompt_tokens'] or 0:.0f} | {llm['completion_tokens'] or 0:.0f} | "
            f"{_scorings(llm)} | {s['cache_hits'] or 0:.1f} | {eff} |")
    lines += ["", "The token model prices each call's tokens at its model's measured rates "
              "(`evaluation/token_model.py`): a machine's noise cannot move it; the wall clock is what this run took. "
              "Tokens by component, per question:",
              "", "| system | component | calls | prompt tok (reused) | completion tok | scoring tok | token-model s |",
              "|---|---|---:|---:|---:|---:|---:|"]
    for sys_name, s in cond["systems"].items():
        for comp, row in (s.get("by_component") or {}).items():
            lines.append(f"| {sys_name} | {comp or '–'} | {row['calls']:.1f} | {row['prompt_tokens']:.0f} "
                         f"({row['cached_tokens']:.0f}) | {row['completion_tokens']:.0f} | "
                         f"{row['scoring_tokens']:.0f} | {row['seconds']:.2f} |")
    escalated = [f"{sys_name} {s['escalated']} of {s['n']}" for sys_name, s in cond["systems"].items()
                 if "escalated" in s]
    if escalated:  # the cascades: how often the gate ran the method
        lines += ["", "Escalated by the gate (the method ran): " + "; ".join(escalated) + "."]
    lines += _across_machines(cond["systems"], baseline)
    lines += _controls_lines(cond, baseline)
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
    return lines


def _index_lines(index: dict[str, Any], extracted_by: str) -> list[str]:
    """CausalRAG's graph builds (`costs.index_cost`), extracted by `extracted_by`: not in the per-question latency."""
    per = ("no extraction: every passage came from the cache" if index["seconds_per_extracted"] is None else
           f"{index['seconds_per_extracted']:.1f} s and {index['tokens_per_extracted']:.0f} LLM tokens per "
           "extracted passage")
    return ["## Index time: CausalRAG's graph (`graph_stats.jsonl`)", "",
            f"{index['builds']} graph build(s) over "
            + (f"{index['counted']['distinct_passages']} distinct passages" if index.get("all_priced") else
               f"{index['passages']} passages")
            + f": {index['extracted']} extracted "
            f"by {extracted_by} ({index['llm_calls']} LLM calls, {index['prompt_tokens']} prompt / "
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


def _injection_lines(variant: str, systems: dict[str, Any]) -> list[str]:
    """One injection variant (`statistics.injection_tables`): EM / F1 by level, then ΔEM against N=0."""
    levels = sorted({lv for s in systems.values() for lv in s})
    n = max((s["n"] for by_level in systems.values() for s in by_level.values()), default=0)
    header = ["| system | " + " | ".join(f"N={lv}" for lv in levels) + " |", "|---|" + "---|" * len(levels)]
    lines = [f"## Injection `{variant}`: EM / F1 by N_inject", "",
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
    return lines


def _sweep_lines(name: str, sweep: dict[str, Any]) -> list[str]:
    """One parameter's sweep (`statistics.sweep_tables`, "pipeline:parameter"), each value against the default."""
    pipeline, param = name.rsplit(":", 1)
    lines = [f"## Sweep of `{param}` ({pipeline}, other parameters at their defaults)", "",
             f"Over the questions every value answered; ΔEM against the default ({sweep['default']}), paired.", "",
             "| value | n | EM | F1 | lenient | ΔEM vs default [95% CI] | latency (s, uncached) |",
             "|---|---:|---:|---:|---:|---|---:|"]
    for value, s in sweep["values"].items():
        lines.append(f"| {value} | {s['n']} | {_pct(s['em'])} | {_pct(s['f1'])} | {_pct(s['lenient'])} | "
                     f"{_ci(s.get('em_vs_default'))} | {_num(s['latency_equivalent'])} |")
    lines.append("")
    return lines
