"""Reading a run: its declared outputs, a cascade's gate, and the answer, trace and evidence (`Answer`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from haystack_cfrag.cascade.math import GATE_KEY


@dataclass
class Answer:
    """The result of one question through one pipeline."""

    pipeline: str
    answer: str
    trace: dict[str, Any] | None
    documents: list[dict[str, Any]]
    seconds: float
    stages: dict[str, float]
    llm: dict[str, Any]
    outputs: dict[str, Any] = field(default_factory=dict, repr=False)  # the pipeline's raw outputs
    gate: dict[str, Any] | None = None
    """A cascade's escalation gate: escalated or not, because …, its signals (None: not a cascade)."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-serialisable."""
        return {
            "pipeline": self.pipeline,
            "answer": self.answer,
            **({"gate": self.gate} if self.gate is not None else {}),
            "seconds": round(self.seconds, 3),
            "stages": {k: round(v, 3) for k, v in self.stages.items()},
            "llm": self.llm,
            "documents": self.documents,
            "trace": self.trace,
        }


def declared(out: dict[str, Any], outputs: dict[str, str]) -> dict[str, Any]:
    """The part of a run's raw outputs that the file declares (all of it when it declares none).

    >>> declared({"a": {"answer": "x", "trace": {}}, "b": {"answer": "y"}}, {"answer": "b.answer"})
    {'b': {'answer': 'y'}}
    """
    if not outputs:
        return out
    kept: dict[str, Any] = {}
    for target in outputs.values():
        comp, socket = target.split(".", 1)
        if isinstance(out.get(comp), dict) and socket in out[comp]:
            kept.setdefault(comp, {})[socket] = out[comp][socket]
    return kept or out


def gate_reading(kept: dict[str, Any], outputs: dict[str, str]) -> dict[str, Any] | None:
    """A cascade's gate trace (the file's `gate` output), taken out of `kept`.

    >>> kept = {"gate": {"trace": {"escalated": False}}, "builder": {"answers": []}}
    >>> gate_reading(kept, {"gate": "gate.trace"}), kept
    ({'escalated': False}, {'builder': {'answers': []}})
    """
    target = outputs.get(GATE_KEY)
    if not target:
        return None
    comp, socket = target.split(".", 1)
    sockets = kept.get(comp)
    if not isinstance(sockets, dict) or socket not in sockets:
        return None
    reading = sockets.pop(socket)
    if not sockets:
        del kept[comp]
    return reading if isinstance(reading, dict) else None


def read_outputs(
    out: dict[str, Any], *, by_stage: bool = False
) -> tuple[str, dict[str, Any] | None, list[dict[str, Any]]]:
    """(answer, trace, evidence) of a pipeline run, read from its output sockets, whatever the nodes are named.

    An `answer` string socket gives the answer and its `trace`; else the first `answers` list of `GeneratedAnswer`s,
    with the one `trace` output, or {component: trace} when several (or `by_stage`). None: an empty answer.

    >>> from haystack.dataclasses import GeneratedAnswer
    >>> read_outputs({"builder": {"answers": [GeneratedAnswer(data=" Bale ", query="q", documents=[])]}})
    ('Bale', None, [])
    >>> out = {"check": {"trace": {"decision": "keep"}},
    ...        "builder": {"answers": [GeneratedAnswer(data="Bale", query="q", documents=[])]}}
    >>> read_outputs(out)[1], read_outputs(out, by_stage=True)[1]
    ({'decision': 'keep'}, {'check': {'decision': 'keep'}})
    """
    for sockets in out.values():
        if isinstance(sockets, dict) and isinstance(sockets.get("answer"), str):
            best = (sockets.get("answers") or [None])[0]
            docs = getattr(best, "documents", None) or []
            return sockets["answer"], sockets.get("trace"), [_doc_summary(d) for d in docs]
    for sockets in out.values():
        answers = sockets.get("answers") if isinstance(sockets, dict) else None
        if answers and hasattr(answers[0], "data"):
            traces = {c: s["trace"] for c, s in out.items() if isinstance(s, dict) and isinstance(s.get("trace"), dict)}
            trace = next(iter(traces.values())) if len(traces) == 1 and not by_stage else (traces or None)
            docs = [_doc_summary(d) for d in answers[0].documents or []]
            return (answers[0].data or "").strip(), trace, docs
    return "", None, []


def _doc_summary(doc: Any) -> dict[str, Any]:
    return {"id": doc.id, "title": doc.meta.get("title"), "score": doc.score}


__all__ = ["Answer", "declared", "gate_reading", "read_outputs"]
