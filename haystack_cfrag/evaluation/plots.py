"""The plots of an evaluation, as PNG files beside its report: F1 against the number of injected passages,
the sensitivity to each numeric parameter swept over three values or more, and the latency per stage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from haystack_cfrag.evaluation.statistics import METRICS


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
