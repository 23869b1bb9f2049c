"""Issue #43, item 2: `cfrag index` bounds what it reads and writes.

Before: a 200 MB sparse .txt (NUL bytes are valid UTF-8) was read whole and went past 4 GB;
a JSONL line or a text without spaces became one passage of any length. Now a file over the
bound is skipped without being read (its size is checked on the open file), a passage over the
bound is cut, and both are counted in the summary line.
"""

import json
import tracemalloc

from click.testing import CliRunner
from haystack import Document

from haystack_cfrag.adapters import factories
from haystack_cfrag.cli import main
from haystack_cfrag.stores import open_document_store
from haystack_cfrag.stores.sources import MAX_FILE_BYTES, convert_files, cut_passages, read_bounded
from tests.fakes import HashingDocumentEmbedder

MIB = 1024 * 1024


def _sparse(path, size):
    with path.open("wb") as fh:  # a sparse file: no disk, all NUL bytes
        fh.truncate(size)
    return path


def test_a_file_over_the_bound_is_skipped_without_being_read(tmp_path):
    huge = _sparse(tmp_path / "huge.txt", 200 * MIB)
    small = tmp_path / "small.txt"
    small.write_text("Rain causes floods in the valley.", encoding="utf-8")
    tracemalloc.start()
    try:
        converted = convert_files([huge, small], max_file_bytes=MIB)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert converted.too_large == [huge]
    assert [d.content for d in converted.documents] == ["Rain causes floods in the valley."]
    assert peak < 8 * MIB, peak  # before: the 200 MB file read whole (and more)


def test_the_default_bound_and_a_file_exactly_at_the_bound(tmp_path):
    assert convert_files([_sparse(tmp_path / "big.jsonl", MAX_FILE_BYTES + 1)]).too_large
    at = tmp_path / "at.txt"
    at.write_bytes(b"word " * 200)
    assert read_bounded(at, 1000) == b"word " * 200
    assert read_bounded(at, 999) is None


def test_long_passages_are_cut_and_counted_ids_kept_inputs_unchanged():
    long = Document(id="line-7", content="x" * 50_000, meta={"source": "a.jsonl"})
    short = Document(content="Rain causes floods.")
    passages, cut = cut_passages([long, short], max_chars=1000)
    assert cut == 1
    assert passages[0].id == "line-7" and len(passages[0].content) == 1000
    assert passages[0].meta["cut_from_chars"] == 50_000
    assert passages[1] is short
    assert len(long.content) == 50_000 and "cut_from_chars" not in long.meta


def test_cfrag_index_skips_and_cuts_and_says_so_in_its_summary(tmp_path, monkeypatch):
    embedder = HashingDocumentEmbedder()
    embedder.warm_up = lambda: None
    monkeypatch.setattr(factories, "document_embedder", lambda *_a, **_k: embedder)
    folder = tmp_path / "docs"
    folder.mkdir()
    _sparse(folder / "sparse.txt", 3 * MIB)
    (folder / "notes.txt").write_text("Rain causes floods in the valley.", encoding="utf-8")
    (folder / "lines.jsonl").write_text(json.dumps({"id": "p1", "content": "y" * 5000}) + "\n", encoding="utf-8")
    store = tmp_path / "store.json"
    result = CliRunner().invoke(main, ["index", str(folder), "--store", str(store), "--max-file-mb", "1",
                                       "--max-passage-chars", "1000"])
    assert result.exit_code == 0, result.output
    summary = result.output.strip().splitlines()[-1]
    assert "skipped 1 file(s) larger than 1 MiB" in summary, summary
    assert "cut 1 passage(s) to 1000 characters" in summary, summary
    written = open_document_store(str(store)).filter_documents()
    assert sorted(len(d.content) for d in written) == [33, 1000]


def test_only_files_over_the_bound_is_a_one_line_error(tmp_path, monkeypatch):
    monkeypatch.setattr(factories, "document_embedder", lambda *_a, **_k: HashingDocumentEmbedder())
    big = _sparse(tmp_path / "big.md", 2 * MIB)
    result = CliRunner().invoke(main, ["index", str(big), "--store", str(tmp_path / "s.json"), "--max-file-mb", "1"])
    assert result.exit_code == 1
    assert "no passage to index" in result.output and "larger than 1 MiB" in result.output, result.output
    assert not (tmp_path / "s.json").exists()
