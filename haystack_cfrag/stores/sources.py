"""Files to passages for a store: text, Markdown, PDF and JSONL files selected, read, split (`read_sources`).

`select_files` is `cfrag index`'s one file filter (`SUFFIXES`). Text, Markdown and PDF files go through Haystack's
converters and `split_documents` (~250-token passages with overlap); a JSONL line is a passage already
(`read_jsonl`), one with an `id` of its own never split. Sizes are bounded (`MAX_FILE_BYTES`, `MAX_PASSAGE_CHARS`):
what is skipped or cut is counted. `stores.update.update_store` embeds the passages and writes them.

Every passage carries where it came from (added after its id is made, so ids are those of earlier versions): its
file (`SOURCE_KEY`), the folder named (`ROOT_KEY`) and the other files of the run that gave it (`ALSO_KEY`). A file
is *read* only when it gave text: one that gave none (empty, a PDF cut short) or could not be read (any `OSError`)
is in `Passages.kept`, and its stored passages stay (`stores.changes`). Duplicate ids keep the last (counted).
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
ALSO_KEY = "cfrag_also"
"""The other source files that gave the same passage (a list; absent when there is none)."""
ROOT_KEY = "cfrag_root"
"""The folder named when the source file was indexed (a file named alone: its folder)."""
BOOKKEEPING = (SOURCE_KEY, ALSO_KEY, ROOT_KEY)
"""The meta keys `cfrag index` writes: never part of an id, never compared as a passage's meta."""
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
    """The files to read (with the folder each was found under), and what a folder held that was skipped."""

    files: list[Path] = field(default_factory=list)
    hidden: list[Path] = field(default_factory=list)
    other_types: list[Path] = field(default_factory=list)
    outside: list[Path] = field(default_factory=list)
    roots: dict[Path, Path] = field(default_factory=dict)
    """File -> the folder named that it was found in (a file named alone: its own folder)."""

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

    A file named is read when its type is in `SUFFIXES` (hidden or not). A folder is walked recursively, sorted;
    skipped and counted: hidden names (starting with "."; read with `include_hidden`, their type still checked),
    other types, anything not a regular file, links out of the folder (or nowhere). Links to folders are not
    followed (what they lead to inside the folder is read where it is).

    :raises ValueError: naming a file named on the command line that is not read, or not a regular file.
    """
    selection = FileSelection()
    for path in map(Path, paths):
        if path.is_dir():
            _walk(path, selection, include_hidden)
            continue
        why = unsupported(path)
        if why:
            raise ValueError(f"{path}: {why}.")
        if not path.is_file():  # a FIFO or a device would block or never end
            raise ValueError(f"{path}: not a regular file.")
        selection.files.append(path)
        selection.roots[path] = path.parent
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
                selection.roots[path] = folder


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
    """What `convert_files` read: the documents with text, files without text, too large or unreadable."""

    documents: list[Document] = field(default_factory=list)
    no_text: list[Path] = field(default_factory=list)
    too_large: list[Path] = field(default_factory=list)
    unreadable: dict[Path, str] = field(default_factory=dict)
    """File -> why it could not be read (an `OSError`, in words)."""
    read: list[Path] = field(default_factory=list)
    """The files that gave text: their stored passages are replaced by what they give now."""
    whole: set[str] = field(default_factory=set)
    """Ids of JSONL lines that carry an `id` of their own: passages as they are, never split."""


def convert_files(paths: Iterable[Path], *, max_file_bytes: int = MAX_FILE_BYTES) -> Converted:
    """Documents from files: .txt, .text, .md, .markdown, .pdf through Haystack's converters; .jsonl as passages.

    Logged and not read: a file larger than `max_file_bytes` (`too_large`; its size checked first, never read
    past it), one without text (`no_text`: empty, a PDF without extractable text), one that cannot be read
    (`unreadable`: an `OSError`).

    :raises ValueError: naming the file: an unsupported type, text that is not UTF-8, a bad JSONL line.
    """
    from haystack.dataclasses import ByteStream  # noqa: PLC0415

    result = Converted()
    for path in paths:
        why = unsupported(path)
        if why:
            raise ValueError(f"{path}: {why}.")
        try:
            data = read_bounded(path, max_file_bytes)
        except OSError as exc:
            logger.warning("{path}: cannot be read ({why}); skipped", path=str(path), why=exc.strerror or exc)
            result.unreadable[path] = f"could not be read ({exc.strerror or type(exc).__name__})"
            continue
        if data is None:
            logger.warning("{path}: larger than {limit} bytes; skipped", path=str(path), limit=max_file_bytes)
            result.too_large.append(path)
            continue
        suffix = path.suffix.lower()
        if suffix == ".jsonl":
            found = read_jsonl(path, data)
            result.whole.update(d.id for d in found if d.id != Document(content=d.content, meta=d.meta).id)
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
            continue
        for doc in found:  # after the id is made: the ids stay those of earlier versions
            doc.meta[SOURCE_KEY] = source_of(path)
        result.read.append(path)
        result.documents += found
    return result


def read_bounded(path: Path, limit: int) -> bytes | None:
    """The bytes of a regular file of at most `limit` bytes; None when it is larger (never read whole): the size
    checked on the open file (no race with a rename), at most `limit + 1` bytes read (a growing file caught too)."""
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


def split_documents(docs: list[Document], *, words: int = 190, overlap: int = 30,
                    whole: Iterable[str] = ()) -> list[Document]:
    """~250-token passages (≈ 190 words) with overlap, through Haystack's DocumentSplitter.

    JSONL passages (passage-sized with a `source`, or whose id is in `whole`) are kept as they are. Each file's
    documents are split apart, the bookkeeping keys left out of what the splitter sees (ids are made from meta).
    """
    from haystack.components.preprocessors import DocumentSplitter  # noqa: PLC0415

    splitter = DocumentSplitter(split_by="word", split_length=words, split_overlap=overlap)
    if hasattr(splitter, "warm_up"):
        splitter.warm_up()
    whole = set(whole)
    kept = [d.id in whole or ("source" in d.meta and len((d.content or "").split()) <= words) for d in docs]
    out = [d for d, k in zip(docs, kept, strict=True) if k]
    by_file: dict[Any, list[Document]] = {}
    for doc, k in zip(docs, kept, strict=True):
        if not k:
            by_file.setdefault(tuple(doc.meta.get(key) for key in BOOKKEEPING), []).append(doc)
    for marks, group in by_file.items():  # split apart: two files giving the same text keep their own source
        bare = [replace(d, meta={k: v for k, v in d.meta.items() if k not in BOOKKEEPING}) for d in group]
        for doc in splitter.run(documents=bare)["documents"]:
            doc.meta.update({key: v for key, v in zip(BOOKKEEPING, marks, strict=True) if v is not None})
            out.append(doc)
    return out


def last_wins(passages: list[Document]) -> tuple[list[Document], int]:
    """(passages with unique ids, how many were dropped): of passages sharing an id, the last one read is kept,
    in the place of the first; the files of the same passage read earlier are kept as its `ALSO_KEY`.

    >>> kept, dropped = last_wins([Document(id="a", content="old"), Document(id="b", content="b"),
    ...                            Document(id="a", content="new")])
    >>> [d.content for d in kept], dropped
    (['new', 'b'], 1)
    """
    last = {d.id: d for d in passages}
    also: dict[str, list[str]] = {}
    for doc in passages:
        final = last[doc.id]
        source = doc.meta.get(SOURCE_KEY)
        if doc is not final and source and source != final.meta.get(SOURCE_KEY) and same_text(doc, final):
            also.setdefault(doc.id, []).append(source)
    out = [last[i] if i not in also else replace(last[i], meta={**last[i].meta,
                                                                 ALSO_KEY: list(dict.fromkeys(also[i]))})
           for i in dict.fromkeys(d.id for d in passages)]
    return out, len(passages) - len(out)


def same_text(a: Document, b: Document) -> bool:
    """Same text and meta, the bookkeeping keys aside (meta compared as JSON, as a saved store reads it back)."""
    return (a.content or "") == (b.content or "") and _meta(a) == _meta(b)


def _meta(doc: Document) -> str:
    plain = {k: v for k, v in doc.meta.items() if k not in BOOKKEEPING}
    return json.dumps(plain, sort_keys=True, default=str)


def cut_passages(passages: list[Document], max_chars: int = MAX_PASSAGE_CHARS) -> tuple[list[Document], int]:
    """(passages, how many were cut): each passage longer than `max_chars` characters cut to that length, its id
    kept and its length before the cut in `meta["cut_from_chars"]` (the passages given are not changed).

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


@dataclass
class Passages:
    """What files gave (`read_sources`): the passages, and what `update_store` keeps of the files not read."""

    passages: list[Document]
    files: list[Path] = field(default_factory=list)
    read: set[str] = field(default_factory=set)
    """Source keys of the files read: the passages they gave before and give no more are removed."""
    kept: dict[str, str] = field(default_factory=dict)
    """Source key -> why that file was not read (its stored passages are kept), e.g. "gave no text"."""
    notes: list[str] = field(default_factory=list)
    """What was skipped, cut or dropped, in words (for a summary)."""


def read_sources(paths: Iterable[str | os.PathLike[str]] | FileSelection, *, words: int = 190,
                 overlap: int = 30, include_hidden: bool = False, max_file_bytes: int = MAX_FILE_BYTES,
                 max_passage_chars: int = MAX_PASSAGE_CHARS) -> Passages:
    """The passages of files and folders (or of a `select_files` selection; module doc): selected, converted,
    split, cut, unique by id, marked with where they came from.

    :raises ValueError: one line naming the file (and line): a file named that is not read, text that is not
        UTF-8, a bad JSONL line.
    """
    selection = paths if isinstance(paths, FileSelection) else select_files(paths,
                                                                             include_hidden=include_hidden)
    converted = convert_files(selection.files, max_file_bytes=max_file_bytes)
    passages, cut = cut_passages(split_documents(converted.documents, words=words, overlap=overlap,
                                                 whole=converted.whole), max_passage_chars)
    roots = {source_of(f): source_of(r) for f, r in selection.roots.items()}
    for doc in passages:
        if (root := roots.get(doc.meta.get(SOURCE_KEY, ""))) is not None:
            doc.meta[ROOT_KEY] = root
    passages, duplicates = last_wins(passages)
    kept = {source_of(p): "gave no text" for p in converted.no_text}
    kept |= {source_of(p): f"is larger than {max_file_bytes / 2**20:g} MiB" for p in converted.too_large}
    kept |= {source_of(p): why for p, why in converted.unreadable.items()}
    large, unreadable = len(converted.too_large), len(converted.unreadable)
    notes = [selection.skipped(),
             f"skipped {large} file(s) larger than {max_file_bytes / 2**20:g} MiB" if large else "",
             f"skipped {unreadable} file(s) that could not be read" if unreadable else "",
             f"cut {cut} passage(s) to {max_passage_chars} characters" if cut else "",
             f"{duplicates} passage(s) shared an id with a later one: the last of each kept" if duplicates
             else ""]
    read = {source_of(p) for p in converted.read}
    return Passages(passages, selection.files, read, kept, [n for n in notes if n])


__all__ = ["ALSO_KEY", "BOOKKEEPING", "MAX_FILE_BYTES", "MAX_PASSAGE_CHARS", "ROOT_KEY", "SOURCE_KEY",
           "SUFFIXES", "Converted", "FileSelection", "Passages", "convert_files", "cut_passages", "last_wins",
           "read_bounded", "read_jsonl", "read_sources", "same_text", "select_files", "source_of",
           "split_documents", "unsupported"]
