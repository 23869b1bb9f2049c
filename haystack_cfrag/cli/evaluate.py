"""`cfrag eval`: the evaluation harness from the command line. Every system and sweep value is checked before the
first question; --out must be cfrag eval's (new, empty, its marker, or a run folder it wrote), else refused in one
line naming what it holds."""

from __future__ import annotations

import json
from pathlib import Path

import click

from haystack_cfrag import models
from haystack_cfrag.cli.checks import IntRange, check_model_spec
from haystack_cfrag.common.errors import one_line
from haystack_cfrag.common.parameters import ParameterError, clip, parse_integer
from haystack_cfrag.evaluation.corpus import CORPUS_MODES, INJECTION_VARIANTS
from haystack_cfrag.evaluation.systems import DEFAULT_SYSTEMS, check_systems, parse_system, sweep_axes, sweep_base
from haystack_cfrag.registry import injection_pipelines, store_preparation

GRAPH = store_preparation()

EVAL_MARKER = ".cfrag-eval.json"


def _ints(text: str) -> list[int]:
    try:
        return [parse_integer(x) for x in text.split(",") if x.strip()]
    except ValueError as exc:
        raise click.BadParameter(f"'{clip(text)}' is not a comma-separated list of integers.") from exc


def _sweep_systems(sweeps: tuple[str, ...]) -> list[str]:
    """`lambda=0,0.2` → ["cf_rag[lambda=0]", "cf_rag[lambda=0.2]"]; `cer:theta=0.5` → ["cer[theta=0.5]"] (checked)."""
    axes = sweep_axes()
    names = []
    for sweep in sweeps:
        param, sep, values = sweep.partition("=")
        param = param.strip()
        if not sep or param not in axes:
            shown = ", ".join(sorted(a for a in axes if ":" not in a))
            raise click.BadParameter(f"'{clip(sweep)}': use PARAM=V1,V2,… with PARAM a family's axis, "
                                     f"FAMILY:NAME (e.g. cer:theta) or a name one family has ({shown}).",
                                     param_hint="--sweep")
        items = [v.strip() for v in values.split(",")]
        if not all(items):
            what = "has an empty value" if any(items) else "names no value"
            raise click.BadParameter(f"'{clip(sweep)}' {what}: use PARAM=V1,V2,…", param_hint="--sweep")
        base, short = sweep_base(axes[param][0]), param.partition(":")[2] or param
        names.extend(_sweep_system(sweep, base, short, value) for value in items)
    return names


def _sweep_system(sweep: str, base: str, short: str, value: str) -> str:
    """The system `base[short=value]`, checked; one line naming the sweep and the parameter otherwise."""
    system = f"{base}[{short}={value}]"
    try:
        parse_system(system)
    except ValueError as exc:  # its message holds the value: shown cut short
        cause = exc.__cause__
        reason = str(cause) if isinstance(cause, ParameterError) else clip(one_line(exc, typed=False), 120)
        raise click.BadParameter(f"'{clip(sweep)}': System '{base}[{short}={clip(value)}]': {reason}",
                                 param_hint="--sweep") from exc
    return system


def _check_systems(specs: str, option: str) -> None:
    """Each system, and each pipeline file's classes (the allowlist) and build, before any model loads."""
    from haystack_cfrag.pipelines.loading import check_pipeline_file  # noqa: PLC0415

    try:
        for system in check_systems(specs):
            check_pipeline_file(system.pipeline)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint=option) from exc


RECORD_FILES = ("records.jsonl", "llm_cache.jsonl", "graph_stats.jsonl")
"""What a run folder may hold besides its records when it is recognised by them alone (no metadata)."""


def made_by_eval(folder: Path) -> bool:
    """Whether `folder` is a run folder cfrag eval wrote before its marker existed: its metadata, or its
    records and nothing but the files written beside them (a `report.md` there without metadata is the user's)."""
    from haystack_cfrag.evaluation.provenance import read_metadata  # noqa: PLC0415
    from haystack_cfrag.stores.safe_files import open_checked  # noqa: PLC0415

    meta = read_metadata(folder)  # through the safe opener: a FIFO there is refused, never waited on
    if meta is not None and {"haystack_cfrag", "config"} <= meta.keys():
        return True
    if any(p.name not in RECORD_FILES for p in folder.iterdir()):
        return False
    try:
        with open_checked(folder / "records.jsonl", "run") as fh:
            first = json.loads(fh.readline(1 << 20))
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(first, dict) and {"condition", "system", "qid"} <= first.keys()


def _check_out(out: Path) -> None:
    """Refuse, before anything is written, an --out folder cfrag eval did not make."""
    from haystack_cfrag.serving.deploy import FolderOwnershipError, owned_folder  # noqa: PLC0415

    try:
        owned_folder(out, "cfrag eval", EVAL_MARKER, adopt=made_by_eval)
    except FolderOwnershipError as exc:
        raise click.BadParameter(str(exc), param_hint="--out") from exc
    links = sorted(p.name for p in out.iterdir() if p.is_symlink()) if out.is_dir() else []
    if links:  # a report.md linking to ~/.bashrc would be written through
        raise click.BadParameter(f"{out} holds links ({', '.join(links[:5])}): cfrag eval never writes through a "
                                 "link; remove them or name another folder.", param_hint="--out")


@click.command("eval")
@click.argument("data", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--format", "fmt", default="auto", show_default=True,
              type=click.Choice(["auto", "hotpotqa", "popqa", "trap", "generic"]))
@click.option("--limit", type=IntRange(min=1), default=100, show_default=True, help="Questions (file order).")
@click.option("--offset", type=IntRange(min=0), default=0, show_default=True)
@click.option("--main-limit", type=IntRange(min=1), default=None,
              help="Questions of the main comparison (default: all of --limit; the pooled store keeps all of --limit).")
@click.option("--corpus", type=click.Choice(CORPUS_MODES), default="pooled", show_default=True,
              help="pooled: every question's passages in one store; per-question: each its own.")
@click.option("--systems", default=",".join(DEFAULT_SYSTEMS), show_default=True,
              help="Comma-separated: names, YAML paths, NAME[param=value,…].")
@click.option("--sweep", "sweeps", multiple=True, metavar="PARAM=V1,V2",
              help="Add a family's pipeline with one parameter swept: CF-RAG's lambda, N, K or M, or any family's "
                   "FAMILY:NAME (cer:theta=0.5,0.7, causal_rag:hops=1,2); repeatable.")
@click.option("--inject", "inject_levels", default="", help="N_inject levels, e.g. 0,2,4,8,16 (per-question corpus).")
@click.option("--inject-variants", default="distractor", show_default=True,
              help=f"Comma-separated among {', '.join(INJECTION_VARIANTS)}.")
@click.option("--inject-systems", default=",".join(injection_pipelines()), show_default=True)
@click.option("--inject-limit", type=IntRange(min=1), default=None, help="Questions per injection level.")
@click.option("--skip-main", is_flag=True, help="Only the injection levels.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("eval-results"),
              show_default=True)
@click.option("--llm", default=models.EMBEDDED_LLM, show_default=True)
@click.option("--embedder", default=models.EMBEDDED_EMBEDDER, show_default=True)
@click.option("--scorer", default=None, help="Cross-encoder for s(q, e).")
@click.option("--device", default=None,
              help="Device for the local models (embedders, cross-encoders, an hf: reader), e.g. cuda:0.")
@click.option("--max-tokens", type=IntRange(min=1), default=256, show_default=True)
@click.option("--no-cache", is_flag=True,
              help="A latency run: make every LLM call (no reply cache), each system with its own model instance.")
@click.option("--graph-extractor", type=click.Choice(list(GRAPH.extractors) if GRAPH else []),
              default=GRAPH.default_extractor if GRAPH else None, show_default=True,
              help="What extracts the graph of causal_rag / cdf_rag: llm (the reader, CausalRAG's prompt), llm-json "
                   "(the same, schema-constrained JSON), spacy (parsing and causal cues, no generation).")
@click.option("--report-only", is_flag=True, help="Rebuild results.json, report.md and plots from the records.")
@click.option("--no-plots", is_flag=True)
def eval_command(data: Path, fmt: str, limit: int, offset: int, main_limit: int | None, corpus: str, systems: str,
                 sweeps: tuple[str, ...], inject_levels: str, inject_variants: str, inject_systems: str,
                 inject_limit: int | None, skip_main: bool, out: Path, llm: str, embedder: str, scorer: str | None,
                 device: str | None, max_tokens: int, no_cache: bool, graph_extractor: str, report_only: bool,
                 no_plots: bool) -> None:
    """Evaluate systems side by side on DATA; results resume from --out.

    --out is a new or empty folder, or one cfrag eval wrote (its marker .cfrag-eval.json, or its
    records): any other folder is refused, and no file cfrag eval did not write is replaced."""
    from haystack_cfrag.evaluation import EvalConfig, run_eval, write_outputs  # noqa: PLC0415
    from haystack_cfrag.evaluation.provenance import ResumeMismatchError  # noqa: PLC0415
    from haystack_cfrag.serving.deploy import mark_folder  # noqa: PLC0415

    if not report_only:
        for spec, option in ((llm, "--llm"), (embedder, "--embedder"), (scorer, "--scorer")):
            if spec:
                check_model_spec(spec, option)
        swept = _sweep_systems(sweeps)
        if systems.strip():
            _check_systems(systems, "--systems")
        if not systems.strip() and not swept and not skip_main:
            raise click.BadParameter("names no system", param_hint="--systems")
        _check_systems(inject_systems, "--inject-systems")
    _check_out(out)
    if not report_only:
        try:
            config = EvalConfig(
                data=str(data), format=fmt, limit=limit, offset=offset, main_limit=main_limit, corpus=corpus,
                systems=[s for s in [systems] if s.strip()] + swept,
                inject_levels=_ints(inject_levels), inject_variants=[v for v in inject_variants.split(",") if v],
                inject_systems=[inject_systems], inject_limit=inject_limit, skip_main=skip_main, out=str(out),
                llm=llm, embedder=embedder, scorer=scorer, device=device, max_tokens=max_tokens,
                cache=not no_cache, graph_extractor=graph_extractor,
            )
        except ValueError as exc:
            raise click.UsageError(str(exc)) from exc
        try:
            run_eval(config)
        except ResumeMismatchError as exc:  # a folder of another run: say what differs, touch nothing
            raise click.ClickException(str(exc)) from exc
    if out.is_dir():
        mark_folder(out, "cfrag eval", EVAL_MARKER)
    results = write_outputs(out, with_plots=not no_plots)
    click.echo(f"{sum(len(c['systems']) for c in results['conditions'].values())} system results → "
               f"{out / 'results.json'}, {out / 'report.md'}")
