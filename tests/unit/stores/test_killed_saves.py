"""Issue #43, item 5: store saves are atomic; what a killed save leaves is finished or removed.

Before: a FAISS store killed between its two renames opened with 5 documents and 2 vectors, and
kill -9 left temporary files beside stores. The FAISS cases kill a real subprocess (SIGKILL)
at the moment named, then open the store here.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from haystack import Document

from haystack_cfrag.stores import open_document_store, save_document_store
from haystack_cfrag.stores.kinds.base import remove_leftovers
from haystack_cfrag.stores.kinds.faiss_files import finish_interrupted_save

WRITER = """
import os, signal, sys
from haystack import Document
from haystack.document_stores.types import DuplicatePolicy
from haystack_cfrag.stores import open_document_store, save_document_store
from haystack_cfrag.stores.kinds import faiss_files

spec, n, kill_at = sys.argv[1], int(sys.argv[2]), sys.argv[3]
real_replace = os.replace

def replace(src, dst):
    if kill_at != "never" and str(dst).endswith(kill_at):
        os.kill(os.getpid(), signal.SIGKILL)
    real_replace(src, dst)

faiss_files.os.replace = replace
store = open_document_store(spec, embedding_dim=4, create=True, faiss_device=-1)
docs = [Document(id=f"d{i}", content=f"passage {i}", embedding=[float(i), 1.0, 0.0, 0.0]) for i in range(n)]
store.write_documents(docs, policy=DuplicatePolicy.OVERWRITE)
save_document_store(store, spec)
"""


def _write(spec: str, n: int, kill_at: str = "never") -> int:
    return subprocess.run([sys.executable, "-c", WRITER, spec, str(n), kill_at], capture_output=True,  # noqa: S603
                          timeout=120, check=False).returncode


def _faiss_counts(spec: str) -> tuple[int, int]:
    store = open_document_store(spec, faiss_device=-1)
    return store.count_documents(), store.index.ntotal


@pytest.fixture
def faiss_spec(tmp_path):
    pytest.importorskip("faiss")
    pytest.importorskip("haystack_integrations.document_stores.faiss")
    spec = f"faiss:{tmp_path / 'stores' / 'demo'}"
    assert _write(spec, 3) == 0
    return spec


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_a_faiss_save_killed_between_its_two_moves_opens_with_the_complete_new_pair(faiss_spec, tmp_path):
    assert _write(faiss_spec, 5, kill_at=".faiss") == -9  # killed after the .json moved in, before the .faiss
    assert _faiss_counts(faiss_spec) == (5, 5)  # before: 5 documents, 3 vectors
    folder = tmp_path / "stores"
    assert _leftovers(folder) == [] and not (folder / ".demo.cfrag-commit").exists()


def test_a_faiss_save_killed_before_its_commit_keeps_the_old_pair_and_the_next_save_removes_its_files(
        faiss_spec, tmp_path):
    assert _write(faiss_spec, 5, kill_at=".cfrag-commit") == -9  # the new pair written, not yet the store
    folder = tmp_path / "stores"
    assert _faiss_counts(faiss_spec) == (3, 3)
    assert len(_leftovers(folder)) >= 1  # what the killed save wrote: ignored by readers …
    assert _write(faiss_spec, 4) == 0
    assert _faiss_counts(faiss_spec) == (4, 4)
    assert _leftovers(folder) == []  # … and removed by the next save


def test_a_memory_store_save_removes_leftovers_of_killed_saves_but_never_a_link_or_a_users_file(tmp_path):
    store_path = tmp_path / "store.json"
    store = open_document_store(str(store_path), create=True)
    store.write_documents([Document(content="one", embedding=[1.0, 0.0])])
    save_document_store(store, str(store_path))
    killed = tmp_path / ".store.json.k1ll3d_x.tmp"  # the name mkstemp gave a save that was killed
    killed.write_text("half a store", encoding="utf-8")
    precious = tmp_path / "precious.txt"
    precious.write_text("mine", encoding="utf-8")
    link = tmp_path / ".store.json.l1nk0000.tmp"
    link.symlink_to(precious)
    users = tmp_path / ".store.json.my-notes.tmp"
    users.write_text("not a temporary file of ours", encoding="utf-8")
    save_document_store(store, str(store_path))
    assert not killed.exists()
    assert link.is_symlink() and precious.read_text(encoding="utf-8") == "mine"
    assert users.exists()
    assert open_document_store(str(store_path)).count_documents() == 1


def test_a_commit_record_naming_anything_but_a_temporary_folder_is_refused_and_nothing_moves(tmp_path):
    base = tmp_path / "demo"
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "demo.json").write_text("{}", encoding="utf-8")
    for name in ("../elsewhere", "elsewhere", ".demo.../x.tmp", 7):
        (tmp_path / ".demo.cfrag-commit").write_text(json.dumps({"folder": name}), encoding="utf-8")
        with pytest.raises(ValueError, match="not a commit record cfrag wrote"):
            finish_interrupted_save(base)
    assert not base.with_suffix(".json").exists() and (outside / "demo.json").exists()


def test_a_finished_commit_whose_folder_is_gone_is_just_removed(tmp_path):
    base = tmp_path / "demo"
    (tmp_path / ".demo.cfrag-commit").write_text(json.dumps({"folder": ".demo.abcd1234.tmp"}), encoding="utf-8")
    assert finish_interrupted_save(base) is True
    assert not (tmp_path / ".demo.cfrag-commit").exists()
    assert finish_interrupted_save(base) is False


def test_leftovers_are_only_this_users_regular_files_and_real_folders(tmp_path):
    base = tmp_path / "demo"
    (tmp_path / ".demo.abcd1234.tmp").mkdir()
    (tmp_path / ".demo.abcd1234.tmp" / "demo.faiss").write_bytes(b"x")
    (tmp_path / "..demo.cfrag-commit.zz99zz99.tmp").write_text("{}", encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / ".demo.linkdir0.tmp").symlink_to(elsewhere, target_is_directory=True)
    removed = remove_leftovers(base)
    assert sorted(p.name for p in removed) == ["..demo.cfrag-commit.zz99zz99.tmp", ".demo.abcd1234.tmp"]
    assert elsewhere.is_dir() and (tmp_path / ".demo.linkdir0.tmp").is_symlink()
    assert sorted(os.listdir(tmp_path)) == [
        ".demo.linkdir0.tmp", "elsewhere"]
