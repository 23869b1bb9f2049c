"""The scale benchmarks' one output step: a JSON line printed, and appended to the run's archive file."""

from __future__ import annotations

import json
from pathlib import Path


def emit(line: dict, out: Path | None) -> None:
    """Print `line` as one JSON line; append it to `out` when given (probes.jsonl, copies.jsonl …)."""
    text = json.dumps(line)
    print(text)
    if out:
        with out.open("a") as fh:
            fh.write(text + "\n")
