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
from haystack_cfrag.adapters import factories
from haystack_cfrag.cli.checks import FloatRange, IntRange, check_graph_engine, check_model_spec, check_store_spec
from haystack_cfrag.common import interrupts
from haystack_cfrag.common.errors import one_line
from haystack_cfrag.cli.progress import StatusLine
from haystack_cfrag.registry import store_preparation

GRAPH = store_preparation()
"""What `cfrag index --graph` builds ahead (CausalRAG's graph: its extractors, engines and summary line)."""


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--store", "store_path", required=True,
              help="Store to create or extend: PATH.json | faiss:PATH[#INDEX] | pgvector:postgresql://…[#TABLE] | "
                   "qdrant:PATH|URL[#COLLECTION].")
@click.option("--embedder", default=models.EMBEDDED_EMBEDDER, show_default=True)
@click.option("--device", default=None, help="Device for the embedder (and, with --graph, the extraction model), e.g. cuda:0.")
@click.option("--words", default=190, show_default=True, type=IntRange(min=1),
              help="Words per passage (≈ 250 tokens).")
@click.option("--overlap", default=30, show_default=True, type=IntRange(min=0),
              help="Words shared by consecutive passages (fewer than --words).")
@click.option("--include-hidden", is_flag=True,
              help="Also read hidden files and folders (names starting with '.') inside a FOLDER, "
                   "e.g. .env or .git: secrets often live there. Their type must still be one of those read.")
@click.option("--prune", is_flag=True,
              help="Also remove the passages (and their part of the graph) whose source file is gone; PATHS may "
                   "then be left out.")
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
          overlap: int, include_hidden: bool, prune: bool, wait: float | None, graph: bool, llm: str,
          graph_extractor: str, engine: str, ray_address: str | None, max_file_mb: float, max_passage_chars: int) -> None:
    """Split files into passages, embed them and write them to a store.

    \b
    Reads exactly these types (by suffix, any case):
      .txt .text .md .markdown  UTF-8 text
      .pdf                      its extractable text
      .jsonl                    one passage per line ({"content": …})

    A file named here must be of one of those types (a file without a suffix is an error). A
    FOLDER is read recursively, files of those types only; skipped and counted in the summary:
    hidden files and folders (any name below FOLDER starting with '.', unless --include-hidden),
    files of other types or without a suffix, and links leading out of FOLDER (or nowhere); links
    to folders are not followed. Files larger than --max-file-mb are skipped and passages longer
    than --max-passage-chars are cut, both counted in the summary. No passage at all is an error.

    Indexing again updates the store: a passage it holds as it is (by its id) is kept, neither
    embedded nor written again; one whose id it holds with other text is replaced; a file read
    again replaces the passages it gave before (an edited or shortened file leaves none behind),
    and --prune removes those of files that are gone. Of passages sharing an id, the last read
    is kept. The summary says what was added, replaced, removed and kept. One cfrag index
    writes a store at a time (a second waits up to --wait seconds, then refuses); a run killed
    at any moment is finished by the next. To change the embedder, index into a new store.
    """
    from haystack_cfrag.stores.sources import (  # noqa: PLC0415
        convert_files, cut_passages, last_wins, select_files, source_of, split_documents)
    from haystack_cfrag.stores.lock import DEFAULT_WAIT, StoreBusy, store_lock  # noqa: PLC0415
    from haystack_cfrag.stores.specs import redact  # noqa: PLC0415

    if overlap >= words:
        raise click.BadParameter(f"must be smaller than --words ({words}), got {overlap}", param_hint="--overlap")
    if not paths and not prune:
        raise click.BadParameter("name the files or folders to index (or pass --prune alone to remove the passages "
                                 "of files that are gone)", param_hint="PATHS")
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
    files = selection.files
    skipped = selection.skipped()
    if paths and not files:
        raise click.BadParameter(f"{', '.join(map(str, paths))} holds no .txt, .md, .pdf or .jsonl file"
                                 + (f" ({skipped})" if skipped else ""), param_hint="PATHS")
    start = time.perf_counter()
    try:
        converted = convert_files(files, max_file_bytes=int(max_file_mb * 1024 * 1024))
        passages, cut = cut_passages(split_documents(converted.documents, words=words, overlap=overlap),
                                     max_passage_chars)
    except ValueError as exc:  # names the file (and line)
        raise click.ClickException(one_line(exc, typed=False)) from exc
    passages, duplicates = last_wins(passages)
    large = len(converted.too_large)
    skipped = "; ".join(part for part in (
        skipped, f"skipped {large} file(s) larger than {max_file_mb:g} MiB" if large else "",
        f"cut {cut} passage(s) to {max_passage_chars} characters" if cut else "",
        f"{duplicates} passage(s) shared an id with a later one: the last of each kept" if duplicates else "")
        if part)
    if paths and not passages:  # each file without text, or too large, was logged as a warning
        raise click.ClickException(f"no passage to index: {len(files)} file(s) gave no text"
                                   + (f" ({skipped})" if skipped else "") + "; the store is unchanged.")
    sources = {source_of(p) for p in converted.read}
    try:
        with store_lock(spec, wait=DEFAULT_WAIT if wait is None else wait,
                        notify=lambda line: click.echo(line, err=True)):
            plan, written, count, stale = _write(spec, passages, sources, prune=prune, graph=graph,
                                                 embedder=embedder, device=device)
            where = spec.location if spec.kind == "memory" else redact(str(spec))
            click.echo(f"{len(files)} files → {len(passages)} passages, {written} written"
                       + (f" ({len(plan.kept)} already in the store, kept)" if plan.kept else "") + "; store has "
                       f"{count} in {time.perf_counter() - start:.1f} s → {where}; {plan.summary()}"
                       + (f"; {skipped}" if skipped else "")
                       + ("; its graph is now stale: index with --graph to bring it up to date" if stale else ""))
            if graph:
                _graph(spec, embedder, device, llm, graph_extractor, engine, ray_address)
    except (StoreBusy, ValueError) as exc:  # another writer, or a store or graph that cannot be written: one line
        raise click.ClickException(one_line(exc, typed=False)) from exc
    finally:
        if (writes := _graph_writer()) is not None:
            writes.forget_marks()


def _graph_writer() -> Any:
    """The family's writer of what it stores beside a store (`StorePreparation.writes`), None without one."""
    return GRAPH.writes() if GRAPH is not None and GRAPH.writes is not None else None


def _write(spec: Any, passages: list[Any], sources: set[str], *, prune: bool, graph: bool, embedder: str,
           device: str | None) -> tuple[Any, int, int, bool]:
    """The passages written into the store (under its lock): (the plan, how many were written, the store's count,
    whether a graph beside it was marked stale)."""
    from haystack_cfrag.stores import (  # noqa: PLC0415
        checkpoints, close_document_store, open_document_store, redact, save_document_store)
    from haystack_cfrag.stores.changes import apply_changes, plan_changes  # noqa: PLC0415
    from haystack_cfrag.stores.existing import stored_dim  # noqa: PLC0415
    writes = _graph_writer()
    if graph and writes is not None:
        writes.check_graph_writable(spec)  # before any model loads: a read-only graph is refused, nothing written
    try:  # an existing store: the passages it holds as they are are neither embedded nor written
        store = open_document_store(spec)
    except FileNotFoundError:
        store = None
    except ValueError as exc:  # a corrupt or foreign store
        raise click.ClickException(one_line(exc, typed=False)) from exc
    try:
        plan = plan_changes(store, passages, sources=sources, prune=prune)
        embedded = []
        if plan.to_embed:
            doc_embedder = factories.document_embedder(embedder, device=device, progress_bar=True)
            doc_embedder.warm_up()
            embedded = doc_embedder.run(documents=plan.to_embed)["documents"]
        checkpoints.reached("passages embedded")
        dim = len(embedded[0].embedding) if embedded and embedded[0].embedding is not None else None
        if store is None and embedded:
            store = open_document_store(spec, embedding_dim=dim, create=True)
        elif store is not None and dim is not None and (held_dim := stored_dim(store)) not in (None, dim):
            raise click.ClickException(f"{redact(str(spec))} holds {held_dim}-dimensional embeddings, "
                                       f"not {dim} ({embedder}); the store is unchanged.")
        # the graph learns first that its passages change: a kill from here on leaves it marked, never silently stale
        stale = False
        if graph and writes is not None:
            writes.prepare_graph(spec)
        elif plan.changes_store() and store is not None and writes is not None:
            stale = writes.mark_stale(spec)
        written = 0
        if store is not None and (plan.changes_store() or plan.retag):
            written = apply_changes(store, plan, embedded)
            save_document_store(store, spec)
            checkpoints.reached("passages saved")
        count = store.count_documents() if store is not None else 0
    finally:
        if store is not None:
            close_document_store(store)
    return plan, written, count, stale


def _graph(spec: Any, embedder: str, device: str | None, llm: str, graph_extractor: str, engine: str,
           ray_address: str | None) -> None:
    """The graph of the store's passages, written beside it (new or changed passages extracted, others cached)."""
    from haystack_cfrag.stores import close_document_store, open_document_store  # noqa: PLC0415

    try:
        store = open_document_store(spec)
    except FileNotFoundError as exc:  # --prune alone, into no store
        raise click.ClickException(one_line(exc, typed=False)) from exc
    try:
        stored = [d for d in store.filter_documents() if d.content]
    finally:
        close_document_store(store)
    status = StatusLine(label="index")
    try:
        generator = None
        if graph_extractor not in GRAPH.parse_only:
            generator = factories.chat_generator(llm, device=device)
            interrupts.warm_up(generator)  # loaded before the extraction, with Ctrl-C held
        try:
            stats = GRAPH.index(stored, chat_generator=generator, cache_dir=models.graph_cache_dir(),
                                progress=status, extractor=graph_extractor, engine=engine,
                                ray_address=ray_address, store_spec=spec,
                                text_embedder=factories.text_embedder(embedder, device=device))
        except (ImportError, RuntimeError, ValueError) as exc:  # spaCy or Ray missing, a model not the pinned one
            raise click.ClickException(one_line(exc, typed=False)) from exc
    finally:
        status.done()
    click.echo(GRAPH.summarize(stats))


__all__ = ["GRAPH", "index"]
