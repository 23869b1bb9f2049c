"""CausalRAG as the layers above see it: k, s and the summary's recipe per request, its pipelines, and its
graph, built (or read from the extraction cache) once per store on first need, every `node_retriever` pointed at it.

    >>> FAMILY.request_parameters, FAMILY.prepare_store.what
    (('graph_top_k', 'hops', 'summary_calls'), "CausalRAG's causal graph")
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from haystack_cfrag.causal_rag.extractors import DEFAULT_EXTRACTOR, EXTRACTOR_NAMES, PARSE_ONLY, SCALE_OUT
from haystack_cfrag.causal_rag.parameters import PARAMETERS
from haystack_cfrag.family import Cascade, Entry, Family
from haystack_cfrag.models import EMBEDDED_SMALL_LLM


def build_graph(passages: list[Any], *, chat_generator: Any, text_embedder: Any, cache_dir: Any,
                graph_extractor: str = DEFAULT_EXTRACTOR, document_embedder: Any = None) -> tuple[Any, Any]:
    """The node store of the passages' causal graph and what building it cost (`node_store.build_node_store`),
    extracted by `graph_extractor` (`causal_rag.extractors`: "llm", "llm-json" or "spacy")."""
    from haystack_cfrag.causal_rag.extractors import BUILDER_SETTINGS, make_extractor  # noqa: PLC0415
    from haystack_cfrag.causal_rag.node_store import build_node_store  # noqa: PLC0415  (Haystack's builder stack)

    if graph_extractor in PARSE_ONLY:  # the builder warms what it holds: a parser needs no reader loaded
        chat_generator = None
    nodes, stats = build_node_store(passages, chat_generator=chat_generator, text_embedder=text_embedder,
                                    document_embedder=document_embedder, cache_dir=cache_dir,
                                    extractor=make_extractor(graph_extractor, chat_generator=chat_generator),
                                    builder_settings=BUILDER_SETTINGS.get(graph_extractor))
    return nodes, {**stats, "extractor": graph_extractor}


GRAPH_READER = "node_retriever"
"""The init parameter (and attribute) of the components that read the graph: what `attach_graph` points at it."""


def reads_graph(data: Any) -> bool:
    """Whether a pipeline dict has a component with a `node_retriever`, at any depth (grounded_rag_lite: none).

    >>> reads_graph({"components": {"r": {"init_parameters": {"node_retriever": {}}}}}), reads_graph({"components": {}})
    (True, False)
    """
    if isinstance(data, dict):
        params = data.get("init_parameters")
        return (isinstance(params, dict) and GRAPH_READER in params) or any(reads_graph(v) for v in data.values())
    return isinstance(data, list) and any(reads_graph(v) for v in data)


def attach_graph(pipeline: Any, graph: Callable[[], Any]) -> None:
    """Point every graph retriever of `pipeline` at the graph (built or opened on first need): an in-memory node
    store, or a `stored_graph.StoredGraph`."""
    for _, comp in pipeline.walk():
        node_retriever = getattr(comp, GRAPH_READER, None)  # the nodes live in a store of their own
        if node_retriever is None or not hasattr(node_retriever, "document_store"):
            continue
        handle = graph()
        tables = getattr(handle, "tables", None)
        if tables is None:
            node_retriever.document_store = handle
        else:
            from haystack_cfrag.stores import embedding_retriever  # noqa: PLC0415

            top_k = getattr(node_retriever, "top_k", 10)
            comp.node_retriever = embedding_retriever(handle.nodes, top_k=top_k)
        if hasattr(comp, "graph_tables"):
            comp.graph_tables = tables


def load_graph(spec: Any) -> Any | None:
    """The graph `cfrag index --graph` stored beside the store `spec` (`stored_graph.open_stored_graph`), or None."""
    from haystack_cfrag.causal_rag.stored_graph import open_stored_graph  # noqa: PLC0415

    return open_stored_graph(spec)


def index_graph(passages: list[Any], **kwargs: Any) -> dict[str, Any]:
    """`cfrag index --graph`: every passage's graph extracted or found cached (`extraction_run.extract_passages`)."""
    from haystack_cfrag.causal_rag.extraction_run import extract_passages  # noqa: PLC0415

    return extract_passages(passages, **kwargs)


def index_summary(stats: dict[str, Any]) -> str:
    """One line of what `index_graph` did."""
    from haystack_cfrag.causal_rag.extraction_run import summary_line  # noqa: PLC0415

    return summary_line(stats)


def release_graph(handle: Any) -> None:
    """Free a graph's node store (the evaluation moves from store to store), or close a stored graph."""
    if hasattr(handle, "tables"):
        handle.close()
        return
    from haystack_cfrag.causal_rag.node_store import release_node_store  # noqa: PLC0415

    release_node_store(handle)


RECORDED = ("seeds", "hops_reached", "edges_per_hop", "passage_ids", "truncated")
"""What an evaluation record keeps of the graph retriever's trace: the graph's reach."""


def record(trace: dict[str, Any]) -> dict[str, Any]:
    """The evaluation record's `selection`: the RECORDED keys of the graph retriever's trace.

    >>> record({"seeds": ["flood"], "hops_reached": 2, "paths": []})
    {'selection': {'seeds': ['flood'], 'hops_reached': 2}}
    """
    return {"selection": {k: trace[k] for k in RECORDED if k in trace}}


class CausalGraph:
    """CausalRAG's graph, as the runtime and `cfrag index --graph` ask for it (`family.StorePreparation`)."""

    what = "CausalRAG's causal graph"
    extractors, default_extractor = EXTRACTOR_NAMES, DEFAULT_EXTRACTOR
    parse_only, scale_out = PARSE_ONLY, SCALE_OUT
    needed_by, load, build = staticmethod(reads_graph), staticmethod(load_graph), staticmethod(build_graph)
    attach, release = staticmethod(attach_graph), staticmethod(release_graph)
    index, summarize = staticmethod(index_graph), staticmethod(index_summary)

    @staticmethod
    def writes() -> Any:
        """The stored graph's marks, kept while `cfrag index` writes its store (`graph_write.GraphWrites`)."""
        return importlib.import_module("haystack_cfrag.causal_rag.graph_write").GraphWrites()


GRAPH = CausalGraph()


FAMILY = Family(
    name="causal_rag",
    parameters=PARAMETERS,
    request_parameters=("graph_top_k", "hops", "summary_calls"),
    pipelines=(
        Entry("causal_rag", "the question's k nearest graph nodes expanded s hops, their causal paths and "
              "summary in one call (summary_calls=2: the official two), then standard RAG's answer over the "
              "passages with the summary as notes (docs/causal_rag.md)", api_description=(
                  "Answer a question with CausalRAG: a causal subgraph of the documents around the question, its "
                  "causal paths and a short summary in one call (summary_calls=2: the official code's "
                  "report, then summary), then one generation over the passages with the summary as notes."
                  "\n\nReturns "
                  "the answer, the passages and the graph retriever's trace.")),
        Entry("causal_rag_auto", "the cascade: standard RAG, then CausalRAG only where the escalation gate says "
              "the evidence may conflict (docs/cascade.md)", cascade=Cascade(
                  shared=("query_embedder", "retriever"),  # the method reads what standard RAG retrieved
                  # issue 61's cheaper escalation (docs/cascade.md): the summary on the small model (the
                  # reader's prompt cache left to the answer), its subgraph and reply capped
                  escalation={"summarizer.chat_generator.model": EMBEDDED_SMALL_LLM,
                              "summarizer.summary_max_tokens": 32, "summarizer.summary_max_edges": 12})),
        Entry("causal_rag_indexing", "index time: passages -> causal graph nodes and edges (the spaCy extractor by "
              "default, each passage cached) -> the node store", (), indexing=True),
    ),
    record=record,
    prepare_store=GRAPH,
    components=("haystack_cfrag.causal_rag.",),
)

__all__ = ["FAMILY", "GRAPH", "RECORDED", "record"]
