"""The `cfrag` command: ask, compare, index (evaluation and serving come as sub-commands too).

    cfrag ask "Who is the lead actor in The Dark Knight?"
    cfrag ask QUESTION --json | --pipeline FILE | -N 2 -K 3 -M 3 --lambda 0.6
    cfrag compare QUESTION
    cfrag index docs/*.md notes.pdf passages.jsonl --store my_store.json
    cfrag index passages.jsonl --store faiss:stores/demo      (or pgvector:postgresql://…, qdrant:PATH|URL)

Models default to the embedded ones (no keys, no hub); `--llm`, `--embedder` and `--scorer`
take any spec of `haystack_cfrag.models` (a GGUF path, openai:URL, a hub id or folder).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import click

from haystack_cfrag import models

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")


def _model_options(func: Any) -> Any:
    options = [
        click.option("--store", "store_path", default=None,
                     help="Store spec: PATH.json | faiss:PATH | pgvector:postgresql://…[#TABLE] | "
                          "qdrant:PATH|URL[#COLLECTION] (docs/deployment.md). Default: the embedded demo corpus."),
        click.option("--llm", default=models.EMBEDDED_LLM, show_default=True,
                     help="Chat model: embedded:…, a .gguf path, openai:http://host:port/v1[#model], hf:<id or dir>."),
        click.option("--embedder", default=models.EMBEDDED_EMBEDDER, show_default=True,
                     help="Sentence-transformers model: embedded:…, a hub id or a local folder."),
        click.option("--scorer", default=None, help="Cross-encoder for s(q, e) (hub id or folder); default: embedder cosine."),
        click.option("--device", default=None, help="Device for embedders/cross-encoders, e.g. cuda:0."),
        click.option("--max-tokens", default=256, show_default=True, help="Generation limit per LLM call."),
        click.option("--logprobs", is_flag=True,
                     help="Ask the LLM for token log-probabilities (φ_conf in the trace); 1.5-3× slower with llama.cpp."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _param_options(func: Any) -> Any:
    options = [
        click.option("-N", "n_counterfactuals", type=int, default=None, help="Counterfactual queries (N)."),
        click.option("-K", "n_clusters", type=int, default=None, help="Evidence clusters (K)."),
        click.option("-M", "n_subsets", type=int, default=None, help="Parallel drafts (M)."),
        click.option("--lambda", "causal_weight", type=float, default=None, help="Causal weight λ in Ψ."),
        click.option("--seed", "random_state", type=int, default=None, help="Seed of the stratifier."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


@click.group()
@click.version_option(package_name="haystack-cfrag")
def main() -> None:
    """CF-RAG: retrieval-augmented generation robust to the Correlation Trap."""


def _check_inputs(question: str, pipelines: list[str]) -> None:
    """Fail fast, before any model loads, on an empty question or an unknown pipeline."""
    from haystack_cfrag.runtime import pipeline_path  # noqa: PLC0415

    if not question.strip():
        raise click.BadParameter("the question is empty", param_hint="QUESTION")
    for name in pipelines:
        try:
            pipeline_path(name)
        except FileNotFoundError as exc:
            raise click.BadParameter(str(exc), param_hint="--pipeline") from exc


def _guarded(func: Any, *args: Any) -> Any:
    """Run a pipeline; a bad parameter or file becomes a one-line error, not a traceback."""
    try:
        return func(*args)
    except (ValueError, FileNotFoundError, KeyError) as exc:
        raise click.ClickException(str(exc)) from exc


def _runtime(store_path: str | None, llm: str, embedder: str, scorer: str | None, device: str | None,
             max_tokens: int, logprobs: bool) -> Any:
    from haystack_cfrag.runtime import Runtime  # noqa: PLC0415  (heavy imports only when needed)
    from haystack_cfrag.store import open_model_store  # noqa: PLC0415
    from haystack_cfrag.stores import open_document_store, parse_store_spec  # noqa: PLC0415

    start = time.perf_counter()
    spec = parse_store_spec(store_path) if store_path else None
    if spec is None or spec.kind == "memory":
        store = open_model_store(Path(spec.location) if spec else None, embedder, device=device, progress_bar=True)
    else:
        try:
            store = open_document_store(spec)
        except FileNotFoundError as exc:
            raise click.ClickException(str(exc)) from exc
    runtime = Runtime(store=store, llm=llm, embedder=embedder, scorer=scorer, device=device, max_tokens=max_tokens,
                      logprobs=logprobs)
    runtime.warm_up()
    click.echo(f"[setup] {store.count_documents()} passages, models loaded in {time.perf_counter() - start:.1f} s",
               err=True)
    return runtime


@main.command()
@click.argument("question")
@click.option("--pipeline", "pipeline", default="cf_rag", show_default=True,
              help="A pipeline file, or a shipped name: cf_rag, cf_rag_fast, standard_rag.")
@click.option("--json", "as_json", is_flag=True, help="Print the answer and trace as JSON.")
@_param_options
@_model_options
def ask(question: str, pipeline: str, as_json: bool, store_path: str | None, llm: str, embedder: str,
        scorer: str | None, device: str | None, max_tokens: int, logprobs: bool, **params: Any) -> None:
    """Answer QUESTION and show why: counterfactuals, clusters, drafts, φ scores, Ψ, decision."""
    _check_inputs(question, [pipeline])
    runtime = _runtime(store_path, llm, embedder, scorer, device, max_tokens, logprobs)
    result = _guarded(runtime.ask, pipeline, question, params)
    if as_json:
        click.echo(json.dumps(result.as_dict(), indent=2, ensure_ascii=False))
        return
    click.echo(click.style(f"Answer: {result.answer}", bold=True))
    if result.trace:
        click.echo(format_trace(result.trace))
    else:
        click.echo("Evidence: " + "; ".join(str(d["title"]) for d in result.documents))
    click.echo(format_cost(result))


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
    _check_inputs(question, names)
    runtime = _runtime(store_path, llm, embedder, scorer, device, max_tokens, logprobs)
    results = [_guarded(runtime.ask, name, question, params) for name in names]
    if as_json:
        click.echo(json.dumps([r.as_dict() for r in results], indent=2, ensure_ascii=False))
        return
    click.echo(f"Question: {question}\n")
    for r in results:
        click.echo(click.style(f"{r.pipeline:>14}: {r.answer}", bold=True))
        click.echo(format_cost(r, indent="                "))
    base = results[0].seconds or 1e-9
    for r in results[1:]:
        click.echo(f"\n{r.pipeline} / {results[0].pipeline}: {r.seconds / base:.2f}× time, "
                   f"{r.llm['calls']} vs {results[0].llm['calls']} LLM calls")


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--store", "store_path", required=True,
              help="Store to create or extend: PATH.json | faiss:PATH[#INDEX] | pgvector:postgresql://…[#TABLE] | "
                   "qdrant:PATH|URL[#COLLECTION].")
@click.option("--embedder", default=models.EMBEDDED_EMBEDDER, show_default=True)
@click.option("--device", default=None)
@click.option("--words", default=190, show_default=True, help="Words per passage (≈ 250 tokens).")
@click.option("--overlap", default=30, show_default=True, help="Words shared by consecutive passages.")
def index(paths: tuple[Path, ...], store_path: str, embedder: str, device: str | None, words: int,
          overlap: int) -> None:
    """Split text, Markdown, PDF or JSONL files into passages, embed them and write them to a store."""
    from haystack.document_stores.types import DuplicatePolicy  # noqa: PLC0415

    from haystack_cfrag.store import convert_files, split_documents  # noqa: PLC0415
    from haystack_cfrag.stores import (  # noqa: PLC0415
        close_document_store,
        open_document_store,
        parse_store_spec,
        redact,
        save_document_store,
    )

    try:
        spec = parse_store_spec(store_path)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--store") from exc

    files = [f for p in paths for f in (sorted(x for x in p.rglob("*") if x.is_file()) if p.is_dir() else [p])]
    start = time.perf_counter()
    passages = split_documents(convert_files(files), words=words, overlap=overlap)
    doc_embedder = models.document_embedder(embedder, device=device, progress_bar=True)
    doc_embedder.warm_up()
    embedded = doc_embedder.run(documents=passages)["documents"]
    dim = len(embedded[0].embedding) if embedded and embedded[0].embedding is not None else None
    store = open_document_store(spec, embedding_dim=dim, create=True)
    try:
        written = store.write_documents(embedded, policy=DuplicatePolicy.OVERWRITE)
        save_document_store(store, spec)
        count = store.count_documents()
    finally:
        close_document_store(store)
    where = spec.location if spec.kind == "memory" else redact(str(spec))
    click.echo(f"{len(files)} files → {len(passages)} passages, {written} written; store has "
               f"{count} in {time.perf_counter() - start:.1f} s → {where}")


@main.command()
@click.option("--sizes", default="20,60,200", show_default=True, help="Candidate document counts.")
@click.option("--draft-seconds", type=float, default=None,
              help="Time of one draft generation to compare with; default: measure one with --llm.")
@click.option("--llm", default=models.EMBEDDED_LLM, show_default=True)
def bench(sizes: str, draft_seconds: float | None, llm: str) -> None:
    """Time the non-generative stages (dedup, stratifier, arbitration) at several candidate counts."""
    from haystack_cfrag.evaluation.bench import format_rows, run_benchmark  # noqa: PLC0415

    rows = run_benchmark(tuple(int(x) for x in sizes.split(",")))
    if draft_seconds is None:
        draft_seconds = _time_one_draft(llm)
    click.echo(format_rows(rows, draft_seconds))


def _time_one_draft(llm: str) -> float:
    """Seconds of one real draft call (App. G prompt over 8 demo passages)."""
    from haystack.dataclasses import ChatMessage  # noqa: PLC0415

    from haystack_cfrag.prompts import DRAFT_PROMPT, render_evidence  # noqa: PLC0415
    from haystack_cfrag.store import DEMO_CORPUS, read_jsonl  # noqa: PLC0415

    generator = models.chat_generator(llm, max_tokens=96)
    generator.warm_up()
    prompt = DRAFT_PROMPT.format(query="Who is the lead actor in The Dark Knight?",
                                 evidence=render_evidence(read_jsonl(DEMO_CORPUS)[:8], 2000))
    start = time.perf_counter()
    generator.run(messages=[ChatMessage.from_user(prompt)])
    return time.perf_counter() - start


@main.group("models")
def models_group() -> None:
    """The embedded default models: pip requirements and an integrity check."""


@models_group.command("requirements")
def models_requirements() -> None:
    """Print the pinned pip requirements of the embedded LLM's part wheels."""
    click.echo(" ".join(models.GGUF_MODELS[models.EMBEDDED_LLM].requirements()))


@models_group.command("check")
def models_check() -> None:
    """Resolve the embedded models: assemble the GGUF once, check its sha256, print the paths."""
    for spec in (models.EMBEDDED_EMBEDDER, models.EMBEDDED_LLM):
        click.echo(f"{spec} -> {models.resolve_model(spec)}")


# ---------------------------------------------------------------- formatting
def format_trace(trace: dict[str, Any]) -> str:
    """A readable account of an arbitration trace."""
    lines = ["", "Counterfactuals:"]
    cfs = trace.get("counterfactual_details") or [{"text": t} for t in trace.get("counterfactuals", [])]
    for c in cfs:
        extra = f" [{c['type']}, sim {c['similarity']:.2f}]" if "type" in c else ""
        lines.append(f"  - {c['text']}{extra}")
    if not cfs:
        lines.append("  (none)")
    clusters = trace.get("clusters") or {}
    if clusters:
        lines.append(f"Clusters: {len(clusters)} (" + ", ".join(f"{k}: {len(v)} docs" for k, v in clusters.items()) + ")")
    weights = trace.get("weights", {})
    lines.append(f"Drafts (scorer: {trace.get('scorer')}, weights: "
                 + ", ".join(f"{k} {v:.2f}" for k, v in weights.items() if v) + "):")
    for d in trace.get("drafts", []):
        if d.get("error"):
            lines.append(f"  #{d['index']}: FAILED ({d['error']})")
            continue
        s = d["scores"]
        fmt = lambda v: "—" if v is None else f"{v:+.3f}"  # noqa: E731
        lines.append(f"  #{d['index']} {d['answer']!r}  Ψ {d['psi']:+.3f}  coh {fmt(s['coherence'])}  "
                     f"causal {fmt(s['causal'])}  conf {fmt(s['confidence'])}  spec {fmt(s['specificity'])}  "
                     f"agree {d['agreement']:.2f}")
        for e in d["evidence"]:
            margin = "" if e["causal_margin"] is None else f"  margin {e['causal_margin']:+.3f}"
            lines.append(f"       · {e.get('title') or e['id']} (cluster {e.get('cluster')}, s {e['relevance']:.3f}{margin})")
    lines.append(f"Decision: {trace.get('decision')} (agreement {trace.get('agreement', 0):.2f}) → {trace.get('answer')!r}")
    for d in trace.get("degradations") or []:
        details = ", ".join(f"{k} {v}" for k, v in d.items() if k not in ("stage", "reason"))
        lines.append(f"Degraded: {d['stage']}: {d['reason']}" + (f" ({details})" if details else ""))
    return "\n".join(lines)


def format_cost(result: Any, indent: str = "") -> str:
    """Time per stage and LLM usage of one run."""
    stages = ", ".join(f"{k} {v:.2f}s" for k, v in result.stages.items())
    llm = result.llm
    return (f"{indent}time {result.seconds:.2f} s ({stages})\n"
            f"{indent}LLM: {llm['calls']} calls, {llm['prompt_tokens']} prompt + {llm['completion_tokens']} "
            f"completion tokens, {llm['seconds']:.2f} s")


def _register_subcommands() -> None:
    """Commands kept in their own modules (evaluation, serving)."""
    from haystack_cfrag.cli_eval import eval_command  # noqa: PLC0415
    from haystack_cfrag.cli_serve import serve  # noqa: PLC0415

    main.add_command(eval_command)
    main.add_command(serve)


_register_subcommands()

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
