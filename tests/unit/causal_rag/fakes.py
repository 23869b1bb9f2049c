"""Inline fakes for the CausalRAG component tests (no models)."""

from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.dataclasses import ChatMessage

EXTRACTIONS = {
    "Heavy rain": '[{"head": "Heavy rain", "head_type": "Weather", "relation": "CAUSES", "tail": "Flood", '
                  '"tail_type": "Event"}]',
    "The flood": '[{"head": "Flood", "relation": "DAMAGES", "tail": "Crops"}, '
                 '{"head": "Flood", "relation": "CLOSES", "tail": "Roads"}]',
    "Drought": '[{"head": "Drought", "relation": "DAMAGES", "tail": "Crops"}]',
    "Gibberish": "I am not sure what you mean.",
}


@component
class ScriptedExtractor:
    """Replies with the extraction of the first key found in the prompt's text ("[]" if none); records prompts.

    `fail_on`: keys whose prompts raise. `usage`: token counts put in the reply's meta.
    """

    def __init__(self, table: dict | None = None, fail_on: list | None = None, usage: bool = True) -> None:
        self.table = dict(EXTRACTIONS if table is None else table)
        self.fail_on = list(fail_on or [])
        self.usage = usage
        self.prompts: list[str] = []

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage], generation_kwargs: dict | None = None) -> dict[str, Any]:
        prompt = messages[-1].text or ""
        self.prompts.append(prompt)
        text = prompt.rsplit("Text: ", 1)[-1]
        if any(k in text for k in self.fail_on):
            raise RuntimeError("extractor down")
        reply = next((v for k, v in self.table.items() if k in text), "[]")
        meta = {"usage": {"prompt_tokens": 100, "completion_tokens": 10}} if self.usage else {}
        return {"replies": [ChatMessage.from_assistant(reply, meta=meta)]}

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, table=self.table, fail_on=self.fail_on, usage=self.usage)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ScriptedExtractor":
        return default_from_dict(cls, data)


@component
class TableEmbedder:
    """A document embedder that looks vectors up by content (seeded vectors); unknown texts get `otherwise`."""

    def __init__(self, table: dict | None = None, dimension: int = 4) -> None:
        self.table = dict(table or {})
        self.dimension = dimension
        self.calls = 0

    def vector(self, text: str) -> list[float]:
        # floats, as a real embedder returns: pgvector's driver refuses a list mixing ints and floats
        return [float(x) for x in self.table.get(text, [0.01] * self.dimension)]

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, Any]:
        self.calls += 1
        from dataclasses import replace
        return {"documents": [replace(d, embedding=self.vector(d.content or "")) for d in documents]}

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, table=self.table, dimension=self.dimension)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TableEmbedder":
        return default_from_dict(cls, data)


@component
class ScriptedGenerator:
    """Replies with `replies` in turn (the last one repeats), or raises on the calls listed in `fail`."""

    def __init__(self, replies: list | None = None, fail: list | None = None) -> None:
        self.replies = list(replies or ["ok"])
        self.fail = list(fail or [])
        self.prompts: list[str] = []

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage]) -> dict[str, Any]:
        n = len(self.prompts)
        self.prompts.append(messages[-1].text or "")
        if n in self.fail:
            raise RuntimeError("generator down")
        return {"replies": [ChatMessage.from_assistant(self.replies[min(n, len(self.replies) - 1)])]}

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, replies=self.replies, fail=self.fail)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ScriptedGenerator":
        return default_from_dict(cls, data)
