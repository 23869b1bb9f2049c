"""CausalRAG's node names (paper 004, §4.1), pure: cleaned, keyed (one node per `node_key`), node Document ids.

>>> clean_name('  "Heath   Ledger" '), node_key("The  Joker"), relation_key("PLAYS_ROLE")
('Heath Ledger', 'joker', 'plays_role')
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from typing import Any

MAX_NAME_CHARS = 120
"""A node name longer than this (after cleaning) is refused: it is a sentence, not an entity."""
MAX_RELATION_CHARS = 60
"""A relation is cut to this many characters."""
MAX_TYPE_CHARS = 40
"""A node type is cut to this many characters."""

NODE_DOCUMENT_PREFIX = "cfrag_graph_node:"
NODE_FLAG = "cfrag_graph_node"
"""Node Documents carry meta[NODE_FLAG] = True (the graph retriever filters on it)."""

_CONTROL = re.compile(r"[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028\u2029\ufeff]")
_EDGE_CHARS = " \t\"'`*_#>[](){}<«»“”‘’.,;:!?-–—"
_SPECIAL_TOKEN = re.compile(r"<\|[^|]{0,40}\|>|</?s>")
_LEADING_ARTICLE = re.compile(r"^(?:the|a|an)\s+")


def clean_name(text: Any) -> str:
    """A node name as shown (NFKC, no control or template tokens, quotes, markdown; single spaces); "" if none.

    >>> clean_name('  "Heath   Ledger" ')
    'Heath Ledger'
    >>> clean_name("**Joker**."), clean_name("<|im_end|>"), clean_name("x" * 500)
    ('Joker', '', '')
    """
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        return ""
    text = unicodedata.normalize("NFKC", str(text))
    text = _SPECIAL_TOKEN.sub(" ", _CONTROL.sub(" ", text))
    text = " ".join(text.split()).strip(_EDGE_CHARS)
    if not text or len(text) > MAX_NAME_CHARS:
        return ""
    return text


def clean_key(clean: str) -> str:
    """The key of a name `clean_name` already cleaned (`node_key` of any name)."""
    key = _LEADING_ARTICLE.sub("", clean.casefold())
    return " ".join(key.replace("_", " ").split())


def node_key(name: Any) -> str:
    """The key two names of one node share ("" for no name): case, spacing, a leading article ignored.

    >>> node_key("The  Joker"), node_key("joker!"), node_key("JOKER")
    ('joker', 'joker', 'joker')
    """
    return clean_key(clean_name(name))


def clean_relation(text: Any) -> str:
    """A relation as shown: cleaned like a name, cut to MAX_RELATION_CHARS; "" when empty.

    >>> clean_relation(" plays_role "), clean_relation(None)
    ('plays_role', '')
    """
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        return ""
    text = unicodedata.normalize("NFKC", str(text))
    text = " ".join(_SPECIAL_TOKEN.sub(" ", _CONTROL.sub(" ", text)).split()).strip(_EDGE_CHARS)
    return text[:MAX_RELATION_CHARS].strip()


def relation_key(relation: str) -> str:
    """Case, spaces, hyphens and underscores ignored: "PLAYS_ROLE" and "plays role" are one relation."""
    return "_".join(re.split(r"[\s_\-]+", relation.casefold())).strip("_")


def clean_type(text: Any) -> str:
    """A node type as shown (cut to MAX_TYPE_CHARS), "" when none."""
    return clean_relation(text)[:MAX_TYPE_CHARS].strip()


def node_document_id(node_id: str) -> str:
    """The id of the node's Document: stable for a node key, so re-indexing overwrites it.

    >>> node_document_id("Joker") == node_document_id("the joker")
    True
    """
    digest = hashlib.sha256((NODE_DOCUMENT_PREFIX + node_key(node_id)).encode("utf-8")).hexdigest()
    return f"cfrag_node_{digest[:40]}"


__all__ = ["MAX_NAME_CHARS", "MAX_RELATION_CHARS", "MAX_TYPE_CHARS", "NODE_DOCUMENT_PREFIX", "NODE_FLAG",
           "clean_key", "clean_name", "clean_relation", "clean_type", "node_document_id", "node_key",
           "relation_key"]
