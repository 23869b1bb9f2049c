"""How a `Runtime` hands its models and store to the pipelines it builds: Haystack's deserialisation callback.

`RuntimeParts.plan(data)` reads a pipeline dict once and gives each role the runtime's part: chat generator,
text embedder, embedding retriever, keyword retriever and ranker. A node's role is read from the sockets the
file wires (`node_role`), a part's from the type its parent declares (`part_role`): no class or model name is
read, and the file's model classes need not import. A generator of the model the file's metadata names
`auxiliary_model` becomes the runtime's auxiliary generator.

A node with a role takes the runtime's configuration (and borrows its loaded model); a part with a role is
handed in at construction; every `document_store` is the runtime's. `plan(data, swap=True)` writes the same
into a file for stock Hayhooks (`cfrag serve --yaml`)."""

from __future__ import annotations

import copy
import importlib
import inspect
import typing
from dataclasses import dataclass, field
from typing import Any

from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.core.serialization import DeserializationCallbacks, component_from_dict, import_class_by_name

from haystack_cfrag.common.protocols import ChatGenerator, Retriever, TextEmbedder
from haystack_cfrag.common.serialization import serialize_component
from haystack_cfrag.pipelines.loading import TRUSTED_PREFIXES, check_classes

GENERATOR, EMBEDDER, RETRIEVER, KEYWORD, SCORER = "chat generator", "text embedder", "retriever", "keyword", "scorer"
AUXILIARY = "auxiliary chat generator"


AUXILIARY_KEY = "auxiliary_model"
"""The pipeline `metadata:` key naming the model of the file's auxiliary calls."""


def auxiliary_model(data: dict[str, Any]) -> str | None:
    """The model a pipeline dict's metadata declares auxiliary (None: none declared).

    >>> auxiliary_model({"metadata": {"auxiliary_model": "embedded:qwen2.5-coder-0.5b-instruct"}})
    'embedded:qwen2.5-coder-0.5b-instruct'
    """
    declared = (data.get("metadata") or {}).get(AUXILIARY_KEY) if isinstance(data.get("metadata"), dict) else None
    return declared if isinstance(declared, str) and declared else None


def node_role(node: dict[str, Any], sends: set[str], receives: set[str]) -> str | None:
    """The role of a pipeline node, from the sockets the file wires to it.

    >>> node_role({"init_parameters": {}}, {"replies"}, {"messages"})
    'chat generator'
    >>> node_role({"init_parameters": {"document_store": {}}}, {"documents"}, {"query_embedding"})
    'retriever'
    >>> node_role({"init_parameters": {}}, {"documents", "causal_edges"}, {"query_embedding"}) is None
    True
    """
    holds_store = "document_store" in (node.get("init_parameters") or {})
    if "messages" in receives and "replies" in sends:
        return GENERATOR
    if "text" in receives and "embedding" in sends:
        return EMBEDDER
    if sends == {"documents"} and holds_store:
        if "query_embedding" in receives:
            return RETRIEVER
        if "query" in receives and "documents" not in receives:
            return KEYWORD
    if sends == {"documents"} and {"query", "documents"} <= receives and not holds_store:
        return SCORER
    return None


def wired_sockets(data: dict[str, Any]) -> dict[str, tuple[set[str], set[str]]]:
    """node -> (the sockets it sends, the sockets it receives), from `connections`, `inputs` and `outputs`.

    >>> wired_sockets({"connections": [{"sender": "a.x", "receiver": "b.y"}], "inputs": {"q": ["a.q"]}})
    {'a': ({'x'}, {'q'}), 'b': (set(), {'y'})}
    """
    wired: dict[str, tuple[set[str], set[str]]] = {}

    def add(target: Any, side: int) -> None:
        name, _, socket = str(target).partition(".")
        if socket:
            wired.setdefault(name, (set(), set()))[side].add(socket)

    for link in data.get("connections") or []:
        add(link.get("sender"), 0)
        add(link.get("receiver"), 1)
    for targets in (data.get("inputs") or {}).values():
        for target in targets if isinstance(targets, list) else [targets]:
            add(target, 1)
    for targets in (data.get("outputs") or {}).values():
        for target in targets if isinstance(targets, list) else [targets]:
            add(target, 0)
    return wired


def part_role(hint: Any) -> str | None:
    """The role of an injected part, from the type its parent declares for it (`common.protocols`).

    >>> part_role(ChatGenerator | None), part_role(TextEmbedder), part_role(int) is None
    ('chat generator', 'text embedder', True)
    """
    kinds = set(typing.get_args(hint)) - {type(None)} if typing.get_args(hint) else {hint}
    if ChatGenerator in kinds:
        return GENERATOR
    if TextEmbedder in kinds:
        return EMBEDDER
    if kinds and kinds == set(typing.get_args(Retriever) or ()):
        return RETRIEVER
    return None


def ranks(cls: type | None) -> bool:
    """Whether a class's `run` ranks documents for a query (a cross-encoder: `query`, `documents`, `top_k`)."""
    run = getattr(cls, "run", None)
    params = set(inspect.signature(run).parameters) if callable(run) else set()
    return {"query", "documents", "top_k"} <= params and "query_embedding" not in params


def qualified_name(cls: type) -> str:
    """The `type:` Haystack writes for a class."""
    return f"{cls.__module__}.{cls.__name__}"


@dataclass
class RuntimeParts:
    """A runtime's parts for one build: `plan` rewrites the dict, `callbacks()` goes to `Pipeline.from_dict`.

    :param generator, text_embedder, scorer: the runtime's model instances (for `plan(swap=True)` also their
        dicts; None keeps the file's own).
    :param retriever: the runtime's embedding retriever (None: the file's own, on the store).
    :param keyword: the store's own keyword retriever (pgvector), or None.
    :param keyword_store: gives the store BM25 in memory reads (built on first need).
    :param allowed: trusted module prefixes: a class is imported only after `loading.check_classes`.
    :param auxiliary: gives the auxiliary generator, called only for a file that names one (None: the reader).
    """

    generator: Any
    text_embedder: Any
    scorer: Any | None
    retriever: Any | None
    keyword: Any | None
    store: Any
    keyword_store: Any
    allowed: tuple[str, ...] = TRUSTED_PREFIXES
    auxiliary: Any | None = None
    declared: str | None = None  # the model the file's metadata names auxiliary (read by `plan`)
    nodes: dict[str, str] = field(default_factory=dict)  # node -> the `type:` it is built as
    slots: dict[tuple[str, str, str], tuple[str, dict[str, Any]]] = field(default_factory=dict)
    """(node, the parent's `type:`, parameter) -> (role, the file's part) for every part taken out of the dict."""

    def plan(self, data: dict[str, Any], *, swap: bool = False) -> dict[str, Any]:
        """A copy of `data` with nodes that have a role made the runtime's and parts with a role taken out (`swap`:
        replaced in place, serialised, for a process that builds the file itself)."""
        data = copy.deepcopy(data)  # the resolved YAML is shared (`registry.resolve`): never changed
        self.declared = auxiliary_model(data)
        wired = wired_sockets(data)
        for name, node in data["components"].items():
            role = node_role(node, *wired.get(name, (set(), set())))
            new = self._node(role, node)
            if new is not None:
                data["components"][name] = node = new
            self.nodes[name] = node.get("type", "")
            if swap and "document_store" in (node.get("init_parameters") or {}) and self.store is not None:
                node["init_parameters"]["document_store"] = _as_dict(self.store)
            self._take_parts(name, node, swap)
        return data

    def callbacks(self) -> DeserializationCallbacks:
        """What `Pipeline.from_dict(data, callbacks=…)` takes, for the dict `plan` gave."""
        return DeserializationCallbacks(component_pre_init=self.hand_in)

    def hand_in(self, name: str, cls: type, init_params: dict[str, Any]) -> None:
        """Haystack's pre-init callback: the runtime's parts into the parent being built, its store into a node."""
        for (node, parent, key), (role, part) in self.slots.items():
            if node == name and self._names(parent, cls) and init_params.get(key) is None:
                init_params[key] = self._part(role, part)
        if self._names(self.nodes.get(name), cls) and "document_store" in init_params:
            init_params["document_store"] = self._store_for(cls)

    def _names(self, type_name: str | None, cls: type) -> bool:
        """Whether a `type:` names `cls` (its own path, or a path it is imported by)."""
        return type_name == qualified_name(cls) or (type_name is not None and self._class(type_name) is cls)

    def _node(self, role: str | None, node: dict[str, Any]) -> dict[str, Any] | None:
        kept = node.get("init_parameters") or {}
        if role == GENERATOR:
            return _as_dict(self._generator_for(node))
        if role == EMBEDDER:
            return _as_dict(self.text_embedder)
        if role == SCORER and self.scorer is not None:
            return _as_dict(self.scorer)
        if role == RETRIEVER and self.retriever is not None:
            return _retriever_like(self.retriever, kept)
        if role == KEYWORD and self.keyword is not None:
            new = _as_dict(self.keyword)
            new["init_parameters"]["top_k"] = kept.get("top_k", 5)
            return new
        return None

    def _take_parts(self, name: str, node: dict[str, Any], swap: bool = False) -> None:
        """Record and take out (`swap`: replace) the parts with a role, at any depth (a scorer's chat generator)."""
        params = node.get("init_parameters") or {}
        hints = self._init_hints(node.get("type"))
        for key, part in params.items():
            role = self._part_role(hints, key, part)
            if swap and role == RETRIEVER and not self._embeds(part):  # the file's own (keyword), on the store
                role = None
                if "document_store" in part["init_parameters"] and self.store is not None:
                    part["init_parameters"]["document_store"] = _as_dict(self.store)
            new = self._node(GENERATOR if role == AUXILIARY else role, part) if swap and role else None
            if new is not None:
                params[key] = new
            elif role is not None and not swap:
                self.slots[(name, node["type"], key)] = (role, part)
                params[key] = None
            elif _is_part(part):
                self._take_parts(name, part, swap)

    def _part_role(self, hints: dict[str, Any], key: str, part: Any) -> str | None:
        """The role of an init parameter that is a serialised part (None: not a part, or no role)."""
        if not _is_part(part):
            return None
        role = part_role(hints.get(key))
        if role is None and self.scorer is not None and ranks(self._class(part["type"])):
            role = SCORER
        return AUXILIARY if role == GENERATOR and self._is_auxiliary(part) else role

    def _is_auxiliary(self, part: dict[str, Any]) -> bool:
        """Whether a generator's dict is configured with the model the file declares auxiliary."""
        model = (part.get("init_parameters") or {}).get("model")
        return self.auxiliary is not None and self.declared is not None and model == self.declared

    def _generator_for(self, part: dict[str, Any]) -> Any:
        return self.auxiliary() if self._is_auxiliary(part) else self.generator

    def _part(self, role: str, part: dict[str, Any]) -> Any:
        if role == GENERATOR:
            return self.generator
        if role == AUXILIARY:
            return self.auxiliary()
        if role == EMBEDDER:
            return self.text_embedder
        if role == SCORER:
            return self.scorer
        # a retriever: the runtime's (the file's top_k kept), or the file's own, on the runtime's store
        kept = part.get("init_parameters") or {}
        data = _retriever_like(self.retriever, kept) if self.retriever is not None and self._embeds(part) else part
        cls = import_class_by_name(data["type"])
        handed = DeserializationCallbacks(lambda _n, c, p: p.update(document_store=self._store_for(c)))
        return component_from_dict(cls, data, cls.__name__, callbacks=handed)

    def _embeds(self, part: dict[str, Any]) -> bool:
        """Whether a retriever part's own class retrieves by a query embedding."""
        own = self._class(part["type"])
        return own is not None and "query_embedding" in inspect.signature(own.run).parameters

    def _store_for(self, cls: type) -> Any:
        return self.keyword_store() if issubclass(cls, InMemoryBM25Retriever) else self.store

    def _class(self, type_name: str | None) -> type | None:
        """The class a `type:` names, imported only when on the allowlist; None when it does not import."""
        if not type_name or "." not in type_name:
            return None
        check_classes({"type": type_name}, self.allowed)
        module, _, name = type_name.rpartition(".")
        try:
            return getattr(importlib.import_module(module), name, None)
        except ImportError:
            return None

    def _init_hints(self, type_name: str | None) -> dict[str, Any]:
        cls = self._class(type_name)
        try:
            return typing.get_type_hints(cls.__init__) if cls is not None else {}
        except Exception:  # noqa: BLE001  (an annotation that does not resolve: no declared roles)
            return {}


def _retriever_like(retriever: Any, kept: dict[str, Any]) -> dict[str, Any]:
    """`retriever` serialised with the file's `top_k` (and `return_embedding`), its store a placeholder that opens
    nothing (the callback hands in the runtime's store)."""
    new = _as_dict(retriever)
    params = new["init_parameters"]
    if "top_k" in kept:
        params["top_k"] = kept["top_k"]
    if "return_embedding" in kept and "return_embedding" in params:
        params["return_embedding"] = kept["return_embedding"]
    store = params.get("document_store")
    if isinstance(store, dict) and "index_path" in store.get("init_parameters", {}):
        store["init_parameters"]["index_path"] = None
    return new


def _is_part(value: Any) -> bool:
    """Whether an init parameter is a serialised component (a `type` and `init_parameters`)."""
    return isinstance(value, dict) and isinstance(value.get("type"), str) and "init_parameters" in value


def _as_dict(part: Any) -> dict[str, Any] | None:
    """A part as a pipeline dict holds it: an instance serialised, a dict (already serialised) copied."""
    return copy.deepcopy(part) if isinstance(part, dict) else serialize_component(part)


__all__ = ["AUXILIARY_KEY", "RuntimeParts", "auxiliary_model", "node_role", "part_role", "wired_sockets"]
