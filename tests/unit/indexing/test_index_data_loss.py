"""Issue 71 (E1, E2, E7, E10): re-indexing never loses a passage whose file is still there.

Before (58316b0): a file that was still there but gave no text (emptied, a PDF cut short) lost its passages
on the next ordinary run ("1 removed", E1), and one that could not be read stopped the run with a traceback;
`--prune` after the corpus folder was moved emptied the store, and any `OSError` on a source counted as
"gone" (E2); indexing a copy of a folder handed its passages to the copy, so deleting the copy and pruning
emptied the store (E10); a JSONL line with an `id` but no `source` was stored under a content hash (E7).
"""

from __future__ import annotations

import errno
import json
import os
import pathlib
import shutil

import pytest
from click.testing import CliRunner

from haystack_cfrag.adapters import factories
from haystack_cfrag.cli import main
from haystack_cfrag.stores import close_document_store, open_document_store
from tests.fakes import HashingDocumentEmbedder


@pytest.fixture
def fake(monkeypatch, tmp_path):
    embedder = HashingDocumentEmbedder(dimension=16)
    embedder.warm_up = lambda: None
    monkeypatch.setattr(factories, "document_embedder", lambda *_a, **_k: embedder)
    monkeypatch.setenv("CFRAG_CACHE_DIR", str(tmp_path / "cache"))
    return embedder


def index(*args, code=0):
    result = CliRunner().invoke(main, ["index", *map(str, args)])
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    return result.output


def passages(spec) -> dict[str, str]:
    store = open_document_store(spec)
    try:
        return {d.id: d.content for d in store.filter_documents()}
    finally:
        close_document_store(store)


def corpus(folder: pathlib.Path) -> pathlib.Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in (("a", "Rain causes floods in the valley."), ("b", "Floods close the mountain roads."),
                       ("c", "Closed roads delay the school buses.")):
        (folder / f"{name}.txt").write_text(text, encoding="utf-8")
    return folder


@pytest.mark.parametrize("emptied", ["", "   \n\n"])
def test_e1_a_file_still_there_that_gives_no_text_keeps_its_passages_and_is_named(fake, tmp_path, emptied):
    spec = str(tmp_path / "store.json")
    sm = corpus(tmp_path / "sm")
    index(sm, "--store", spec)
    before = passages(spec)
    (sm / "c.txt").write_text(emptied, encoding="utf-8")  # a sync placeholder, a half-written file
    out = index(sm, "--store", spec)
    assert "0 removed" in out and "kept: c.txt gave no text (1 passage)" in out, out
    assert passages(spec) == before and len(before) == 3


def test_e1_a_file_that_cannot_be_read_keeps_its_passages(fake, tmp_path, monkeypatch):
    spec = str(tmp_path / "store.json")
    sm = corpus(tmp_path / "sm")
    index(sm, "--store", spec)
    before = passages(spec)
    real_open = pathlib.Path.open

    def refuse(self, *args, **kwargs):
        if self.name == "b.txt":
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "open", refuse)
    out = index(sm, "--store", spec)
    assert "0 removed" in out and "kept: b.txt could not be read (Permission denied) (1 passage)" in out, out
    assert passages(spec) == before


def test_e2_prune_after_the_folder_moved_refuses_in_one_line_and_force_removes(fake, tmp_path):
    spec = str(tmp_path / "store.json")
    sm = corpus(tmp_path / "sm")
    index(sm, "--store", spec)
    before = passages(spec)
    sm.rename(tmp_path / "moved")  # moved, renamed or unmounted
    out = index("--prune", "--store", spec, code=1)
    last = out.strip().splitlines()
    assert len(last) == 1 and "--prune would remove the passages of 3 of the 3 files" in last[0], out
    assert "nothing written" in last[0] and "--prune --force" in last[0]
    assert passages(spec) == before
    assert "3 removed" in index("--prune", "--force", "--store", spec) and passages(spec) == {}


def test_e2_prune_refuses_every_passage_of_a_folder_gone_even_when_it_is_a_small_share(fake, tmp_path):
    spec = str(tmp_path / "store.json")
    big, small = corpus(tmp_path / "big"), tmp_path / "small"
    for i in range(4):
        (big / f"more{i}.txt").write_text(f"Harvest {i} failed after the drought.", encoding="utf-8")
    small.mkdir()
    (small / "d.txt").write_text("Prices rose in the market.", encoding="utf-8")
    index(big, small, "--store", spec)
    shutil.rmtree(small)  # 1 file of 8: a small share, but every passage of a folder gone
    out = index("--prune", "--store", spec, code=1)
    assert f"every passage of {small}, which no longer exists" in out, out
    assert len(passages(spec)) == 8


def test_e2_prune_keeps_the_passages_of_a_file_that_cannot_be_checked(fake, tmp_path, monkeypatch):
    spec = str(tmp_path / "store.json")
    sm = corpus(tmp_path / "sm")
    index(sm, "--store", spec)
    (sm / "a.txt").unlink()
    real_stat = os.stat

    def stale(path, *args, **kwargs):  # an NFS handle gone stale, a folder without permission: not proof
        if str(path).endswith("b.txt"):
            raise OSError(errno.ESTALE, "Stale file handle", str(path))
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stale)
    out = index("--prune", "--store", spec)
    assert "1 removed" in out, out
    assert "kept: b.txt could not be checked (Stale file handle) (1 passage)" in out, out
    assert sorted(passages(spec).values()) == ["Closed roads delay the school buses.",
                                               "Floods close the mountain roads."]


@pytest.mark.parametrize("kind", ["memory", "qdrant"])
@pytest.mark.parametrize("deleted", ["copy", "original"])
def test_e10_a_copy_never_takes_the_originals_passages(fake, tmp_path, deleted, kind):
    if kind == "qdrant":  # a store that writes a kept passage's sources back with its vector
        pytest.importorskip("haystack_integrations.document_stores.qdrant")
    spec = str(tmp_path / "store.json") if kind == "memory" else f"qdrant:{tmp_path / 'q'}#docs"
    sm = corpus(tmp_path / "sm")
    index(sm, "--store", spec)
    copy = tmp_path / "sm_copy"
    shutil.copytree(sm, copy)
    assert "0 added, 0 replaced, 0 removed, 3 kept" in index(copy, "--store", spec)
    before = passages(spec)
    shutil.rmtree(copy if deleted == "copy" else sm)
    out = index("--prune", "--store", spec)
    assert "0 removed" in out, out
    assert passages(spec) == before and len(before) == 3  # either one left still gives them


def test_e10_an_edited_copy_removes_nothing_the_original_still_gives(fake, tmp_path):
    spec = str(tmp_path / "store.json")
    sm = corpus(tmp_path / "sm")
    copy = tmp_path / "sm_copy"
    shutil.copytree(sm, copy)
    index(sm, copy, "--store", spec)
    (copy / "a.txt").write_text("Something else entirely.", encoding="utf-8")
    out = index(copy, "--store", spec)
    assert "1 added, 0 replaced, 0 removed" in out, out
    assert "Rain causes floods in the valley." in passages(spec).values()


@pytest.mark.parametrize("content", ["A short line.", " ".join(["word"] * 400)])
def test_e7_a_jsonl_line_with_an_id_and_no_source_keeps_its_id(fake, tmp_path, content):
    spec = str(tmp_path / "store.json")
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"id": "my-id-1", "content": content}) + "\n", encoding="utf-8")
    index(rows, "--store", spec)
    assert passages(spec) == {"my-id-1": content}  # one passage under its own id, never split


def test_dry_run_prints_the_plan_by_file_and_writes_nothing(fake, tmp_path):
    spec = str(tmp_path / "store.json")
    sm = corpus(tmp_path / "sm")
    index(sm, "--store", spec)
    saved = (tmp_path / "store.json").read_bytes()
    (sm / "a.txt").write_text("Rain causes landslides.", encoding="utf-8")
    (sm / "c.txt").write_text("", encoding="utf-8")
    (sm / "d.txt").write_text("A new file.", encoding="utf-8")
    fake.calls = 0
    out = index(sm, "--store", spec, "--dry-run")
    assert "dry run, nothing written: 2 added, 0 replaced, 1 removed, 1 kept" in out, out
    assert f"  {sm / 'a.txt'}: 1 added, 1 removed" in out and f"  {sm / 'b.txt'}: 1 kept" in out
    assert f"  {sm / 'c.txt'}: kept, gave no text (1 passage)" in out and f"  {sm / 'd.txt'}: 1 added" in out
    assert (tmp_path / "store.json").read_bytes() == saved and fake.calls == 0
    assert not (tmp_path / ".store.json.cfrag-lock").exists()
