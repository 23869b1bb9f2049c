"""Issue 71 (E1, E2, E10) as a user meets them: real `cfrag index` runs (each a process of its own, the tests'
hashing embedder in place of the model: `tests.unit.indexing.child`) on a FAISS store, the store's passages
counted before and after each step.

Before (58316b0): a PDF cut short by a partial download lost its passage on the next ordinary run ("1
removed", exit 0); `--prune` after the corpus folder was renamed emptied the store ("3 removed", exit 0);
indexing a copy of the folder, deleting the copy and pruning emptied the store although the original files
were still there.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.integration.test_index_safety import child

pytest.importorskip("pypdf", reason="PDF files are converted by haystack-cfrag[files]")
pytest.importorskip("mdit_plain", reason="Markdown files are converted by haystack-cfrag[files]")


def pdf_bytes(text: str) -> bytes:
    """A one-page PDF whose text is `text` (Helvetica, no compression)."""
    content = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
               b"/Resources << /Font << /F1 5 0 R >> >> >>",
               b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for i, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (i, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def corpus(folder: Path) -> Path:
    """sm/: a.md, b.md, c.pdf, one passage each (the issue's corpus)."""
    folder.mkdir(parents=True)
    (folder / "a.md").write_text("# Rivers\n\nRain causes floods in the valley.\n", encoding="utf-8")
    (folder / "b.md").write_text("# Roads\n\nFloods close the mountain roads.\n", encoding="utf-8")
    (folder / "c.pdf").write_bytes(pdf_bytes("Closed roads delay the school buses every winter."))
    return folder


def run(tmp: Path, *args: object, code: int = 0) -> str:
    done = child(tmp, "never", *args)
    assert done.returncode == code, (done.stdout, done.stderr)
    assert "Traceback" not in done.stdout + done.stderr
    return done.stdout + done.stderr


def count(spec: str) -> int:
    from haystack_cfrag.stores import close_document_store, open_document_store

    store = open_document_store(spec, faiss_device=-1)
    try:
        assert store.index.ntotal == store.count_documents(), "a vector no passage owns"
        return store.count_documents()
    finally:
        close_document_store(store)


@pytest.fixture
def indexed(tmp_path):
    sm = corpus(tmp_path / "sm")
    spec = f"faiss:{tmp_path / 'P' / 'store'}"
    run(tmp_path, sm, "--store", spec)
    assert count(spec) == 3
    return tmp_path, sm, spec


def test_e1_a_pdf_cut_short_and_an_emptied_file_keep_their_passages(indexed):
    tmp, sm, spec = indexed
    with (sm / "c.pdf").open("r+b") as fh:  # truncate -s 200: a partial download, a sync placeholder
        fh.truncate(200)
    (sm / "b.md").write_text("", encoding="utf-8")
    out = run(tmp, sm, "--store", spec)
    assert "0 removed" in out and "kept: c.pdf gave no text (1 passage)" in out, out
    assert "kept: b.md gave no text (1 passage)" in out
    assert count(spec) == 3
    out = run(tmp, "--prune", "--store", spec)  # both files are still there: nothing to prune
    assert "0 removed" in out and count(spec) == 3, out


@pytest.mark.parametrize("how", ["renamed", "emptied"])
def test_e2_prune_after_the_folder_was_moved_or_unmounted_refuses_and_keeps_the_store(indexed, how):
    tmp, sm, spec = indexed
    if how == "renamed":
        sm.rename(tmp / "sm_moved")
    else:  # an unmounted disk leaves its mount point empty
        for f in sm.iterdir():
            f.unlink()
    out = run(tmp, "--prune", "--store", spec, code=1)
    last = [line for line in out.strip().splitlines() if line.startswith("Error:")]
    assert len(last) == 1 and "--prune would remove" in last[0] and "nothing written" in last[0], out
    assert count(spec) == 3
    assert "3 removed" in run(tmp, "--prune", "--force", "--store", spec) and count(spec) == 0


def test_e10_a_copy_indexed_then_deleted_and_pruned_leaves_the_originals_passages(indexed):
    tmp, sm, spec = indexed
    copy = tmp / "sm_copy"
    shutil.copytree(sm, copy)
    assert "0 added, 0 replaced, 0 removed, 3 kept" in run(tmp, copy, "--store", spec)
    assert count(spec) == 3
    shutil.rmtree(copy)
    out = run(tmp, "--prune", "--store", spec)
    assert "0 removed" in out and count(spec) == 3, out
    out = run(tmp, sm, "--store", spec)  # the original read again: its passages are its own
    assert "0 added, 0 replaced, 0 removed, 3 kept" in out and count(spec) == 3, out
