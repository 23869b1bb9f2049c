"""Labelled gate examples from `cfrag eval` run folders (what `cascade.fit` fits): "won", "lost" or "same" by
what the method did to standard RAG's answer (EM), features from the sample's gate reading; a question lacking
either is counted in `missing`.

    >>> recs = [{"system": "standard_rag", "params": {}, "qid": "q1", "question": "Who?", "em": 0.0},
    ...         {"system": "cf_rag", "params": {}, "qid": "q1", "question": "Who?", "em": 1.0},
    ...         {"system": "gate_signals", "params": {}, "qid": "q1", "question": "Who?", "em": 0.0,
    ...          "gate": {"signals": {"answer": "X", "support": -0.3}}}]
    >>> examples, missing = label_records({"trap": recs}, "cf_rag")
    >>> [(e.sample, e.qid, e.outcome) for e in examples], missing
    ([('trap', 'q1', 'won')], {})
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from haystack_cfrag.cascade.fit import Example
from haystack_cfrag.evaluation.provenance import read_metadata
from haystack_cfrag.evaluation.summary import read_records

BASELINE = "standard_rag"
FOLDER = "_folder"
"""Where a record was read (a method's outcome is against standard RAG of the same run)."""


def sample_name(folder: Path) -> str:
    """The sample a run folder read: its data file's stem (from `metadata.json`), else the folder's name."""
    data = ((read_metadata(folder) or {}).get("config") or {}).get("data")
    return Path(data).stem if isinstance(data, str) and data else Path(folder).name


def records_by_sample(folders: Iterable[str | Path]) -> dict[str, list[dict[str, Any]]]:
    """Every folder's main-comparison records, grouped by sample (refuses a folder without records)."""
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for folder in folders:
        path = Path(folder)
        recs = [r for r in read_records(path) if r.get("inject", 0) == 0 and r.get("variant") is None]
        if not recs:
            raise ValueError(f"gate fit: {path} holds no records (a `cfrag eval` output folder is needed).")
        for r in recs:
            condition = str(r.get("condition") or "pooled")
            out[sample_name(path) + ("" if condition == "pooled" else f"/{condition}")].append({**r, FOLDER: str(path)})
    return dict(out)


def label_records(samples: Mapping[str, list[dict[str, Any]]], method: str) -> tuple[list[Example], dict[str, int]]:
    """Examples of every sample, and per sample how many questions lacked an answer or a reading."""
    examples: list[Example] = []
    missing: dict[str, int] = {}
    for sample, recs in samples.items():
        plain = defaultdict(dict)  # qid -> system spec ("cf_rag", "cdf_rag[support_threshold=-0.5]") -> record
        readings: dict[str, dict[str, Any]] = {}
        questions: dict[str, str] = {}
        for r in recs:
            qid = str(r.get("qid"))
            questions.setdefault(qid, str(r.get("question") or ""))
            if not r.get("error"):
                plain[qid].setdefault(system_spec(r), []).append(r)
            signals = (r.get("gate") or {}).get("signals") if isinstance(r.get("gate"), dict) else None
            if isinstance(signals, dict):
                readings.setdefault(qid, signals)
        lacking = 0
        for qid in questions:
            others = next((plain[qid][spec] for spec in method.replace(" ", "").split("|") if plain[qid].get(spec)), [])
            bases = plain[qid].get(BASELINE) or []
            other = others[0] if others else None  # standard RAG of the method's own run where there is one
            base = next((b for b in bases if other is not None and b.get(FOLDER) == other.get(FOLDER)),
                        bases[0] if bases else None)
            if base is None or other is None or qid not in readings:
                lacking += 1
                continue
            b, m = float(base.get("em") or 0.0), float(other.get("em") or 0.0)
            outcome = "won" if m > b else "lost" if b > m else "same"
            examples.append(Example(sample, qid, questions[qid], readings[qid], outcome))
        if lacking:
            missing[sample] = lacking
    return examples, missing


def system_spec(record: Mapping[str, Any]) -> str:
    """A record's system as `cfrag eval --systems` named it: "cf_rag", or "cdf_rag[support_threshold=-0.5]".

    >>> system_spec({"system": "cdf_rag[support_threshold = -0.5]"})
    'cdf_rag[support_threshold=-0.5]'
    """
    return str(record.get("system") or "").replace(" ", "")


def examples_from_runs(folders: Iterable[str | Path], method: str) -> tuple[list[Example], dict[str, int]]:
    """`label_records` over run folders (`records_by_sample`). `method` may name alternatives, the first a folder
    holds counting: "cdf_rag[support_threshold=-0.5]|cdf_rag" (a default that ran under another name)."""
    return label_records(records_by_sample(folders), method)
