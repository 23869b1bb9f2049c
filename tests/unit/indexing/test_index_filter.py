"""`select_files`, the one file filter of `cfrag index`: what a folder gives, what is skipped and counted."""

import os
from pathlib import Path

import pytest

from haystack_cfrag.stores.sources import SUFFIXES, convert_files, select_files, unsupported


@pytest.fixture
def folder(tmp_path):
    """A project folder with secrets beside the notes."""
    root = tmp_path / "project"
    for name, text in {
        "notes.md": "# Notes\n\nThe garden grows basil.",
        "a.txt": "plain text",
        "b.TEXT": "upper-case suffix",
        "c.markdown": "markdown",
        "d.jsonl": '{"content": "a passage"}\n',
        "sub/deeper/e.txt": "nested",
        ".env": "OPENAI_API_KEY=sk-secret",
        ".hidden.md": "a hidden Markdown file",
        ".git/config": "[remote] url = https://token@example.com",
        ".ssh/id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----",
        "sub/.cache/f.txt": "inside a hidden folder below",
        "LICENSE": "no suffix",
        "Makefile": "no suffix either",
        "image.png": "not text",
        "data.json": "{}",
    }.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def names(paths, root):
    return sorted(str(p.relative_to(root)) for p in paths)


def test_a_folder_gives_only_the_documented_types_and_counts_the_rest(folder):
    selection = select_files([folder])
    assert names(selection.files, folder) == ["a.txt", "b.TEXT", "c.markdown", "d.jsonl", "notes.md",
                                              "sub/deeper/e.txt"]
    assert names(selection.hidden, folder) == [".env", ".git", ".hidden.md", ".ssh", "sub/.cache"]
    assert names(selection.other_types, folder) == ["LICENSE", "Makefile", "data.json", "image.png"]
    assert selection.skipped() == "skipped 5 hidden, 4 of other types"


def test_include_hidden_reads_hidden_files_of_the_documented_types_only(folder):
    selection = select_files([folder], include_hidden=True)
    assert ".hidden.md" in names(selection.files, folder) and "sub/.cache/f.txt" in names(selection.files, folder)
    read = names(selection.files, folder)
    assert not any(n in read for n in (".env", ".git/config", ".ssh/id_rsa"))  # no suffix: still not read
    assert {".env", ".git/config", ".ssh/id_rsa"} <= set(names(selection.other_types, folder))
    assert selection.hidden == []


def test_the_folder_named_may_itself_be_hidden(tmp_path):
    root = tmp_path / ".notes"
    root.mkdir()
    (root / "a.md").write_text("kept")
    assert names(select_files([root]).files, root) == ["a.md"]


@pytest.mark.parametrize("name", ["LICENSE", ".env", "image.png", "data.json", "archive.tar.gz"])
def test_a_file_named_on_the_command_line_must_be_of_a_documented_type(tmp_path, name):
    path = tmp_path / name
    path.write_text("secret")
    with pytest.raises(ValueError, match=rf"{name}: (no file type suffix|unsupported file type)") as err:
        select_files([path])
    assert "\n" not in str(err.value) and ".txt, .text, .md, .markdown, .pdf, .jsonl" in str(err.value)
    with pytest.raises(ValueError, match="no file type suffix|unsupported file type"):
        convert_files([path])  # the converter refuses the same files: no-suffix files are never read as text


def test_a_file_named_is_read_even_when_hidden_and_must_be_a_regular_file(tmp_path):
    hidden = tmp_path / ".draft.md"
    hidden.write_text("named, so chosen")
    assert select_files([hidden]).files == [hidden]
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="pipe.txt: not a regular file"):
        select_files([fifo])
    assert select_files([tmp_path]).other_types == [fifo]  # in a folder: skipped and counted, never opened


def test_links_out_of_the_folder_are_skipped_and_counted_links_inside_are_read(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not in the folder")
    root = tmp_path / "project"
    root.mkdir()
    (root / "real.md").write_text("inside")
    (root / "to_secret.txt").symlink_to(outside / "secret.txt")
    (root / "to_outside").symlink_to(outside, target_is_directory=True)
    (root / "dangling.txt").symlink_to(tmp_path / "missing.txt")
    (root / "alias.md").symlink_to(root / "real.md")
    (root / "loop").symlink_to(root, target_is_directory=True)  # a folder link inside: not followed
    selection = select_files([root])
    assert names(selection.files, root) == ["alias.md", "real.md"]
    assert names(selection.outside, root) == ["dangling.txt", "to_outside", "to_secret.txt"]
    assert selection.skipped() == "skipped 3 links leading out of the folder"


def test_the_documented_types_are_the_only_ones():
    assert SUFFIXES == (".txt", ".text", ".md", ".markdown", ".pdf", ".jsonl")
    assert unsupported(Path("x.MD")) is None
    assert unsupported(Path("README")).startswith("no file type suffix")
