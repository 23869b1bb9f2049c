"""A throwaway fifth family for tests/unit/architecture/test_families.py: one component, declared in the
test."""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict


@component
class TitleAnswerer:
    """Answers with `prefix:` and the first document's first words (no model)."""

    def __init__(self, *, prefix: str = "toy") -> None:
        self.prefix = prefix

    @component.output_types(answer=str, trace=dict)
    def run(self, query: str, documents: list[Document], prefix: str | None = None) -> dict[str, Any]:
        """The answer and a trace of what was read."""
        first = " ".join((documents[0].content or "").split()[:3]) if documents else ""
        return {"answer": f"{prefix or self.prefix}: {first}", "trace": {"read": [d.id for d in documents]}}

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, prefix=self.prefix)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TitleAnswerer":
        return default_from_dict(cls, data)
