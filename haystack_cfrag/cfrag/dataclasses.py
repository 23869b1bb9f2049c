"""The Draft passed from ParallelDraftGenerator to CausalArbitrationRanker."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from haystack import Document

NO_EVIDENCE = "no evidence"
"""`Draft.error` of a draft that was not written because its evidence subset was empty."""

SOURCE_KEY = "cfrag_source"
"""`Draft.meta` key of a baseline draft: "baseline" (the drafter's `baseline_documents`) or "answers" (given)."""
BASELINE_SOURCES = ("baseline", "answers")


@dataclass(frozen=True)
class Draft:
    """One answer drafted from one evidence subset.

    :param index: position of the evidence subset the draft was written from.
    :param answer: the short answer parsed from the reply ("" when the call failed).
    :param rationale: the model's reason, as parsed.
    :param documents: the evidence the draft saw, in prompt order.
    :param key_evidence: 1-based numbers of the passages the model says it used.
    :param conflicts: what the model said disagrees.
    :param reply: the raw reply text.
    :param token_logprobs: log-probabilities of the reply's tokens when the generator gives them.
    :param parsed_by: "json", "labels" or "first_line".
    :param error: why the draft failed (the ranker skips drafts with an error).
    :param meta: generator meta (model, usage) of the reply.
    """

    index: int
    answer: str
    rationale: str = ""
    documents: list[Document] = field(default_factory=list)
    key_evidence: list[int] = field(default_factory=list)
    conflicts: str = ""
    reply: str = ""
    token_logprobs: list[float] | None = None
    parsed_by: str = ""
    error: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        """True when the draft has no usable answer."""
        return self.error is not None or not self.answer.strip()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict (documents as Haystack document dicts)."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["documents"] = [d.to_dict() for d in self.documents]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Draft:
        """Inverse of `to_dict`."""
        return cls(**{**data, "documents": [Document.from_dict(d) for d in data.get("documents", [])]})
