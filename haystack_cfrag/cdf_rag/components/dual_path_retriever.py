"""DualPathRetriever: CDF-RAG's dual-path retrieval (paper 002, §2.3): dense ∪ causal-graph passages."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging

from haystack_cfrag.cdf_rag.math.causal_check import as_edge
from haystack_cfrag.cdf_rag.math.merge import (
    DENSE,
    DENSE_ONLY,
    GRAPH,
    MERGE_MODES,
    RRF,
    RRF_K,
    content_key,
    merge_ranked,
    select_edges,
)
from haystack_cfrag.common.plumbing import InjectedParts, degradation
from haystack_cfrag.common.validation import check_choice, check_int, check_optional_int

COMPONENT = "DualPathRetriever"
PATHS_KEY = "cfrag_paths"
RANKS_KEY = "cfrag_ranks"
RRF_KEY = "cfrag_rrf_score"
DEDUPE_MODES = ("id", "content")
MAX_EDGES = 200
_OUTPUTS = {"documents": list[Document], "causal_edges": list[dict[str, Any]], "trace": dict[str, Any],
            "degradations": list[dict[str, Any]]}

logger = logging.getLogger(__name__)


@component
class DualPathRetriever(InjectedParts):
    """
    Merges the dense path's passages with the causal-graph path's passages, with provenance.

    A joiner (like DocumentJoiner) after a dense retriever and a graph retriever (`CausalGraphRetriever`'s
    `documents` and `causal_edges`); it queries no store. Passages are deduplicated by id or text, copied with
    `meta["cfrag_paths"]` and `meta["cfrag_ranks"]`, ordered by reciprocal rank fusion (`"rrf"`, k = 60),
    `"interleave"` or `"dense_only"` (the ablation), and cut to `top_k`. The edges citing a kept passage (all
    when none cites) are passed on, at most `max_edges`. No graph path: the dense passages alone, noted.

    ### Usage example
    ```python
    from haystack import Document
    from haystack_cfrag.cdf_rag import DualPathRetriever

    rain = Document(id="p1", content="Heavy rain fell for a week.")
    dense = [rain, Document(id="p2", content="The dam held.")]
    graph = [Document(id="p3", content="The flood ruined the harvest."), rain]
    edges = [{"source": "heavy rain", "target": "flood", "relation": "causes", "passage_ids": ["p1"]},
             {"source": "flood", "target": "crop loss", "relation": "causes", "passage_ids": ["p3"]}]
    out = DualPathRetriever(top_k=2).run(dense_documents=dense, graph_documents=graph, causal_edges=edges)
    print([(d.id, d.meta["cfrag_paths"]) for d in out["documents"]], len(out["causal_edges"]))
    # [('p1', ['dense', 'graph']), ('p3', ['graph'])] 2
    ```
    """

    _INJECTED = ()

    def __init__(
        self,
        *,
        merge_mode: str = RRF,
        rrf_k: int = RRF_K,
        top_k: int | None = None,
        max_edges: int = MAX_EDGES,
        dedupe_by: str = "id",
    ) -> None:
        """
        :param merge_mode: "rrf" (reciprocal rank fusion), "interleave", or "dense_only" (ablation: no
            graph passage).
        :param rrf_k: k of reciprocal rank fusion, in [0, 10000].
        :param top_k: passages returned, in [1, 10000] (None = all; `run` may override it).
        :param max_edges: causal edges passed on, in [1, 10000].
        :param dedupe_by: "id" (a passage without an id: by its text) or "content" (same text = one passage).
        """
        check_choice("merge_mode", merge_mode, MERGE_MODES)
        check_int("rrf_k", rrf_k, 0, 10000)
        check_optional_int("top_k", top_k, 1, 10000)
        check_int("max_edges", max_edges, 1, 10000)
        check_choice("dedupe_by", dedupe_by, DEDUPE_MODES)
        self.merge_mode = merge_mode
        self.rrf_k = rrf_k
        self.top_k = top_k
        self.max_edges = max_edges
        self.dedupe_by = dedupe_by

    def to_dict(self) -> dict[str, Any]:
        """Serialise."""
        return default_to_dict(self, merge_mode=self.merge_mode, rrf_k=self.rrf_k, top_k=self.top_k,
                               max_edges=self.max_edges, dedupe_by=self.dedupe_by)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DualPathRetriever:
        """Deserialise."""
        return default_from_dict(cls, data)

    @component.output_types(**_OUTPUTS)
    def run(
        self,
        dense_documents: list[Document],
        graph_documents: list[Document] | None = None,
        causal_edges: list[Any] | None = None,
        top_k: int | None = None,
    ) -> dict[str, Any]:
        """
        :param dense_documents: the dense retriever's passages, best first.
        :param graph_documents: the graph path's source passages, best first (None or [] = dense only).
        :param causal_edges: the graph path's edges C → E, citing their passages in `passage_ids`.
        :param top_k: passages returned (None = the init value).
        :returns: `documents`, `causal_edges`, `trace`, `degradations`.
        """
        return self._merge(dense_documents, graph_documents, causal_edges, top_k)

    @component.output_types(**_OUTPUTS)
    async def run_async(
        self,
        dense_documents: list[Document],
        graph_documents: list[Document] | None = None,
        causal_edges: list[Any] | None = None,
        top_k: int | None = None,
    ) -> dict[str, Any]:
        """Async twin of `run`, with the same sockets (the merge does no I/O)."""
        return self._merge(dense_documents, graph_documents, causal_edges, top_k)

    # ------------------------------------------------------------------ the merge
    def _merge(self, dense: Any, graph: Any, edges: Any, top_k: Any) -> dict[str, Any]:
        _check_documents("dense_documents", dense)
        if graph is not None:
            _check_documents("graph_documents", graph)
        if edges is not None and not isinstance(edges, list):
            raise ValueError(f"{COMPONENT}: 'causal_edges' must be a list or None, "
                             f"got {type(edges).__name__}.")
        check_optional_int("top_k", top_k, 1, 10000)
        limit = top_k if top_k is not None else self.top_k
        graph_given = graph is not None
        graph = graph or []
        degradations: list[dict[str, Any]] = []

        dense_keys = [self._key(d) for d in dense]
        graph_keys = [self._key(d) for d in graph]
        first: dict[tuple[str, str], Document] = {}
        ids: dict[str, set[str]] = {}
        for path, docs, keys in ((DENSE, dense, dense_keys), (GRAPH, graph, graph_keys)):
            for doc, key in zip(docs, keys, strict=True):
                first.setdefault((path, key), doc)
                ids.setdefault(key, set()).update(i for i in (doc.id, key) if i)
        merged = merge_ranked(dense_keys, graph_keys, mode=self.merge_mode, k=self.rrf_k, top_k=limit)
        documents = [self._output(item, first) for item in merged]

        kept_ids = set().union(*(ids[m.key] for m in merged)) if merged else set()
        out_edges, edge_trace = self._edges(edges, kept_ids, degradations)

        unique_dense, unique_graph = set(dense_keys), set(graph_keys)
        graph_path = "used" if graph else ("empty" if graph_given else "absent")
        if graph and self.merge_mode == DENSE_ONLY:
            graph_path = "ignored"
        note = "" if graph_path == "used" else f"graph path {graph_path}: the dense passages alone"
        trace = {
            "dense": len(unique_dense),
            "graph": len(unique_graph),
            "both": len(unique_dense & unique_graph),
            "kept": len(documents),
            "kept_by_path": {
                "dense": sum(1 for m in merged if m.paths == (DENSE,)),
                "graph": sum(1 for m in merged if m.paths == (GRAPH,)),
                "both": sum(1 for m in merged if len(m.paths) == 2),
            },
            "duplicates": {"dense": len(dense_keys) - len(unique_dense),
                           "graph": len(graph_keys) - len(unique_graph)},
            "merge_mode": self.merge_mode,
            "top_k": limit,
            "graph_path": graph_path,
            "note": note,
            "edges": edge_trace,
        }
        return {"documents": documents, "causal_edges": out_edges, "trace": trace,
                "degradations": degradations}

    def _key(self, doc: Document) -> str:
        if self.dedupe_by == "content" and doc.content is not None:
            return content_key(doc.content)
        return doc.id or content_key(doc.content)

    def _output(self, item: Any, first: dict[tuple[str, str], Document]) -> Document:
        dense_doc, graph_doc = first.get((DENSE, item.key)), first.get((GRAPH, item.key))
        if self.merge_mode == DENSE_ONLY:  # the ablation takes nothing from the graph path, its meta included
            graph_doc = None
        base = dense_doc if dense_doc is not None else graph_doc
        meta = copy.deepcopy({**(graph_doc.meta if dense_doc is not None and graph_doc is not None else {}),
                              **base.meta})
        meta[PATHS_KEY] = list(item.paths)
        ranks = ((DENSE, item.dense_rank), (GRAPH, item.graph_rank))
        meta[RANKS_KEY] = {path: rank for path, rank in ranks if rank is not None}
        if self.merge_mode == RRF:
            meta[RRF_KEY] = item.score
        return replace(base, meta=meta)

    def _edges(self, edges: list[Any] | None, kept_ids: set[str],
               degradations: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        if not edges:
            return [], {"given": 0, "kept": 0, "mode": "none", "uncited": 0, "unmatched": 0,
                        "not_understood": 0}
        understood: list[dict[str, Any]] = []
        for edge in edges:
            as_dict = _edge_dict(edge)
            if as_dict is not None:
                understood.append(as_dict)
        skipped = len(edges) - len(understood)
        if skipped:
            degradations.append(degradation("dual_path", "edges not understood", skipped=skipped))
        selection = select_edges([_citations(e) for e in understood], kept_ids, self.max_edges)
        if selection.over_limit:
            degradations.append(degradation("dual_path", "too many edges", kept=self.max_edges,
                                            given=len(selection.indices) + selection.over_limit))
            logger.warning("{component}: {n} causal edges over max_edges={limit} were dropped",
                           component=COMPONENT, n=selection.over_limit, limit=self.max_edges)
        kept = [understood[i] for i in selection.indices]
        return kept, {"given": len(edges), "kept": len(kept), "mode": selection.mode,
                      "uncited": selection.uncited, "unmatched": selection.unmatched,
                      "not_understood": skipped}


def _check_documents(name: str, docs: Any) -> None:
    if not isinstance(docs, list) or not all(isinstance(d, Document) for d in docs):
        raise ValueError(f"{COMPONENT}: '{name}' must be a list of documents.")


def _edge_dict(edge: Any) -> dict[str, Any] | None:
    """A copy of a dict edge, or a dict from a pair, triple or "C -> E" string; None when not an edge."""
    pair = as_edge(edge)
    if pair is None:
        return None
    if isinstance(edge, dict):
        return copy.deepcopy(edge)
    out: dict[str, Any] = {"source": pair[0], "target": pair[1]}
    if isinstance(edge, (list, tuple)) and len(edge) == 3 and isinstance(edge[2], str):
        out["relation"] = edge[2]
    return out


def _citations(edge: dict[str, Any]) -> list[str]:
    """The passage ids an edge cites (`passage_ids`: a list of ids, or one id)."""
    cited = edge.get("passage_ids")
    if isinstance(cited, str):
        return [cited] if cited else []
    if isinstance(cited, (list, tuple, set)):
        return [str(c) for c in cited if isinstance(c, (str, int)) and str(c)]
    return []
