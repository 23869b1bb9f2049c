"""The CF-RAG graph, written once: `CounterfactualRAG` builds from it and a test pins every shipped CF-RAG file to it.

    expander ─queries─▶ retriever ─documents─▶ dedup ─documents─▶ stratifier ─subsets─▶ drafter ─drafts─▶ ranker
    ranker ─ruling─▶ duel (which reads a duel the ruling proposes, and gives the pipeline's outputs)
    expander ─queries─▶ dedup, stratifier (the causal order)
    expander ─counterfactuals, degradations─▶ ranker
    retriever ─original_documents─▶ drafter.baseline_documents (the baseline draft: standard RAG's answer)

The paper's graph (`cf_rag_paper`) lacks the baseline and causal-order edges:

>>> PAPER_CONNECTIONS == cf_rag_connections(baseline=False, causal_order=False)
True
>>> sorted(set(CONNECTIONS) - set(PAPER_CONNECTIONS)) == sorted([BASELINE_EDGE, CAUSAL_ORDER_EDGE])
True
"""

from __future__ import annotations

EXPANDER, RETRIEVER, DEDUP, STRATIFIER, DRAFTER, RANKER, DUEL = ("expander", "retriever", "dedup",
                                                                 "stratifier", "drafter", "ranker", "duel")
COMPONENTS = (EXPANDER, RETRIEVER, DEDUP, STRATIFIER, DRAFTER, RANKER, DUEL)
"""The components' names, in the order the data flows."""

Edge = tuple[str, str]
"""(sender, receiver), each "component.socket", as `Pipeline.connect` takes them."""

BASELINE_EDGE: Edge = (f"{RETRIEVER}.original_documents", f"{DRAFTER}.baseline_documents")
"""The baseline draft reads the original query's own results (`baseline=True`)."""

CAUSAL_ORDER_EDGE: Edge = (f"{EXPANDER}.queries", f"{STRATIFIER}.queries")
"""The counterfactuals the stratifier ranks passages by (`order="causal"`; unused otherwise)."""

CONNECTIONS: tuple[Edge, ...] = (
    BASELINE_EDGE,
    (f"{EXPANDER}.queries", f"{RETRIEVER}.queries"),
    (f"{EXPANDER}.queries", f"{DEDUP}.queries"),
    CAUSAL_ORDER_EDGE,
    (f"{RETRIEVER}.documents", f"{DEDUP}.documents"),
    (f"{DEDUP}.documents", f"{STRATIFIER}.documents"),
    (f"{STRATIFIER}.subsets", f"{DRAFTER}.subsets"),
    (f"{DRAFTER}.drafts", f"{RANKER}.drafts"),
    (f"{EXPANDER}.counterfactuals", f"{RANKER}.counterfactuals"),
    (f"{EXPANDER}.degradations", f"{RANKER}.degradations"),
    (f"{RANKER}.ruling", f"{DUEL}.ruling"),
)
"""The default graph's connections, in the order the YAML files list them."""


def cf_rag_connections(*, baseline: bool = True, causal_order: bool = True) -> tuple[Edge, ...]:
    """The connections of a CF-RAG graph: the default one, less the edges a configuration does not use.

    :param baseline: keep `BASELINE_EDGE` (the drafter's baseline reads the original query's results).
    :param causal_order: keep `CAUSAL_ORDER_EDGE` (the stratifier's `order="causal"` reads the counterfactuals).
    """
    dropped = {edge for edge, kept in ((BASELINE_EDGE, baseline), (CAUSAL_ORDER_EDGE, causal_order)) if not kept}
    return tuple(edge for edge in CONNECTIONS if edge not in dropped)


PAPER_CONNECTIONS = cf_rag_connections(baseline=False, causal_order=False)
"""The paper's graph (`cf_rag_paper`): no baseline draft, passages in relevance order."""

QUERY_INPUTS = (f"{EXPANDER}.query", f"{STRATIFIER}.query", f"{DRAFTER}.query", f"{RANKER}.query")
"""The sockets the pipeline's `query` input goes to."""

OUTPUTS = {"answer": f"{DUEL}.answer", "answers": f"{DUEL}.answers", "trace": f"{DUEL}.trace"}
"""The pipeline's outputs and the sockets they come from."""

__all__ = ["BASELINE_EDGE", "CAUSAL_ORDER_EDGE", "COMPONENTS", "CONNECTIONS", "DUEL", "OUTPUTS",
           "PAPER_CONNECTIONS", "QUERY_INPUTS", "Edge", "cf_rag_connections"]
