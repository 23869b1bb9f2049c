"""The `cfrag` command group and its question commands: ask, compare (the others come from their modules).

    cfrag ask "Who is the lead actor in The Dark Knight?"
    cfrag ask QUESTION --json | --pipeline FILE | -N 2 -K 3 -M 3 --lambda 0.6
    cfrag compare QUESTION

Models default to the embedded ones; `--llm`, `--embedder`, `--scorer` take any spec of `haystack_cfrag.models`.
Arguments are checked before any model loads; every error is one line (`--debug`: the traceback); a run that
produced nothing exits with 1."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import click

from haystack_cfrag import models
from haystack_cfrag.cascade.math import gate_line
from haystack_cfrag.cli.checks import (
    IntRange,
    ParameterText,
    check_model_spec,
    check_run_parameters,
    check_store_spec,
    parse_param_options,
)
from haystack_cfrag.cli.progress import StatusLine
from haystack_cfrag.common.errors import OPEN_ERRORS, error_line, one_line
from haystack_cfrag.common.interrupts import caused_by_interrupt
from haystack_cfrag.common.parameters import clip
from haystack_cfrag.common.redaction import install_log_redaction, redact
from haystack_cfrag.registry import cli_options, query_pipelines, trace_view

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

INTERRUPTED = 130  # the exit code of a command stopped by Ctrl-C (128 + SIGINT)


def _model_options(func: Any) -> Any:
    options = [
        click.option("--store", "store_path", default=None,
                     help="Store spec: PATH.json | faiss:PATH | pgvector:postgresql://…[#TABLE] | "
                          "qdrant:PATH|URL[#COLLECTION] (docs/deployment.md). Default: the embedded demo corpus."),
        click.option("--llm", default=models.EMBEDDED_LLM, show_default=True,
                     help="Chat model: embedded:…, a .gguf path, openai:http://host:port/v1[#model], hf:<id or dir>."),
        click.option("--embedder", default=models.EMBEDDED_EMBEDDER, show_default=True,
                     help="Sentence-transformers model: embedded:…, a hub id or a local folder."),
        click.option("--scorer", default=None,
                     help="Cross-encoder for s(q, e) (hub id or folder); default: embedder cosine."),
        click.option("--device", default=None,
                     help="Device for the local models (embedders, cross-encoders, an hf: reader; a GGUF reader "
                          "offloads its layers there), e.g. cuda:0."),
        click.option("--max-tokens", default=256, show_default=True, type=IntRange(1, 32768),
                     help="Generation limit per LLM call."),
        click.option("--logprobs", is_flag=True,
                     help="Ask the LLM for token log-probabilities (φ_conf in the trace); slower with llama.cpp."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _param_options(func: Any) -> Any:
    func = click.option("--param", "param_texts", multiple=True, metavar="NAME=VALUE",
                        help="Set any parameter of the pipeline's family (repeatable), e.g. --param theta=0.6 (cer), "
                             "--param hops=2 (causal_rag); checked against its table before any model loads.")(func)
    for option, (name, param) in reversed(cli_options().items()):
        func = click.option(option, name, type=ParameterText(param.kind), default=None,
                            help=f"{param.help[:1].upper()}{param.help[1:]}: {param.describe()}.")(func)
    return func


class _Main(click.Group):
    """The `cfrag` group: every error and log line one redacted line (`--debug`: an unexpected one's traceback);
    Ctrl-C is "Interrupted." and exit 130."""

    def invoke(self, ctx: click.Context) -> Any:
        install_log_redaction("haystack_cfrag", "haystack")
        debug = ctx.params.get("debug")
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            if debug:
                raise
            self._interrupted(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort):
            raise
        except click.ClickException as exc:
            if caused_by_interrupt(exc) and not debug:
                self._interrupted(ctx)
            if isinstance(exc, click.UsageError):
                exc.ctx = None  # the message names the option: no usage block around it
            exc.message = redact(exc.message)  # the one error printer: no password of a store spec
            raise
        except Exception as exc:
            if debug:
                raise
            if caused_by_interrupt(exc):
                self._interrupted(ctx)
            raise click.ClickException(error_line(exc)) from exc

    @staticmethod
    def _interrupted(ctx: click.Context) -> None:
        """Ctrl-C, or an ImportError an extension's import made of it (`caused_by_interrupt`): exit 130."""
        click.echo("Interrupted.", err=True)
        ctx.exit(INTERRUPTED)


@click.group(cls=_Main)
@click.version_option(package_name="haystack-cfrag")
@click.option("--debug", is_flag=True, envvar="CFRAG_DEBUG", help="Show tracebacks of unexpected errors.")
def main(debug: bool) -> None:
    """CF-RAG: retrieval-augmented generation robust to the Correlation Trap."""


def _check_inputs(question: str, pipelines: list[str], params: dict[str, Any], store_path: str | None, llm: str,
                  embedder: str, scorer: str | None) -> dict[str, Any]:
    """Fail fast, before any model loads, on any bad argument; the checked parameters (short options and
    `--param`s, each against the tables of the pipelines that have it)."""
    from haystack_cfrag.pipelines.loading import check_pipeline_file  # noqa: PLC0415

    if not question.strip():
        raise click.BadParameter("the question is empty", param_hint="QUESTION")
    for name in pipelines:
        try:
            check_pipeline_file(name)  # the allowlist (and a file of the user's built) before any model loads
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--pipeline") from exc
    texts = params.pop("param_texts", ()) or ()
    for name, value in parse_param_options(tuple(texts)).items():
        if params.get(name) is not None and params[name] != value:
            raise click.BadParameter(f"'{clip(name)}' is set twice, to {clip(repr(params[name]))} and "
                                     f"{clip(repr(value))}", param_hint="--param")
        params[name] = value
    checked = check_run_parameters(params, pipelines)
    if store_path is not None:
        check_store_spec(store_path, create=False)
    check_model_spec(llm, "--llm")
    check_model_spec(embedder, "--embedder")
    if scorer:
        check_model_spec(scorer, "--scorer")
    return checked


def _guarded(func: Any, *args: Any) -> Any:
    """Run a pipeline; a bad parameter or file becomes a one-line error, not a traceback."""
    try:
        return func(*args)
    except (ValueError, FileNotFoundError, KeyError) as exc:
        raise click.ClickException(one_line(exc, typed=False)) from exc


def _runtime(store_path: str | None, llm: str, embedder: str, scorer: str | None, device: str | None,
             max_tokens: int, logprobs: bool, pipelines: list[str] | None = None) -> Any:
    from haystack_cfrag.runtime import Runtime  # noqa: PLC0415  (heavy imports only when needed)
    from haystack_cfrag.stores import open_query_store, parse_store_spec  # noqa: PLC0415
    from haystack_cfrag.stores.demo import demo_spec  # noqa: PLC0415

    spec = parse_store_spec(store_path or demo_spec(embedder))  # parsed once, here: the StoreSpec travels below
    start = time.perf_counter()
    status = StatusLine(label="setup")
    try:
        status("opening the store")
        store = open_query_store(spec if store_path else None, embedder, device=device, progress_bar=True)
        status("loading the models")
        runtime = Runtime(store=store, llm=llm, embedder=embedder, scorer=scorer, device=device,
                          max_tokens=max_tokens, logprobs=logprobs, store_spec=spec,
                          keep_graph=store_path is None,  # the demo's graph is kept beside it, in the cache
                          prefix_states=0)  # one question: no later prompt starts from a kept state
        if pipelines:
            status("preparing the store (the causal graph)")
            runtime.prepare_stores(pipelines)  # before the reader loads: the two peaks never meet
        status("loading the models")
        runtime.warm_up()
    except OPEN_ERRORS as exc:  # a store or model that cannot open
        raise click.ClickException(error_line(exc)) from exc
    finally:
        status.done()
    click.echo(f"[setup] {store.count_documents()} passages, models loaded in {time.perf_counter() - start:.1f} s",
               err=True)
    return runtime


def _ask(runtime: Any, pipeline: str, question: str, params: dict[str, Any]) -> Any:
    """`runtime.ask` with a status line on a terminal's stderr: which stage runs, seconds so far."""
    status = StatusLine(label=Path(pipeline).stem)
    try:
        return _guarded(lambda: runtime.ask(pipeline, question, params, progress=status))
    finally:
        status.done()


def _no_answer(result: Any, pipeline: str) -> str | None:
    """Why a run produced no answer (None when it did)."""
    if result.answer.strip():
        return None
    view = trace_view(pipeline)
    reason = view.why_no_answer(result.trace) if view is not None else "the model's reply held no answer"
    return f"{result.pipeline}: no answer: {reason}"


@main.command()
@click.argument("question")
@click.option("--pipeline", "pipeline", default="cf_rag", show_default=True,
              help=f"A pipeline file, or a shipped name: {', '.join(query_pipelines())}.")
@click.option("--json", "as_json", is_flag=True, help="Print the answer and trace as JSON.")
@_param_options
@_model_options
def ask(question: str, pipeline: str, as_json: bool, store_path: str | None, llm: str, embedder: str,
        scorer: str | None, device: str | None, max_tokens: int, logprobs: bool, **params: Any) -> None:
    """Answer QUESTION and show why: counterfactuals, clusters, drafts, φ scores, Ψ, decision."""
    params = _check_inputs(question, [pipeline], params, store_path, llm, embedder, scorer)
    runtime = _runtime(store_path, llm, embedder, scorer, device, max_tokens, logprobs, [pipeline])
    result = _ask(runtime, pipeline, question, params)
    if as_json:
        click.echo(json.dumps(result.as_dict(), indent=2, ensure_ascii=False))
    else:
        click.echo(click.style(f"Answer: {printable(result.answer)}", bold=True))
        if result.gate is not None:  # a cascade: whether the method ran, and why
            click.echo(gate_line(result.gate))
        view = trace_view(pipeline)
        if result.trace and view is not None:
            click.echo(view.format_trace(result.trace))
        else:
            click.echo("Evidence: " + "; ".join(printable(str(d["title"])) for d in result.documents))
        click.echo(format_cost(result))
    failed = _no_answer(result, pipeline)
    if failed:
        click.echo(failed, err=True)
        sys.exit(1)


@main.command()
@click.argument("question")
@click.option("--pipelines", default="standard_rag,cf_rag", show_default=True,
              help="Comma-separated pipeline names or files, run side by side.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@_param_options
@_model_options
def compare(question: str, pipelines: str, as_json: bool, store_path: str | None, llm: str, embedder: str,
            scorer: str | None, device: str | None, max_tokens: int, logprobs: bool, **params: Any) -> None:
    """Run standard RAG and CF-RAG on the same store and models; show answers, time and LLM usage per stage."""
    names = [name.strip() for name in pipelines.split(",") if name.strip()]
    if not names:
        raise click.BadParameter("names no pipeline", param_hint="--pipelines")
    params = _check_inputs(question, names, params, store_path, llm, embedder, scorer)
    runtime = _runtime(store_path, llm, embedder, scorer, device, max_tokens, logprobs, names)
    results = []
    for name in names:  # each timed from an empty prompt cache: none starts where the one before left the reader
        runtime.models.forget_prompts()
        results.append(_ask(runtime, name, question, params))
    if as_json:
        click.echo(json.dumps([r.as_dict() for r in results], indent=2, ensure_ascii=False))
    else:
        click.echo(f"Question: {printable(question)}\n")
        for name, r in zip(names, results, strict=True):
            click.echo(click.style(f"{r.pipeline:>14}: {printable(r.answer)}", bold=True))
            if r.gate is not None:
                click.echo("                " + gate_line(r.gate))
            view = trace_view(name)
            if r.trace and view is not None:  # why the answer won (CF-RAG: the duel or override check)
                click.echo("\n".join("                " + line for line in view.decision_lines(r.trace)))
            click.echo(format_cost(r, indent="                "))
        base = results[0].seconds or 1e-9
        for r in results[1:]:
            click.echo(f"\n{r.pipeline} / {results[0].pipeline}: {r.seconds / base:.2f}× time, "
                       f"{r.llm['calls']} vs {results[0].llm['calls']} LLM calls")
        if len(results) > 1:
            click.echo("(each pipeline timed from an empty prompt cache; one question's time is noisy: "
                       "cfrag eval gives ratios over many)")
    failed = [reason for r, name in zip(results, names, strict=True) if (reason := _no_answer(r, name))]
    for reason in failed:
        click.echo(reason, err=True)
    if failed and len(failed) == len(results):
        sys.exit(1)


# ---------------------------------------------------------------- formatting
def printable(text: str) -> str:
    """Text fit for a terminal: control, bidi and other format characters become spaces (see `clean_query`)."""
    from haystack_cfrag.common.text import clean_query  # noqa: PLC0415

    return clean_query(text)


def format_cost(result: Any, indent: str = "") -> str:
    """Time per stage and LLM usage of one run."""
    stages = ", ".join(f"{k} {v:.2f}s" for k, v in result.stages.items())
    llm = result.llm
    return (f"{indent}time {result.seconds:.2f} s ({stages})\n"
            f"{indent}LLM: {llm['calls']} calls, {llm['prompt_tokens']} prompt + {llm['completion_tokens']} "
            f"completion tokens, {llm['seconds']:.2f} s"
            + (f"; {llm['scorings']} support scorings ({llm.get('scoring_tokens', 0)} tokens evaluated)"
               if llm.get("scorings") else ""))


def _register_subcommands() -> None:
    """Commands kept in their own modules (indexing, the benchmark, the models, evaluation, serving)."""
    from haystack_cfrag.cli.bench import bench  # noqa: PLC0415
    from haystack_cfrag.cli.evaluate import eval_command  # noqa: PLC0415
    from haystack_cfrag.cli.gate import gate_group  # noqa: PLC0415
    from haystack_cfrag.cli.index import index  # noqa: PLC0415
    from haystack_cfrag.cli.models import models_group  # noqa: PLC0415
    from haystack_cfrag.cli.serve import serve  # noqa: PLC0415

    main.add_command(index)
    main.add_command(bench)
    main.add_command(models_group)
    main.add_command(eval_command)
    main.add_command(gate_group)
    main.add_command(serve)


_register_subcommands()

