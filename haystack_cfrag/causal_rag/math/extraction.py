"""CausalRAG's extraction step (paper 004, §4.1), pure: the official character windows (`chunk_text`), the
reply read into nodes and triples (`parse_extraction`: the prompt-based list, LLMGraphTransformer's structured
format, fenced or cut-off JSON, "head -> relation -> tail" lines; bounded, never raises), and the cache's keys.

>>> ex = parse_extraction('[{"head": "Aspirin", "head_type": "Drug", "relation": "REDUCES", '
...                       '"tail": "Inflammation", "tail_type": "Condition"}, {"head": "x"}]')
>>> ex.triples[0].head, ex.triples[0].relation, ex.triples[0].tail, ex.invalid, ex.parsed
('Aspirin', 'REDUCES', 'Inflammation', 1, True)
>>> parse_extraction("I cannot help with that.").parsed
False
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from haystack_cfrag.causal_rag.math.graph import DEFAULT_RELATION, Triple
from haystack_cfrag.causal_rag.math.names import clean_name, clean_relation, clean_type, node_key
from haystack_cfrag.common.validation import check_int

DEFAULT_CHUNK_CHARS = 1000
"""Characters per chunk (the official code's `chunk_size`)."""
DEFAULT_CHUNK_OVERLAP = 100
"""Characters two consecutive chunks share (the official code's `chunk_overlap`)."""
MIN_CHUNK_CHARS, MAX_CHUNK_CHARS = 100, 20_000
"""The range of `chunk_chars`; the overlap is in [0, chunk_chars // 2]."""
DEFAULT_MAX_TRIPLES = 50
"""Triples kept from one chunk's reply by default."""
MAX_TRIPLES = 500
"""The range of `max_triples` is [1, MAX_TRIPLES]."""
MAX_REPLY_CHARS = 60_000
"""A reply is read up to this many characters (the rest is ignored and `truncated` is set)."""
MAX_SALVAGE_TRIES = 2_000
"""Objects a broken reply is searched for at most (bounds the work on hostile replies)."""
CACHE_VERSION = 1
"""Bumped when the cached extraction's format or meaning changes (old entries then miss)."""

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
_ARROW_LINE = re.compile(
    r"^\s*(?:[-*•]|\d+[.)])?\s*\(?\s*(?P<head>[^\n|>→()]{1,200}?)\s*(?:-+>|→|\|)\s*(?:\[\s*)?"
    r"(?P<rel>[^\n|>→\[\]]{1,100}?)\s*(?:\s*\])?\s*(?:-+>|→|\|)\s*(?P<tail>[^\n|>→()]{1,200}?)\s*\)?\s*$",
    re.MULTILINE,
)
_LIST_KEYS = ("relationships", "triples", "relations", "edges", "links", "graph", "data", "results")
_HEAD_KEYS = ("head", "source", "subject", "cause", "from")
_TAIL_KEYS = ("tail", "target", "object", "effect", "to")
_REL_KEYS = ("relation", "type", "relationship", "predicate", "label")


@dataclass(frozen=True)
class Extraction:
    """One chunk's extraction: nodes (name, type), triples; `parsed` False when nothing was readable (an empty
    list parses), `invalid` items that made nothing, `truncated` when cut."""

    nodes: tuple[tuple[str, str], ...] = ()
    triples: tuple[Triple, ...] = ()
    invalid: int = 0
    parsed: bool = True
    reason: str = ""
    truncated: bool = False

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the cache's record of a chunk)."""
        return {
            "nodes": [list(n) for n in self.nodes],
            "triples": [[t.head, t.relation, t.tail, t.head_type, t.tail_type, *([t.cue] if t.cue else [])]
                        for t in self.triples],
            "invalid": self.invalid,
            "parsed": self.parsed,
            "reason": self.reason,
            "truncated": self.truncated,
        }

    @classmethod
    def from_dict(cls, data: Any) -> Extraction:
        """Inverse of `to_dict`, strict: raises ValueError on anything malformed (a corrupt cache file)."""
        if not isinstance(data, Mapping):
            raise ValueError("an extraction record must be an object")
        nodes, triples = data.get("nodes"), data.get("triples")
        if not isinstance(nodes, list) or not isinstance(triples, list):
            raise ValueError("an extraction record needs 'nodes' and 'triples' lists")
        if not all(isinstance(n, list) and len(n) == 2 and all(isinstance(x, str) for x in n) for n in nodes):
            raise ValueError("malformed node in an extraction record")
        if not all(isinstance(t, list) and len(t) in (5, 6) and all(isinstance(x, str) for x in t)
                   for t in triples):
            raise ValueError("malformed triple in an extraction record")
        invalid, parsed = data.get("invalid"), data.get("parsed")
        if not isinstance(invalid, int) or isinstance(invalid, bool) or invalid < 0 or not isinstance(parsed, bool):
            raise ValueError("malformed counts in an extraction record")
        return cls(nodes=tuple((n[0], n[1]) for n in nodes), triples=tuple(Triple(*t) for t in triples),
                   invalid=invalid, parsed=parsed, reason=str(data.get("reason", ""))[:200],
                   truncated=bool(data.get("truncated", False)))


# ------------------------------------------------------------------ chunking and hashing
def check_chunking(chunk_chars: int, chunk_overlap: int) -> None:
    """ValueError unless chunk_chars is in [MIN_CHUNK_CHARS, MAX_CHUNK_CHARS], the overlap in [0, chunk_chars // 2]."""
    check_int("chunk_chars", chunk_chars, MIN_CHUNK_CHARS, MAX_CHUNK_CHARS)
    check_int("chunk_overlap", chunk_overlap, 0, chunk_chars // 2)


def chunk_text(text: str, chunk_chars: int = DEFAULT_CHUNK_CHARS,
               chunk_overlap: int = DEFAULT_CHUNK_OVERLAP) -> list[str]:
    """Character windows of `chunk_chars`, each starting `chunk_chars - chunk_overlap` after the last.

    >>> [len(c) for c in chunk_text("x" * 2500)]
    [1000, 1000, 700]
    >>> chunk_text("  short  "), chunk_text("   ")
    (['short'], [])
    """
    check_chunking(chunk_chars, chunk_overlap)
    text = (text or "").strip()
    if not text:
        return []
    step = chunk_chars - chunk_overlap
    chunks = []
    start = 0
    while True:
        chunks.append(text[start:start + chunk_chars])
        if start + chunk_chars >= len(text):
            return chunks
        start += step


def passage_hash(text: str) -> str:
    """SHA-256 (hex) of the passage text in Unicode NFC: equal texts share cached extractions.

    >>> passage_hash("Caf\\u00e9") == passage_hash("Cafe\\u0301")
    True
    """
    return hashlib.sha256(unicodedata.normalize("NFC", text or "").encode("utf-8")).hexdigest()


def cache_key(content_hash: str, fingerprint: str) -> str:
    """The cache file's key: the passage hash and what else decides the extraction, as one hex digest.

    >>> len(cache_key(passage_hash("a"), "prompt|1000|100|model"))
    64
    """
    blob = json.dumps([CACHE_VERSION, content_hash, fingerprint], ensure_ascii=True)
    return hashlib.sha256(blob.encode("ascii")).hexdigest()


# ------------------------------------------------------------------ parsing
def check_max_triples(value: int) -> None:
    check_int("max_triples", value, 1, MAX_TRIPLES)


class _Reader:
    def __init__(self, max_triples: int) -> None:
        self.max_triples = max_triples
        self.nodes: dict[str, tuple[str, str]] = {}
        self.triples: dict[tuple[str, str, str], Triple] = {}
        self.invalid = 0
        self.truncated = False
        self.found = False

    def value(self, value: Any, depth: int = 0) -> None:
        """Read one decoded JSON value: a list of items, an object wrapping lists, or one item."""
        if depth > 3:
            self.invalid += 1
            return
        if isinstance(value, list):
            self.found = True
            for item in value:
                self.item(item, depth)
        elif isinstance(value, Mapping):
            lists = [k for k in (*_LIST_KEYS, "nodes", "entities") if isinstance(value.get(k), list)]
            if lists:
                self.found = True
                for k in lists:
                    for item in value[k]:
                        self.item(item, depth, node_list=k in ("nodes", "entities"))
            elif self._is_link(value) or "id" in value or "name" in value:
                self.found = True
                self.item(value, depth)
            else:
                self.invalid += 1
        else:
            self.invalid += 1

    def item(self, item: Any, depth: int, node_list: bool = False) -> None:
        if isinstance(item, list) and len(item) == 3 and all(isinstance(x, str) for x in item):
            return self.triple(item[0], item[1], item[2])  # ["head", "relation", "tail"]
        if isinstance(item, list):
            return self.value(item, depth + 1)
        if not isinstance(item, Mapping):
            self.invalid += 1
            return None
        if not node_list and self._is_link(item):
            head, head_type = _end(item, _HEAD_KEYS, "head_type")
            tail, tail_type = _end(item, _TAIL_KEYS, "tail_type")
            rel = next((item[k] for k in _REL_KEYS if k in item), None)
            return self.triple(head, rel, tail, head_type, tail_type)
        name = item.get("id", item.get("name"))
        if clean_name(name):
            return self.node(name, item.get("type", item.get("label", "")))
        self.invalid += 1
        return None

    @staticmethod
    def _is_link(item: Mapping) -> bool:
        return any(k in item for k in _HEAD_KEYS) and any(k in item for k in _TAIL_KEYS)

    def node(self, name: Any, node_type: Any = "") -> None:
        clean, key = clean_name(name), node_key(name)
        if key and key not in self.nodes:
            self.nodes[key] = (clean, clean_type(node_type))

    def triple(self, head: Any, rel: Any, tail: Any, head_type: Any = "", tail_type: Any = "") -> None:
        h, t = clean_name(head), clean_name(tail)
        r = clean_relation(rel) if rel is not None else DEFAULT_RELATION
        if not h or not t or node_key(h) == node_key(t) or not r:
            self.invalid += 1
            return
        key = (node_key(h), r.casefold(), node_key(t))
        if key in self.triples:
            return
        if len(self.triples) >= self.max_triples:
            self.truncated = True
            return
        self.triples[key] = Triple(h, r, t, clean_type(head_type), clean_type(tail_type))
        self.node(h, head_type)
        self.node(t, tail_type)

    def result(self, parsed: bool, reason: str) -> Extraction:
        return Extraction(nodes=tuple(self.nodes.values()), triples=tuple(self.triples.values()),
                          invalid=self.invalid, parsed=parsed, reason=reason, truncated=self.truncated)


def _end(item: Mapping, keys: tuple[str, ...], type_key: str) -> tuple[Any, Any]:
    """A link's end: a name, or a node object {"id", "type"} (LLMGraphTransformer's relationships)."""
    value = next((item[k] for k in keys if k in item), None)
    if isinstance(value, Mapping):
        return value.get("id", value.get("name")), value.get("type", "")
    return value, item.get(type_key, "")


def _decode_at(text: str, start: int) -> tuple[Any, int] | None:
    try:
        return json.JSONDecoder().raw_decode(text, start)
    except (ValueError, RecursionError):
        return None


def parse_extraction(reply: Any, *, max_triples: int = DEFAULT_MAX_TRIPLES) -> Extraction:
    """Nodes and triples from an extraction reply; never raises on the reply's content.

    >>> ex = parse_extraction('Here you go:\\n```json\\n[{"head": "Rain", "relation": "causes", '
    ...                       '"tail": "Flood"}, {"head": "Flood", "relation": "dam')     # cut off
    >>> [(t.head, t.tail) for t in ex.triples], ex.parsed
    ([('Rain', 'Flood')], True)
    >>> [(t.head, t.relation, t.tail) for t in parse_extraction("1. Rain -> causes -> Flood").triples]
    [('Rain', 'causes', 'Flood')]
    >>> parse_extraction("[" * 100_000).parsed
    False
    """
    check_max_triples(max_triples)
    reader = _Reader(max_triples)
    if not isinstance(reply, str):
        return reader.result(False, "the reply is not text")
    if len(reply) > MAX_REPLY_CHARS:
        reply = reply[:MAX_REPLY_CHARS]
        reader.truncated = True
    fenced = _FENCE.search(reply)
    candidates = [fenced.group(1)] if fenced else []
    candidates.append(reply)
    for text in candidates:
        start = min((i for i in (text.find("["), text.find("{")) if i >= 0), default=-1)
        decoded = _decode_at(text, start) if start >= 0 else None
        if decoded is not None:
            reader.value(decoded[0])
            if reader.found:
                return reader.result(True, "")
    # a broken reply (cut off mid-list, junk between items): keep every complete object in it
    tries, pos = 0, reply.find("{")
    while pos >= 0 and tries < MAX_SALVAGE_TRIES:
        tries += 1
        decoded = _decode_at(reply, pos)
        if decoded is None:
            pos = reply.find("{", pos + 1)
            continue
        value, end = decoded
        if isinstance(value, Mapping) and (_Reader._is_link(value) or "id" in value):
            reader.found = True
            reader.item(value, 0)
        else:
            reader.invalid += 1
        pos = reply.find("{", end)
    if reader.found:
        return reader.result(True, "partial JSON: only the complete objects were read")
    for m in _ARROW_LINE.finditer(reply):
        reader.found = True
        reader.triple(m.group("head"), m.group("rel"), m.group("tail"))
    if reader.found and reader.triples:
        return reader.result(True, "no JSON: 'head -> relation -> tail' lines were read")
    return reader.result(False, "no extraction found in the reply")


_NON_WORD = re.compile(r"[^0-9a-z]+")


def _words(text: str) -> str:
    return " " + _NON_WORD.sub(" ", unicodedata.normalize("NFKC", text or "").casefold()).strip() + " "


def grounded(name: str, text: str) -> bool:
    """Whether a node name occurs in `text` as whole words (case, accents' forms, punctuation aside): small
    extractors copy the prompt's few-shot example into their replies.

    >>> grounded("Christopher Nolan", "…directed by Christopher  Nolan, and…"), grounded("Microsoft", "a 2008 film")
    (True, False)
    >>> grounded("Nolan", "Nolanesque"), grounded("", "anything")
    (False, False)
    """
    words = _words(name)
    return bool(words.strip()) and words in _words(text)


def grounded_triples(triples: list[Triple], text: str) -> tuple[list[Triple], int]:
    """The triples whose head and tail both occur in `text`, and how many were dropped.

    >>> kept, dropped = grounded_triples([Triple("Film", "DIRECTED_BY", "Nolan"),
    ...                                   Triple("Film", "PRODUCED_BY", "Microsoft")], "Film by Nolan")
    >>> [t.tail for t in kept], dropped
    (['Nolan'], 1)
    """
    kept = [t for t in triples if grounded(t.head, text) and grounded(t.tail, text)]
    return kept, len(triples) - len(kept)


def per_extracted_passage(stats: dict[str, Any]) -> tuple[float, float] | None:
    """Seconds and LLM tokens per passage the LLM extracted, replayed calls at their original seconds (None when
    every passage came from the cache).

    >>> per_extracted_passage({"extracted": 3, "seconds": 30.0, "prompt_tokens": 900, "completion_tokens": 300})
    (10.0, 400.0)
    >>> per_extracted_passage({"extracted": 2, "replayed": 2, "seconds": 0.5, "replayed_seconds": 19.5,
    ...                        "prompt_tokens": 600, "completion_tokens": 200})
    (10.0, 400.0)
    >>> per_extracted_passage({"extracted": 0, "seconds": 2.0}) is None
    True
    """
    n = int(stats.get("extracted", 0) or 0)
    if n == 0:
        return None
    tokens = int(stats.get("prompt_tokens", 0) or 0) + int(stats.get("completion_tokens", 0) or 0)
    seconds = float(stats.get("seconds", 0.0) or 0.0) + float(stats.get("replayed_seconds", 0.0) or 0.0)
    return seconds / n, tokens / n


def result(extractions: list[Extraction], meta: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """An extractor's output, checked to hold one meta per extraction."""
    meta = meta if meta is not None else [{} for _ in extractions]
    if len(meta) != len(extractions):
        raise ValueError("an extractor returned a different number of extractions and meta entries.")
    return {"extractions": extractions, "meta": meta}


__all__ = ["CACHE_VERSION", "DEFAULT_CHUNK_CHARS", "DEFAULT_CHUNK_OVERLAP", "DEFAULT_MAX_TRIPLES",
           "MAX_CHUNK_CHARS", "MAX_REPLY_CHARS", "MAX_TRIPLES", "MIN_CHUNK_CHARS", "Extraction", "cache_key",
           "check_chunking", "grounded", "grounded_triples", "check_max_triples", "chunk_text",
           "parse_extraction", "passage_hash", "per_extracted_passage", "result"]
