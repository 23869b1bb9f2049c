"""Fit each cascade's gate on measured runs and write its tables and curve (what docs/cascade.md shows).

    python benchmarks/analysis/gate_curves.py OUT --method cf_rag \
        --runs runs/e1_trap_tune --runs runs/replay_trap_dev_family …
    (repeat --method/--runs groups with ';' between them: see docs/cascade.md for the exact command)
    python benchmarks/analysis/gate_curves.py OUT --method cf_rag --runs runs/a,runs/b --folds 5 --shipped cf_rag_auto

For one method: the labelled examples (`evaluation.gate_data`), the fit (`cascade.fit.fit_gate`:
cross-validated by sample, or with `--folds K` in K folds of each sample, whole pages together), with `--shipped`
a row for a cascade's own gate (its model and declared rules, `cascade.math.decide`; in sample wherever its model or
rules were chosen on these runs: a composed figure), then in OUT: `<method>.yml` (the model, as `cfrag gate fit`
writes it), `<method>_curve.md` (escalation against wins kept and losses avoided at every held-out operating point,
with the perfect gate and the always-on method at the ends), `<method>_curve.png`, and one JSON line in
`fits.jsonl` (per-sample held-out table, the model's features and weights).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

from haystack_cfrag.cascade.fit import fit_gate, gate_row
from haystack_cfrag.cascade.math import DECLARED, decide
from haystack_cfrag.cascade.model import NEVER, GateModel
from haystack_cfrag.evaluation.gate_data import examples_from_runs
from haystack_cfrag.registry import resolve


def write(out: Path, method: str, folders: list[str], c: float | None = None, max_rate: float | None = None,
          features: list[str] | None = None, folds: int | None = None, shipped: str | None = None) -> dict:
    examples, missing = examples_from_runs(folders, method)
    options = {**({} if c is None else {"c": c}), **({} if max_rate is None else {"max_rate": max_rate}),
               **({} if not features else {"feature_names": features})}
    result = fit_gate(examples, folds=folds, **options)
    model = result.model.to_dict()
    name = method.split("|")[0].split("[")[0]
    (out / f"{name}.yml").write_text(yaml.safe_dump(model, sort_keys=False, allow_unicode=True), encoding="utf-8")
    rows = result.curve()
    held = ("each sample's questions predicted by a model fitted on the other samples" if result.held_out_by == "sample"
            else f"{result.held_out_by}: each fold predicted by a model fitted on the rest")
    lines = [f"# {method}: the gate's curve over {len(examples)} held-out predictions ({model['fitted_on']})", "",
             f"Held out: {held}. Rows: the perfect gate", "(escalates exactly the method's wins), the fitted gate at "
             "the first operating point reaching each escalation", "rate, the operating point the fit chose, and the "
             "always-on method.", "",
             "| gate | escalated | rate | wins kept | losses avoided |", "|---|---:|---:|---:|---:|"]
    compact = _compact(rows, model["threshold"])
    if shipped:
        compact.insert(-1, shipped_row(shipped, result.examples))
    for r in compact:
        lines.append(f"| {r['gate']} | {r['escalated']} | {r['rate']:.0%} | {r['wins_kept']}/{r['wins']} | "
                     f"{r['losses_avoided']}/{r['losses']} |")
    lines += ["", "| sample (held out) | questions | escalated | wins kept | losses avoided |",
              "|---|---:|---:|---:|---:|"]
    for r in result.by_sample:
        lines.append(f"| {r['sample']} | {r['questions']} | {r['escalated']} ({r['rate']:.0%}) | "
                     f"{r['wins_kept']}/{r['wins']} | {r['losses_avoided']}/{r['losses']} |")
    (out / f"{name}_curve.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    _plot(out / f"{name}_curve.png", method, rows, model["threshold"])
    line = {"method": method, "runs": [Path(f).name for f in folders], "missing": missing,
            "threshold": model["threshold"], "by_sample": result.by_sample, "features": model["features"],
            "weights": model["weights"]}
    with (out / "fits.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps(line, default=int) + "\n")
    return line


def shipped_row(cascade: str, examples: list) -> dict:
    """What a shipped cascade's gate (its model and declared rules, `cascade.math.decide`) escalates of the examples."""
    params = resolve(cascade).data["components"]["gate"]["init_parameters"]
    model = GateModel.from_dict(params["model"])
    rules = {k: params[k] for k in DECLARED if k in params}
    escalated = {i for i, e in enumerate(examples)
                 if decide(e.signals, e.question, model, threshold=model.threshold, **rules).escalate}
    label = f"*the shipped `{cascade}` gate (its model and rules; composed, not held out)*"
    return gate_row(examples, label, escalated)


def _compact(rows: list[dict], threshold: float) -> list[dict]:
    """The perfect gate, the first fitted point at or past each escalation rate, the operating point, always on."""
    fitted = [r for r in rows if r["gate"].startswith("fitted")]
    keep = [rows[0]]
    for target in (0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75):
        row = next((r for r in fitted if r["rate"] >= target), None)
        if row is not None and row not in keep:
            keep.append(row)
    point = _point(fitted, threshold) if threshold < NEVER else {**rows[0], "escalated": 0, "rate": 0.0, "wins_kept": 0}
    if point is not None:
        shipped = f"≥ {threshold:.4f}" if threshold < NEVER else "1.0: never escalates"
        keep = [r for r in keep if r is not point] + [{**point, "gate": f"**the fit's operating point, {shipped}**"}]
    return [rows[0], *sorted(keep[1:], key=lambda r: r["rate"]), rows[-1]]


def _point(fitted: list[dict], threshold: float) -> dict | None:
    """The fitted row holding what the operating point escalates (the lowest listed probability at or above it)."""
    above = [r for r in fitted if float(r["gate"].split("≥ ")[1]) >= threshold]
    return above[-1] if above else None


def _plot(path: Path, method: str, rows: list[dict], threshold: float) -> None:
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fitted = [r for r in rows if r["gate"].startswith("fitted")]
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    ax.plot([r["rate"] * 100 for r in fitted], [r["wins_kept"] for r in fitted], drawstyle="steps-post",
            label="fitted gate (held out): wins kept")
    if any(r["losses"] for r in rows):
        ax.plot([r["rate"] * 100 for r in fitted], [r["losses"] - r["losses_avoided"] for r in fitted],
                drawstyle="steps-post", linestyle="--", label="losses let through")
    perfect, always = rows[0], rows[-1]
    ax.scatter([perfect["rate"] * 100], [perfect["wins_kept"]], marker="*", s=120, label="perfect gate")
    ax.scatter([always["rate"] * 100], [always["wins_kept"]], marker="s", label="always on")
    point = _point(fitted, threshold)
    if point:
        ax.axvline(point["rate"] * 100, color="grey", linewidth=0.8, label=f"operating point ({point['rate']:.0%})")
    ax.set_xlabel("questions escalated (%)")
    ax.set_ylabel("questions")
    ax.set_title(f"{method}: the gate's curve")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--method", action="append", required=True)
    parser.add_argument("--runs", action="append", required=True,
                        help="folders, ',' between them, one --runs per --method")
    parser.add_argument("--c", type=float, default=None)
    parser.add_argument("--max-rate", action="append", type=float, default=None,
                        help="the escalation budget of each --method (default: the fit's)")
    parser.add_argument("--features", default=None, help="comma-separated features (default: the fit's)")
    parser.add_argument("--folds", type=int, default=None,
                        help="K folds of each sample, whole pages together (default: by sample)")
    parser.add_argument("--shipped", default=None, help="add a row for this cascade's own gate (e.g. cf_rag_auto)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    budgets = args.max_rate or [None] * len(args.method)
    for method, folders, budget in zip(args.method, args.runs, budgets, strict=True):
        features = args.features.split(",") if args.features else None
        line = write(args.out, method, folders.split(","), args.c, budget, features, args.folds, args.shipped)
        print(json.dumps({k: line[k] for k in ("method", "threshold", "by_sample", "missing")}, default=int))


if __name__ == "__main__":
    main()
