"""`cfrag gate fit`: fit a cascade's gate on your own labelled questions, and write it where a cascade reads it.

    cfrag eval my_questions.jsonl --systems standard_rag,cf_rag,benchmarks/gate_signals.yml --out runs/mine
    cfrag gate fit --method cf_rag --runs runs/mine --out my_gate.yml                 # the model alone
    cfrag gate fit --method cf_rag --runs runs/mine --cascade cf_rag_auto --out my_cf_rag_auto.yml
    cfrag ask "…" --pipeline my_cf_rag_auto.yml

The model is plain numbers (`cascade.model.GateModel`), checked when a pipeline loads it; in Python,
`load_pipeline("cf_rag_auto", overrides={"gate.model": read_gate_model("my_gate.yml")})`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import yaml

from haystack_cfrag.cascade.fit import DEFAULT_C, fit_gate
from haystack_cfrag.cascade.model import GateModel
from haystack_cfrag.cascade.parameters import GATE_NODE
from haystack_cfrag.pipelines import read_yaml

MAX_GATE_FILE = 1 << 20


def read_gate_model(path: str | Path) -> dict[str, Any]:
    """The model mapping of a file `cfrag gate fit` wrote (the model alone, or a cascade whose gate holds one),
    checked (`GateModel.from_dict`); a ValueError names the file and what is wrong."""
    file = Path(path)
    if not file.is_file() or file.stat().st_size > MAX_GATE_FILE:
        raise ValueError(f"{file}: not a regular file of at most {MAX_GATE_FILE} bytes.")
    data = read_yaml(file)
    if isinstance(data, dict) and "components" in data:
        data = (((data.get("components") or {}).get(GATE_NODE) or {}).get("init_parameters") or {}).get("model")
    try:
        return GateModel.from_dict(data).to_dict()
    except ValueError as exc:
        raise ValueError(f"{file}: {exc}") from None


def gate_model_lines(model: dict[str, Any], indent: str = "      ") -> list[str]:
    """The `model:` entry of a gate's init_parameters, as YAML lines (flow lists of plain numbers)."""
    inner = indent + "  "
    lines = [f"{indent}model:                        # the fitted gate (`cfrag gate fit`, docs/cascade.md): "
             "P(the method wins) from standard RAG's reading"]
    for key in ("features", "means", "scales", "weights"):
        lines.append(f"{inner}{key}: [{', '.join(str(v) for v in model[key])}]")
    lines += [f"{inner}intercept: {model['intercept']}",
              f"{inner}threshold: {model['threshold']}            # the operating point (a request's gate_threshold overrides it)",
              f"{inner}fitted_on: {json.dumps(model.get('fitted_on', ''))}"]
    return lines


def with_gate_model(text: str, model: dict[str, Any]) -> str:
    r"""A cascade file's text with its gate's `model` (and any `threshold`) replaced, every other line as it was.

    >>> text = "components:\n  gate:\n    type: G\n    init_parameters:\n      threshold: -0.2\n      answer_prefix: A\n"
    >>> m = {"features": ["support"], "means": [0.0], "scales": [1.0], "weights": [-1.0], "intercept": 0.0,
    ...      "threshold": 0.4, "fitted_on": "x"}
    >>> print(with_gate_model(text, m).split("init_parameters:")[1].splitlines()[2].strip())
    features: [support]
    """
    lines = text.splitlines()
    try:
        start = lines.index(f"  {GATE_NODE}:")
        params = next(i for i in range(start + 1, len(lines)) if lines[i].strip() == "init_parameters:")
    except (ValueError, StopIteration):
        raise ValueError(f"the cascade has no '{GATE_NODE}' component with init_parameters") from None
    out, i, indent = lines[: params + 1], params + 1, "      "
    while i < len(lines) and (lines[i].startswith(indent) or not lines[i].strip()):
        key = lines[i][len(indent):].split(":", 1)[0] if lines[i].startswith(indent) and lines[i][len(indent)] != " " else None
        if key in ("model", "threshold"):
            i += 1
            while i < len(lines) and lines[i].startswith(indent + " "):  # the old entry's own lines
                i += 1
            continue
        out.append(lines[i])
        i += 1
    out[params + 1 : params + 1] = gate_model_lines(model, indent)
    return "\n".join(out + lines[i:]) + "\n"


def _cascade_with(cascade: str, model: dict[str, Any]) -> str:
    """The cascade file's text with its gate's model replaced (comments and anchors kept)."""
    from haystack_cfrag.registry import resolve  # noqa: PLC0415  (the registry imports every family)

    try:
        return with_gate_model(Path(resolve(cascade).path).read_text(encoding="utf-8"), model)
    except ValueError as exc:
        raise click.BadParameter(f"'{cascade}': {exc}", param_hint="--cascade") from None


@click.group("gate")
def gate_group() -> None:
    """A cascade's gate: fit it on measured runs."""


@gate_group.command("fit")
@click.option("--method", required=True, help="The always-on method the cascade escalates to (cf_rag, cer, cdf_rag, causal_rag).")
@click.option("--runs", "folders", multiple=True, required=True,
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="`cfrag eval` folders holding standard_rag, the method and a gate reading (repeat).")
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path), help="The file to write (new).")
@click.option("--cascade", default=None, help="Write this cascade (a name or file) with the fitted gate, not the model alone.")
@click.option("--c", "c", type=click.FloatRange(min=1e-4, max=1e4), default=DEFAULT_C, show_default=True,
              help="Inverse L2 strength of the logistic fit.")
def fit_command(method: str, folders: tuple[Path, ...], out: Path, cascade: str | None, c: float) -> None:
    """Fit a gate: P(the method wins) from standard RAG's reading, cross-validated by sample; print the table."""
    from haystack_cfrag.evaluation.gate_data import examples_from_runs  # noqa: PLC0415

    if out.exists():
        raise click.BadParameter(f"{out} exists: nothing is overwritten", param_hint="--out")
    try:
        examples, missing = examples_from_runs(folders, method)
        result = fit_gate(examples, c=c)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    for sample, n in missing.items():
        click.echo(f"{sample}: {n} question(s) left out (no {method} or standard_rag answer, or no gate reading)")
    click.echo(f"operating point: P(win) ≥ {result.model.threshold:.4f} (the least held-out P of a win)")
    click.echo("sample | questions | escalated (held out) | wins kept | losses avoided")
    for row in result.by_sample:
        click.echo(f"{row['sample']} | {row['questions']} | {row['escalated']} ({row['rate']:.0%}) | "
                   f"{row['wins_kept']}/{row['wins']} | {row['losses_avoided']}/{row['losses']}")
    model = result.model.to_dict()
    text = _cascade_with(cascade, model) if cascade else yaml.safe_dump(model, sort_keys=False, allow_unicode=True)
    out.write_text(f"# cfrag gate fit --method {method}: {len(examples)} questions ({model['fitted_on']})\n" + text,
                   encoding="utf-8")
    click.echo(f"wrote {out}")


__all__ = ["fit_command", "gate_group", "read_gate_model"]
