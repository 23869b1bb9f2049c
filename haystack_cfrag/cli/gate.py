"""`cfrag gate fit`: fit a cascade's gate on your own labelled questions, and write it where a cascade reads it.

    cfrag eval my_questions.jsonl --systems standard_rag,cf_rag,benchmarks/gate_signals.yml --out runs/mine
    cfrag gate fit --method cf_rag --runs runs/mine --out my_gate.yml                 # the model alone
    cfrag gate fit --method cf_rag --runs runs/mine --cascade cf_rag_auto --out my_cf_rag_auto.yml
    cfrag ask "…" --pipeline my_cf_rag_auto.yml

The model is plain numbers (`cascade.model.GateModel`), checked when a pipeline loads it; in Python,
`load_pipeline("cf_rag_auto", overrides={"gate.model": read_gate_model("my_gate.yml")})`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click
import yaml

from haystack_cfrag.cascade.fit import DEFAULT_C, ONE_SAMPLE_FOLDS, fit_gate
from haystack_cfrag.cascade.model import NEVER, GateModel
from haystack_cfrag.cascade.parameters import GATE_NODE
from haystack_cfrag.common.parameters import clip
from haystack_cfrag.pipelines import parse_yaml, read_yaml
from haystack_cfrag.stores.safe_files import read_text

THRESHOLD_NOTE = "  # the operating point (a request's gate_threshold overrides it)"


def read_gate_model(path: str | Path) -> dict[str, Any]:
    """The model mapping of a file `cfrag gate fit` wrote (the model alone, or a cascade whose gate holds one),
    checked (`GateModel.from_dict`); a one-line ValueError names the file and what is wrong."""
    file = Path(path)
    data = read_yaml(file)  # the one safe YAML read: a regular file, bounded, its aliases too
    if isinstance(data, Mapping) and "components" in data:
        data = _dig(data, "components", GATE_NODE, "init_parameters", "model")
    try:
        return GateModel.from_dict(data).to_dict()
    except ValueError as exc:
        raise ValueError(f"{file}: {exc}") from None


def with_gate_model(text: str, model: dict[str, Any]) -> str:
    r"""A cascade file's text with its gate's `model` replaced and its own `threshold` left out: every other
    character as it was (placed by PyYAML's node marks; a ruamel round trip lost comments).

    >>> text = ("components:\n  gate:\n    init_parameters:\n      threshold: -0.2  # old\n"
    ...         "      model:  # fitted\n")
    >>> m = {"features": ["support"], "means": [0.0], "scales": [1.0], "weights": [-1.0], "intercept": 0.0,
    ...      "threshold": 0.4, "fitted_on": "x"}
    >>> print(with_gate_model(text + "        features: [pile]\n", m), end="")
    components:
      gate:
        init_parameters:
          model:  # fitted
            features: [support]
            means: [0.0]
            scales: [1.0]
            weights: [-1.0]
            intercept: 0.0
            threshold: 0.4  # the operating point (a request's gate_threshold overrides it)
            fitted_on: x
    """
    params = _dig(yaml.compose(text, Loader=yaml.SafeLoader), "components", GATE_NODE, "init_parameters")
    pairs = {key.value: (key, value) for key, value in getattr(params, "value", ())
             if isinstance(key, yaml.ScalarNode)}
    if not isinstance(params, yaml.MappingNode) or "model" not in pairs:
        raise ValueError(f"the cascade has no '{GATE_NODE}' component whose init_parameters hold a model")
    _, node = pairs["model"]
    block = isinstance(node, yaml.MappingNode) and not node.flow_style  # a line per key, as the shipped ones
    lines = yaml.safe_dump(model, sort_keys=False, default_flow_style=None if block else True,
                           width=10**6).strip().splitlines()
    lines = [line + THRESHOLD_NOTE if line.startswith("threshold:") else line for line in lines]
    edits = [(node.start_mark.index, _end(node), ("\n" + " " * node.start_mark.column).join(lines))]
    if "threshold" in pairs:
        key, node = pairs["threshold"]
        if params.flow_style:  # {threshold: 0.3, …}: null is the gate's default (the model's own point)
            edits.append((node.start_mark.index, _end(node), "null"))
        else:  # its whole line, comment included
            line_end = text.find("\n", _end(node))
            line_start = text.rfind("\n", 0, key.start_mark.index) + 1
            edits.append((line_start, len(text) if line_end < 0 else line_end + 1, ""))
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text


def _dig(data: Any, *keys: str) -> Any:
    """`data[k1][k2]…` of a mapping or a YAML mapping node; None where a level is missing or not a mapping."""
    for key in keys:
        if isinstance(data, yaml.MappingNode):
            data = next((v for k, v in data.value if isinstance(k, yaml.ScalarNode) and k.value == key), None)
        else:
            data = data.get(key) if isinstance(data, Mapping) else None
    return data


def _end(node: yaml.Node) -> int:
    """Where a node's own text ends (a block collection's end mark is the next token's: its last child's)."""
    if isinstance(node, yaml.CollectionNode) and not node.flow_style and node.value:
        last = node.value[-1]
        return _end(last[1] if isinstance(node, yaml.MappingNode) else last)
    return node.end_mark.index


def _cascade_with(cascade: str, model: dict[str, Any]) -> str:
    """The cascade file's text with its gate's model replaced (comments and anchors kept)."""
    from haystack_cfrag.registry import resolve  # noqa: PLC0415  (the registry imports every family)

    try:
        path = resolve(cascade).path  # read and checked once already (a bounded, safe YAML read)
        text = with_gate_model(read_text(path, "meta", folder=Path(path.absolute().anchor)), model)
        written = _dig(parse_yaml(text, path), "components", GATE_NODE, "init_parameters", "model")
        if GateModel.from_dict(written) != GateModel.from_dict(model):
            raise ValueError("its gate's model could not be replaced in place")
        return text
    except (OSError, ValueError, yaml.YAMLError, RecursionError) as exc:
        raise click.BadParameter(f"'{cascade}': {clip(str(exc), 300)}", param_hint="--cascade") from None


@click.group("gate")
def gate_group() -> None:
    """A cascade's gate: fit it on measured runs."""


@gate_group.command("fit")
@click.option("--method", required=True,
              help="The always-on method the cascade escalates to (cf_rag, cer, cdf_rag, causal_rag).")
@click.option("--runs", "folders", multiple=True, required=True,
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="`cfrag eval` folders holding standard_rag, the method and a gate reading (repeat).")
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path), help="The file to write (new).")
@click.option("--cascade", default=None,
              help="Write this cascade (a name or file) with the fitted gate, not the model alone.")
@click.option("--c", "c", type=click.FloatRange(min=1e-4, max=1e4), default=DEFAULT_C, show_default=True,
              help="Inverse L2 strength of the logistic fit.")
@click.option("--folds", type=click.IntRange(min=0), default=None,
              help="Hold out K folds of each sample, whole pages together (the id's part before '#'); 0: each sample "
                   f"whole. Default: by sample, or {ONE_SAMPLE_FOLDS} folds for one sample.")
def fit_command(method: str, folders: tuple[Path, ...], out: Path, cascade: str | None, c: float,
                folds: int | None) -> None:
    """Fit a gate: P(the method wins) from standard RAG's reading, cross-validated by sample (or in page-grouped
    folds); print the table."""
    from haystack_cfrag.evaluation.gate_data import examples_from_runs  # noqa: PLC0415

    if out.exists():
        raise click.BadParameter(f"{out} exists: nothing is overwritten", param_hint="--out")
    try:
        examples, missing = examples_from_runs(folders, method)
        result = fit_gate(examples, c=c, folds=folds)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    for sample, n in missing.items():
        click.echo(f"{sample}: {n} question(s) left out (no {method} or standard_rag answer, or no gate reading)")
    kept = sum(r["wins_kept"] for r in result.by_sample) == sum(r["wins"] for r in result.by_sample)
    why = ("never escalates: no point within the budget gains" if result.model.threshold >= NEVER
           else "the least held-out P of a win" if kept else "the most wins net of losses within the budget")
    click.echo(f"operating point: P(win) ≥ {result.model.threshold:.4f} ({why})")
    click.echo(f"held out by {result.held_out_by}")
    click.echo("sample | questions | escalated (held out) | wins kept | losses avoided")
    for row in result.by_sample:
        click.echo(f"{row['sample']} | {row['questions']} | {row['escalated']} ({row['rate']:.0%}) | "
                   f"{row['wins_kept']}/{row['wins']} | {row['losses_avoided']}/{row['losses']}")
    model = result.model.to_dict()
    text = _cascade_with(cascade, model) if cascade else yaml.safe_dump(
        model, sort_keys=False, default_flow_style=None, width=10**6, allow_unicode=True)
    try:
        with out.open("x", encoding="utf-8") as fh:  # never through a link, never over a file
            fh.write(f"# cfrag gate fit --method {clip(method)}: {len(examples)} questions "
                     f"({clip(model['fitted_on'], 500)})\n{text}")
    except OSError as exc:
        raise click.BadParameter(f"{out}: {exc.strerror or exc}; nothing written", param_hint="--out") \
            from None
    click.echo(f"wrote {out}")


__all__ = ["fit_command", "gate_group", "read_gate_model"]
