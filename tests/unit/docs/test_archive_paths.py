"""The archives under docs/results/ hold relative paths only, never one of the machine that wrote them (issue 62).

`docs/results/memory_2026-11-28/peaks.jsonl` kept `/work/scale/mem_after/eval/results.json` from the
command it measured. Every text file under docs/results/ is read with the pattern of the project's
own check (`/work/shared/hooks/before-stop`): a `/work/`, `/root/`, `/home/` or `/tmp/` path opening
a quoted string, or a `/work/`, `/root/`, `/home/` path after white space, `=` or `(`. (A README's
shell example may use /tmp as scratch space: `-C /tmp/$a` is an instruction, not a path of the run.)
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

RESULTS = Path(__file__).resolve().parents[3] / "docs" / "results"
TEXT = (".md", ".json", ".jsonl", ".csv", ".txt", ".yml", ".yaml")
MACHINE_PATH = re.compile(r'"(/(?:work|root|home|tmp)/[^\s"]*)|[\s=(](/(?:work|root|home)/[^\s"]*)')
r"""The before-stop check's pattern, `"/(work|root|home|tmp)/|([[:space:]]|=|\()/(work|root|home)/`, the path
captured."""


def machine_paths(text: str) -> list[str]:
    """The machine paths in `text`.

    >>> machine_paths('{"tail": "results \\u2192 /work/scale/eval/results.json, eval/report.md", "p": "/tmp/x"}')
    ['/work/scale/eval/results.json,', '/tmp/x']
    >>> machine_paths("tar -xJf docs/results/a/replay.tar.xz -C /tmp/a; see mem_after/eval/report.md")
    []
    """
    return [quoted or bare for quoted, bare in MACHINE_PATH.findall(text)]


FILES = sorted(p for p in RESULTS.rglob("*") if p.is_file() and p.suffix in TEXT)


def test_the_archives_have_text_files_to_read():
    assert len(FILES) > 100 and any(p.name == "peaks.jsonl" for p in FILES)


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(RESULTS)) for p in FILES])
def test_an_archived_text_file_holds_no_absolute_path_of_a_machine(path):
    found = machine_paths(path.read_text(encoding="utf-8", errors="replace"))
    assert found == [], f"{path.relative_to(RESULTS.parents[1])}: write these relative to the run folder: {found[:5]}"
