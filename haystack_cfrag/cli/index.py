"""`cfrag index`: files split into passages, embedded and written to a store (and, with `--graph`, the graph built).

    cfrag index docs/*.md notes.pdf passages.jsonl --store my_store.json
    cfrag index passages.jsonl --store faiss:stores/demo      (or pgvector:postgresql://…, qdrant:PATH|URL)

Every argument is checked before any model loads (`haystack_cfrag.cli.checks`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click

from haystack_cfrag import models
from haystack_cfrag.cli.checks import FloatRange, IntRange, check_graph_engine, check_model_spec, check_store_spec
from haystack_cfrag.cli.progress import StatusLine
from haystack_cfrag.common.errors import one_line
from haystack_cfrag.registry import store_preparation

GRAPH = store_preparation()
"""What `cfrag index --graph` builds ahead (CausalRAG's graph: its extractors, engines and summary line)."""


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--store", "store_path", required=True,
              help="Store to create or extend: PATH.json | faiss:PATH[#INDEX] | pgvector:postgresql://…[#TABLE] | "
                   "qdrant:PATH|URL[#COLLECTION].")
@click.option("--embedder", default=models.EMBEDDED_EMBEDDER, show_default=True)
@click.option("--device", default=None,
              help="Device for the embedder (and, with --graph, the extraction model), e.g. cuda:0.")
@click.option("--words", default=190, show_default=True, type=IntRange(min=1),
              help="Words per passage (≈ 250 tokens).")
@click.option("--overlap", default=30, show_default=True, type=IntRange(min=0),
              help="Words shared by consecutive passages (fewer than --words).")
@click.option("--include-hidden", is_flag=True,
              help="Also read hidden files and folders (names starting with '.') inside a FOLDER, "
                   "e.g. .env or .git: secrets often live there. Their type must still be one of those read.")
@click.option("--prune", is_flag=True,
              help="Also remove the passages (and their part of the graph) whose every source file is gone "
                   "(no such file: not one that cannot be read); PATHS may then be left out.")
@click.option("--force", is_flag=True,
              help="With --prune: remove the passages of files that are gone even when they are more than "
                   "half of the store's files, or every passage of a folder that no longer exists (refused "
                   "without it).")
@click.option("--dry-run", is_flag=True,
              help="Print what would be added, replaced, removed and kept, by file; embed and write nothing.")
@click.option("--wait", "wait", default=None, type=FloatRange(min=0, max=86_400),
              help="Seconds to wait for another cfrag index writing the same store before refusing (0: refuse at once; "
                   "default: 60).")
@click.option("--graph", is_flag=True,
              help="Also build the index-time parts a method needs (CausalRAG's and CDF-RAG's causal graph) now, "
                   "cached and resumable, so that their pipelines start without it.")
@click.option("--llm", default=models.EMBEDDED_LLM, show_default=True, help="The extraction model (with --graph).")
@click.option("--extractor", "graph_extractor", default=GRAPH.default_extractor if GRAPH else None,
              show_default=True, type=click.Choice(list(GRAPH.extractors) if GRAPH else []),
              help="What extracts the graph (with --graph): llm (CausalRAG's prompt, one generation per chunk), "
                   "llm-json (the same, JSON constrained by a schema), spacy (parsing and causal cues, no generation).")
@click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="Where the graph is extracted (with --graph): in this process, or on Ray (with --extractor "
                   "spacy or llm-json).")
@click.option("--ray-address", default=None,
              help="A Ray cluster's address, HOST:PORT, ray://HOST:PORT, auto or local (with --graph --engine ray; "
                   "default: a local Ray); a HOST:PORT must answer within 2 s, before anything is written.")
@click.option("--max-file-mb", default=16.0, show_default=True, type=FloatRange(min=0, min_open=True),
              help="Skip (and count) files larger than this many MiB; their size is checked before they are read.")
@click.option("--max-passage-chars", default=20_000, show_default=True, type=IntRange(min=100),
              help="Cut (and count) passages longer than this: a long JSONL line, or text without spaces.")
def index(paths: tuple[Path, ...], store_path: str, embedder: str, device: str | None, words: int,
          overlap: int, include_hidden: bool, prune: bool, force: bool, dry_run: bool, wait: float | None,
          graph: bool, llm: str, graph_extractor: str, engine: str, ray_address: str | None, max_file_mb: float,
          max_passage_chars: int) -> None:
    """Split files into passages, embed them and write them to a store.

    \b
    Reads exactly these types (by suffix, any case):
      .txt .text .md .markdown  UTF-8 text
      .pdf                      its extractable text
      .jsonl                    one passage per line ({"content": …}; a line's "id" is its id,
                                never split)

    A file named here must be of one of those types. A FOLDER is read recursively, those types
    only; skipped and counted: hidden names (starting with '.', unless --include-hidden), other
    types, links leading out of FOLDER; links to folders are not followed. Files larger than
    --max-file-mb are skipped, passages longer than --max-passage-chars cut (counted); no
    passage at all is an error.

    Indexing again updates the store: a passage held as it is is kept (not embedded again), one
    held with other text replaced, and a file read again replaces what it gave before; of
    passages sharing an id, the last read is kept. A file
    that gives no text now (emptied, a PDF cut short) or cannot be read keeps its passages
    ("kept: c.pdf gave no text"). --prune removes the passages whose every file is gone, and
    refuses past half of the store's files or for every passage of a folder that no longer
    exists (moved, not mounted) unless --force. A copy indexed later never takes a file's
    passages over. --dry-run prints the plan by file and writes nothing. One cfrag index writes
    a store at a time (a second waits --wait seconds, then refuses); a killed run is finished by
    the next. To change the embedder, index into a new store. From Python: `update_store`
    (haystack_cfrag.stores.update).
    """
    from haystack_cfrag.stores.lock import DEFAULT_WAIT, StoreBusy  # noqa: PLC0415
    from haystack_cfrag.stores.sources import read_sources, select_files  # noqa: PLC0415
    from haystack_cfrag.stores.update import GraphBuild, update_store  # noqa: PLC0415

    if overlap >= words:
        raise click.BadParameter(f"must be smaller than --words ({words}), got {overlap}", param_hint="--overlap")
    if not paths and not prune:
        raise click.BadParameter("name the files or folders to index (or pass --prune alone to remove the passages "
                                 "of files that are gone)", param_hint="PATHS")
    if force and not prune:
        raise click.BadParameter("only goes with --prune (it lets --prune past its guard)",
                                 param_hint="--force")
    spec = check_store_spec(store_path, create=True)
    check_model_spec(embedder, "--embedder")
    if graph and GRAPH is None:
        raise click.BadParameter("no method of this installation builds anything at index time", param_hint="--graph")
    if graph and graph_extractor not in GRAPH.parse_only:
        check_model_spec(llm, "--llm")
    check_graph_engine(graph, engine, graph_extractor, ray_address, GRAPH.scale_out if GRAPH else ())
    try:
        selection = select_files(paths, include_hidden=include_hidden)
    except ValueError as exc:  # a file named on the command line that is not read: names it
        raise click.ClickException(one_line(exc, typed=False)) from exc
    if paths and not selection.files:
        skipped = selection.skipped()
        raise click.BadParameter(f"{', '.join(map(str, paths))} holds no .txt, .md, .pdf or .jsonl file"
                                 + (f" ({skipped})" if skipped else ""), param_hint="PATHS")
    start = time.perf_counter()
    try:
        read = read_sources(selection, words=words, overlap=overlap,
                            max_file_bytes=int(max_file_mb * 1024 * 1024),
                            max_passage_chars=max_passage_chars)
    except ValueError as exc:  # names the file (and line)
        raise click.ClickException(one_line(exc, typed=False)) from exc
    skipped = "; ".join(read.notes)
    if paths and not read.passages:  # each file without text, or too large, was logged as a warning
        raise click.ClickException(f"no passage to index: {len(read.files)} file(s) gave no text"
                                   + (f" ({skipped})" if skipped else "") + "; the store is unchanged.")
    where = str(spec)  # a JSON store as its path

    def saved(done: Any) -> None:
        plan = done.plan
        click.echo(f"{len(read.files)} files → {len(read.passages)} passages, {done.written} written"
                   + (f" ({len(plan.kept)} already in the store, kept)" if plan.kept else "") + "; store has "
                   f"{done.count} in {time.perf_counter() - start:.1f} s → {where}; {plan.summary()}"
                   + (f"; {skipped}" if skipped else "")
                   + ("; its graph is now stale: index with --graph to bring it up to date" if done.stale
                      else ""))

    status = StatusLine(label="index") if graph else None
    build = GraphBuild(llm=llm, extractor=graph_extractor, engine=engine, ray_address=ray_address,
                       progress=status) if graph else None
    try:
        done = update_store(spec, read, embedder=embedder, device=device, prune=prune, force=force,
                            dry_run=dry_run, wait=DEFAULT_WAIT if wait is None else wait, graph=build,
                            preparation=GRAPH, saved=saved, notify=lambda line: click.echo(line, err=True))
    except (StoreBusy, ValueError, FileNotFoundError) as exc:  # one line: another writer, the prune guard, a
        raise click.ClickException(one_line(exc, typed=False)) from exc  # store or graph that cannot be written
    finally:
        if status is not None:
            status.done()
    if dry_run:
        click.echo(f"dry run, nothing written: {done.plan.summary()} → {where}"
                   + (f"; refused without --force: {done.plan.refusal}" if done.plan.refusal else ""))
        for line in done.plan.by_file():
            click.echo(f"  {line}")
    if done.graph:
        click.echo(done.graph)


__all__ = ["GRAPH", "index"]
