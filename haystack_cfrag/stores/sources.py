"""Files to passages for indexing: text, Markdown, PDF and JSONL files selected, read and split.

`select_files` is the one file filter of `cfrag index`: a file named on the command line must
be of a type read here (`SUFFIXES`: .txt .text .md .markdown .pdf .jsonl; a file without a
suffix is never read); a folder is read recursively, and what it holds that is hidden (any
name below the folder starting with "."), of another type, or a link leading out of the
folder is skipped and counted (`FileSelection.skipped`). Text, Markdown and PDF files go
through Haystack's converters; JSONL lines are passages already (`read_jsonl`).
`split_documents` cuts the rest into ~250-token passages with overlap (Haystack's
`DocumentSplitter`). `cfrag index` embeds them and writes them to a store
(`haystack_cfrag.stores`); the demo store is built from `read_jsonl` of the shipped corpus.

Every passage carries the file it came from (`SOURCE_KEY`, an absolute path, added
after its id is made, so ids are those of earlier versions): `cfrag index` replaces the passages
of a file read again and prunes those of files gone. Duplicate ids keep the last
(`last_wins`, counted in the summary).

Sizes are bounded (`cfrag index --max-file-mb`, `--max-passage-chars`): a file larger than
`MAX_FILE_BYTES` is skipped and counted, its size read first (never the file whole); a passage
longer than `MAX_PASSAGE_CHARS` (a JSONL line, or a run of text without spaces, which the
word splitter keeps whole) is cut to that length and counted.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from haystack import Document, logging

logger = logging.getLogger(__name__)

SOURCE_KEY = "cfrag_source"
"""The meta key holding a passage's source file (`source_of`: its absolute path), written by `cfrag index`."""
MAX_FILE_BYTES = 16 * 1024 * 1024
"""The largest file `cfrag index` reads (16 MiB; `--max-file-mb`): larger ones are skipped and counted."""
MAX_PASSAGE_CHARS = 20_000
"""The longest passage written (`--max-passage-chars`); 190 words of text are about 1,200 characters."""


def source_of(path: Any) -> str:
    """The source key of a file: its absolute path (not resolved: a link inside a folder keeps its own name)."""
    return os.path.abspath(os.fspath(path))


def read_jsonl(path: Path, data: bytes | None = None) -> list[Document]:
    """Documents from JSONL lines with `content` (or `text`), optional `id`, `title` and `meta`.

    :param data: the file's bytes when already read (bounded, see `read_bounded`); else the file is read.
    :raises ValueError: naming the file and line: not UTF-8, not JSON, not an object, no text.
    """
    docs = []
    for n, raw in enumerate((path.read_bytes() if data is None else data).splitlines(), start=1):
        where = f"{path}:{n}"
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{where}: not UTF-8 text (byte {exc.start + 1} of the line); convert the file to "
                             "UTF-8.") from exc
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: not valid JSON ({exc.msg}, column {exc.colno}).") from exc
        if not isinstance(row, dict):
            raise ValueError(f"{where}: a line must be a JSON object with 'content', got {type(row).__name__}.")
        content = row.get("content") or row.get("text")
        if not isinstance(content, str) or not content.strip():
            raise ValueError(f"{where}: a line needs 'content' (or 'text'): a non-empty string.")
        if not isinstance(row.get("meta") or {}, dict) or not isinstance(row.get("id") or "", str):
            raise ValueError(f"{where}: 'meta' must be an object and 'id' a string.")
        meta = dict(row.get("meta") or {})
        for key in ("title", "source"):
            if key in row:
                meta[key] = row[key]
        docs.append(Document(id=row.get("id") or Document(content=content, meta=meta).id, content=content, meta=meta))
    return docs


TEXT_SUFFIXES = (".txt", ".text", ".md", ".markdown")
SUFFIXES = (*TEXT_SUFFIXES, ".pdf", ".jsonl")
"""The file types `cfrag index` reads (lower-cased suffixes); nothing else, a file without a suffix included."""


@dataclass
class FileSelection:
    """The files to read, and what a folder held that was skipped (paths, by reason)."""

    files: list[Path] = field(default_factory=list)
    hidden: list[Path] = field(default_factory=list)
    other_types: list[Path] = field(default_factory=list)
    outside: list[Path] = field(default_factory=list)

    def skipped(self) -> str:
        """What was skipped in words, e.g. "skipped 3 hidden, 2 of other types"; "" when nothing was."""
        parts = [f"{len(self.hidden)} hidden" if self.hidden else "",
                 f"{len(self.other_types)} of other types" if self.other_types else "",
                 f"{len(self.outside)} links leading out of the folder" if self.outside else ""]
        shown = ", ".join(p for p in parts if p)
        return f"skipped {shown}" if shown else ""


def unsupported(path: Path) -> str | None:
    """Why `cfrag index` does not read `path` ("no file type" or "unsupported file type '.png'"), None when it does."""
    suffix = path.suffix.lower()
    if suffix in SUFFIXES:
        return None
    what = "no file type suffix" if not suffix else f"unsupported file type '{suffix}'"
    return f"{what} (cfrag index reads {', '.join(SUFFIXES)})"


def select_files(paths: Iterable[Path], *, include_hidden: bool = False) -> FileSelection:
    """The files `cfrag index` reads from files and folders named on the command line.

    A file named is read when its type is in `SUFFIXES` (hidden or not: naming it is the
    choice). A folder is walked recursively and sorted; skipped and counted: hidden files and
    folders (a name below the folder starting with "."; read with `include_hidden`, their type
    still checked), files of other types or without a suffix, anything not a regular file, and
    links whose target lies outside the folder (or nowhere). Links to folders are not followed
    (what they lead to inside the folder is read where it is).

    :raises ValueError: naming a file named on the command line that is not read, or not a regular file.
    """
    selection = FileSelection()
    for path in paths:
        if path.is_dir():
            _walk(path, selection, include_hidden)
            continue
        why = unsupported(path)
        if why:
            raise ValueError(f"{path}: {why}.")
        if not path.is_file():  # a FIFO or a device would block or never end
            raise ValueError(f"{path}: not a regular file.")
        selection.files.append(path)
    return selection


def _walk(folder: Path, selection: FileSelection, include_hidden: bool) -> None:
    root = folder.resolve()
    for current, dirs, names in os.walk(folder):  # links to folders are listed in `dirs`, never entered
        here = Path(current)
        for name in sorted(dirs):
            path = here / name
            if name.startswith(".") and not include_hidden:
                selection.hidden.append(path)
                dirs.remove(name)
            elif path.is_symlink():
                if not _inside(path, root):
                    selection.outside.append(path)
        dirs.sort()
        for name in sorted(names):
            path = here / name
            if name.startswith(".") and not include_hidden:
                selection.hidden.append(path)
            elif path.is_symlink() and not _inside(path, root):
                selection.outside.append(path)
            elif unsupported(path) or not _regular(path):
                selection.other_types.append(path)
            else:
                selection.files.append(path)


def _inside(link: Path, root: Path) -> bool:
    """Whether a link's target exists and lies inside `root`."""
    try:
        target = link.resolve(strict=True)
    except (OSError, RuntimeError):  # dangling, or a loop
        return False
    return target == root or root in target.parents


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False


@dataclass
class Converted:
    """What `convert_files` read: the documents with text, files without text, files over the size bound."""

    documents: list[Document] = field(default_factory=list)
    no_text: list[Path] = field(default_factory=list)
    too_large: list[Path] = field(default_factory=list)
    read: list[Path] = field(default_factory=list)
    """The files read (with text or without): their stored passages are replaced by what they give now."""


def convert_files(paths: Iterable[Path], *, max_file_bytes: int = MAX_FILE_BYTES) -> Converted:
    """Documents from files: .txt, .text, .md, .markdown, .pdf through Haystack's converters; .jsonl as passages.

    A file larger than `max_file_bytes` is skipped (its size is checked before it is read, and
    it is read at most that far) and listed in `too_large`; a file without text (empty, or a
    PDF without extractable text) is listed in `no_text`, each logged as a warning.

    :raises ValueError: naming the file: an unsupported type, text that is not UTF-8, a bad JSONL line.
    """
    from haystack.dataclasses import ByteStream  # noqa: PLC0415

    result = Converted()
    for path in paths:
        why = unsupported(path)
        if why:
            raise ValueError(f"{path}: {why}.")
        data = read_bounded(path, max_file_bytes)
        if data is None:
            logger.warning("{path}: larger than {limit} bytes; skipped", path=str(path), limit=max_file_bytes)
            result.too_large.append(path)
            continue
        suffix = path.suffix.lower()
        if suffix == ".jsonl":
            found = read_jsonl(path, data)
        else:
            if suffix in TEXT_SUFFIXES:
                _check_utf8(path, data)
            source = ByteStream(data=data, meta={"file_path": str(path)})
            converted = _converter(suffix).run(sources=[source])["documents"]
            found = [d for d in converted if (d.content or "").strip()]
            for doc in found:
                doc.meta.setdefault("title", path.stem)
        if not found:
            logger.warning("{path}: no text found; skipped", path=str(path))
            result.no_text.append(path)
        for doc in found:  # after the id is made: the ids stay those of earlier versions
            doc.meta[SOURCE_KEY] = source_of(path)
        result.read.append(path)
        result.documents += found
    return result


def read_bounded(path: Path, limit: int) -> bytes | None:
    """The bytes of a regular file of at most `limit` bytes; None when it is larger (then never read whole).

    The size is checked on the open file (no race with a rename), and at most `limit + 1` bytes
    are read, so a file that grows meanwhile is caught too.
    """
    with path.open("rb") as fh:
        if os.fstat(fh.fileno()).st_size > limit:
            return None
        data = fh.read(limit + 1)
    return None if len(data) > limit else data


def _converter(suffix: str) -> Any:
    if suffix in (".md", ".markdown"):
        from haystack.components.converters import MarkdownToDocument  # noqa: PLC0415

        return MarkdownToDocument()
    if suffix == ".pdf":
        from haystack.components.converters import PyPDFToDocument  # noqa: PLC0415

        return PyPDFToDocument()
    from haystack.components.converters import TextFileToDocument  # noqa: PLC0415

    return TextFileToDocument()


def _check_utf8(path: Path, data: bytes) -> None:
    """ValueError naming the file and line when a text file is not UTF-8 (Haystack's converter would skip it)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ValueError(f"{path}:{line}: not UTF-8 text; convert the file to UTF-8.") from exc


def split_documents(docs: list[Document], *, words: int = 190, overlap: int = 30) -> list[Document]:
    """~250-token passages (≈ 190 words) with overlap, through Haystack's DocumentSplitter.

    JSONL passages (already passage-sized, carrying an id) are kept as they are. The source key is left out
    of what the splitter sees (a passage's id is made from its meta) and put back on each passage.
    """
    from haystack.components.preprocessors import DocumentSplitter  # noqa: PLC0415

    splitter = DocumentSplitter(split_by="word", split_length=words, split_overlap=overlap)
    if hasattr(splitter, "warm_up"):
        splitter.warm_up()
    small = [("source" in d.meta and len((d.content or "").split()) <= words) for d in docs]
    keep = [d for d, s in zip(docs, small, strict=True) if s]
    to_split = [d for d, s in zip(docs, small, strict=True) if not s]
    sources = {d.id: d.meta.get(SOURCE_KEY) for d in to_split}
    bare = [replace(d, meta={k: v for k, v in d.meta.items() if k != SOURCE_KEY}) for d in to_split]
    split = splitter.run(documents=bare)["documents"] if bare else []
    for doc in split:
        source = sources.get(doc.meta.get("source_id"))
        if source is not None:
            doc.meta[SOURCE_KEY] = source
    return keep + split


def last_wins(passages: list[Document]) -> tuple[list[Document], int]:
    """(passages with unique ids, how many were dropped): of passages sharing an id, the last one read is kept, in
    the place of the first.

    >>> from haystack import Document
    >>> kept, dropped = last_wins([Document(id="a", content="old"), Document(id="b", content="b"),
    ...                            Document(id="a", content="new")])
    >>> [d.content for d in kept], dropped
    (['new', 'b'], 1)
    """
    last = {d.id: d for d in passages}
    out = [last[i] for i in dict.fromkeys(d.id for d in passages)]
    return out, len(passages) - len(out)


def cut_passages(passages: list[Document], max_chars: int = MAX_PASSAGE_CHARS) -> tuple[list[Document], int]:
    """(passages, how many were cut): each passage longer than `max_chars` characters cut to that length.

    A cut passage keeps its id (a JSONL line's own id stays the id) and its length before the cut in
    `meta["cut_from_chars"]`; the passages given are not changed.

    >>> from haystack import Document
    >>> cut_passages([Document(content="x" * 50), Document(content="short")], max_chars=10)[1]
    1
    """
    out, cut = [], 0
    for doc in passages:
        content = doc.content or ""
        if len(content) <= max_chars:
            out.append(doc)
            continue
        cut += 1
        meta = {**doc.meta, "cut_from_chars": len(content)}
        out.append(replace(doc, content=content[:max_chars], meta=meta))
    return out, cut
