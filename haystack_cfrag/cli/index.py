"""`cfrag index`: files split into passages, embedded and written to a store (and, with `--graph`, the graph built).

    cfrag index docs/*.md notes.pdf passages.jsonl --store my_store.json
    cfrag index passages.jsonl --store faiss:stores/demo      (or pgvector:postgresql://…, qdrant:PATH|URL)

Every argument is checked before any model loads (`haystack_cfrag.cli.checks`).
"""

from __future__ import annotations

import time
from pathlib import Path

import click

from haystack_cfrag import models
from haystack_cfrag.adapters import factories
from haystack_cfrag.cli.checks import FloatRange, IntRange, check_graph_engine, check_model_spec, check_store_spec
from haystack_cfrag.common import interrupts
from haystack_cfrag.common.errors import one_line
from haystack_cfrag.progress import StatusLine
from haystack_cfrag.registry import store_preparation

GRAPH = store_preparation()
"""What `cfrag index --graph` builds ahead (CausalRAG's graph: its extractors, engines and summary line)."""


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
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
          overlap: int, include_hidden: bool, graph: bool, llm: str, graph_extractor: str, engine: str,
          ray_address: str | None, max_file_mb: float, max_passage_chars: int) -> None:
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

    Indexing again is incremental: a passage the store already holds (the same text from the same
    source, by its id) is kept as it is, neither embedded nor written again; to change the embedder,
    index into a new store.
    """
    from haystack.document_stores.types import DuplicatePolicy  # noqa: PLC0415

    from haystack_cfrag.indexing import convert_files, cut_passages, select_files, split_documents  # noqa: PLC0415
    from haystack_cfrag.stores import close_document_store, open_document_store, redact, save_document_store  # noqa: PLC0415
    from haystack_cfrag.stores.existing import stored_dim, stored_ids  # noqa: PLC0415

    if overlap >= words:
        raise click.BadParameter(f"must be smaller than --words ({words}), got {overlap}", param_hint="--overlap")
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
    if not files:
        raise click.BadParameter(f"{', '.join(map(str, paths))} holds no .txt, .md, .pdf or .jsonl file"
                                 + (f" ({skipped})" if skipped else ""), param_hint="PATHS")
    start = time.perf_counter()
    try:
        converted = convert_files(files, max_file_bytes=int(max_file_mb * 1024 * 1024))
        passages, cut = cut_passages(split_documents(converted.documents, words=words, overlap=overlap),
                                     max_passage_chars)
    except ValueError as exc:  # names the file (and line)
        raise click.ClickException(one_line(exc, typed=False)) from exc
    large = len(converted.too_large)
    skipped = "; ".join(part for part in (
        skipped, f"skipped {large} file(s) larger than {max_file_mb:g} MiB" if large else "",
        f"cut {cut} passage(s) to {max_passage_chars} characters" if cut else "") if part)
    if not passages:  # each file without text, or too large, was logged as a warning
        raise click.ClickException(f"no passage to index: {len(files)} file(s) gave no text"
                                   + (f" ({skipped})" if skipped else "") + "; the store is unchanged.")
    try:  # an existing store: the passages it holds (same text, same source) are neither embedded nor written
        store = open_document_store(spec)
    except FileNotFoundError:
        store = None
    except ValueError as exc:  # a corrupt or foreign store
        raise click.ClickException(one_line(exc, typed=False)) from exc
    try:
        held = stored_ids(store, [p.id for p in passages]) if store is not None else set()
        new = [p for p in passages if p.id not in held]
        embedded = []
        if new:
            doc_embedder = factories.document_embedder(embedder, device=device, progress_bar=True)
            doc_embedder.warm_up()
            embedded = doc_embedder.run(documents=new)["documents"]
        dim = len(embedded[0].embedding) if embedded and embedded[0].embedding is not None else None
        if store is None:
            try:
                store = open_document_store(spec, embedding_dim=dim, create=True)
            except ValueError as exc:
                raise click.ClickException(one_line(exc, typed=False)) from exc
        elif dim is not None and (held_dim := stored_dim(store)) not in (None, dim):
            raise click.ClickException(f"{redact(str(spec))} holds {held_dim}-dimensional embeddings, "
                                       f"not {dim} ({embedder}); the store is unchanged.")
        written = store.write_documents(embedded, policy=DuplicatePolicy.OVERWRITE) if embedded else 0
        if written:
            save_document_store(store, spec)
        count = store.count_documents()
        # the graph is the store's: all its passages (new or changed ones are extracted, the others are cached)
        stored = [d for d in store.filter_documents() if d.content] if graph else []
    finally:
        if store is not None:
            close_document_store(store)
    where = spec.location if spec.kind == "memory" else redact(str(spec))
    click.echo(f"{len(files)} files → {len(passages)} passages, {written} written"
               + (f" ({len(held)} already in the store, kept)" if held else "") + "; store has "
               f"{count} in {time.perf_counter() - start:.1f} s → {where}" + (f"; {skipped}" if skipped else ""))
    if graph:
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
