"""The CF-RAG graph is written once (`haystack_cfrag.cfrag.wiring`): the shipped YAML files and
`CounterfactualRAG` are checked against it."""

import pytest
import yaml
from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
from haystack.document_stores.in_memory import InMemoryDocumentStore

from haystack_cfrag import registry
from haystack_cfrag.cfrag.components.counterfactual_rag import PAPER, CounterfactualRAG
from haystack_cfrag.cfrag.wiring import (
    CAUSAL_ORDER_EDGE,
    COMPONENTS,
    CONNECTIONS,
    OUTPUTS,
    PAPER_CONNECTIONS,
    QUERY_INPUTS,
    RETRIEVER,
)
from haystack_cfrag.pipelines import pipeline_path, shipped_pipelines
from tests.fakes import HashingTextEmbedder, KeywordReader

SHIPPED = {"cf_rag": CONNECTIONS, "cf_rag_fast": CONNECTIONS, "cf_rag_paper": PAPER_CONNECTIONS}
CASCADE = "cf_rag_auto"
"""The cascade: standard RAG's nodes and the gate in front of cf_rag.yml's graph (retriever renamed cf_retriever)."""


def _yaml(name):
    return yaml.safe_load(pipeline_path(name).read_text(encoding="utf-8"))


def _edges(connections):
    return [(c["sender"], c["receiver"]) for c in connections]


def test_every_cf_rag_file_is_checked():
    expander = "haystack_cfrag.cfrag.components.counterfactual_query_expander.CounterfactualQueryExpander"
    cf_rag_files = {
        name for name in shipped_pipelines()
        if any(c["type"] == expander for c in _yaml(name)["components"].values())
    }
    assert cf_rag_files == {*SHIPPED, CASCADE}


def _unread(node):
    """A node without the cascade's reader's `read_tokens` (`cascade.contract.READ_TOKENS`)."""
    if isinstance(node, dict):
        return {k: _unread(v) for k, v in node.items() if k != "read_tokens"}
    return [_unread(v) for v in node] if isinstance(node, list) else node


def test_the_cascade_runs_cf_rags_graph_on_standard_rags_passages_and_answer():
    data, default = _yaml(CASCADE), _yaml("cf_rag")
    rename = {RETRIEVER: "cf_retriever"}
    method = [rename.get(c, c) for c in COMPONENTS]
    edges = [e for e in _edges(data["connections"]) if all(x.split(".")[0] in method for x in e)]
    renamed = [tuple(".".join([rename.get(x.split(".")[0], x.split(".")[0]), x.split(".")[1]]) for x in e)
               for e in CONNECTIONS]
    assert sorted(edges) == sorted(renamed)
    assert registry.cascades()[CASCADE].escalation == {}  # no setting of its own
    for name in COMPONENTS:  # the same settings as the always-on default, but the reader reads its reply's tokens
        assert _unread(data["components"][rename.get(name, name)]) == default["components"][name]
    into = {r: s for s, r in _edges(data["connections"])}
    assert into["cf_retriever.original_documents"] == "retriever.documents"   # no second retrieval of q
    assert into["drafter.baseline_replies"] == "generator.replies"            # the baseline IS standard RAG's answer
    assert all(into[socket.replace(RETRIEVER, "cf_retriever")] == "router.escalated" for socket in QUERY_INPUTS)
    # where the gate's period rule escalated, the stratifier drafts the period's passages alone
    assert into["strata_router.decided_by"] == "gate.decided_by"
    assert into["stratifier.qualifier"] == "strata_router.qualifier"


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_yaml_is_the_graph(name):
    data = _yaml(name)
    assert list(data["components"]) == list(COMPONENTS)
    assert _edges(data["connections"]) == list(SHIPPED[name])
    assert data["inputs"] == {"query": list(QUERY_INPUTS)}
    assert data["outputs"] == OUTPUTS
    # the causal order's edge is there exactly when the stratifier orders by it
    causal = data["components"]["stratifier"]["init_parameters"].get("order") == "causal"
    assert (CAUSAL_ORDER_EDGE in SHIPPED[name]) is causal


def _rag(with_retriever=True, **params):
    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    retriever = InMemoryEmbeddingRetriever(document_store=store) if with_retriever else None
    return CounterfactualRAG(chat_generator=KeywordReader(candidates=["x"]), retriever=retriever,
                             text_embedder=HashingTextEmbedder(), **params)


def _without_joiner(rag):
    """The inner pipeline's connections with the joiner contracted (it stands in front of dedup.documents)."""
    edges = _edges(rag.pipeline.to_dict()["connections"])
    into_joiner = [s for s, r in edges if r == "joiner.documents"]
    out = []
    for sender, receiver in edges:
        if sender == "joiner.documents":
            out += [(s, receiver) for s in into_joiner]
        elif receiver != "joiner.documents":
            out.append((sender, receiver))
    return out


@pytest.mark.parametrize(("params", "graph"), [({}, CONNECTIONS), (PAPER, PAPER_CONNECTIONS)])
def test_counterfactual_rag_builds_the_shipped_graph(params, graph):
    full = _rag(**params)
    assert set(full.pipeline.graph.nodes) == {*COMPONENTS, "joiner"}
    assert sorted(_without_joiner(full)) == sorted(graph)
    assert full.input_mapping["query"] == list(QUERY_INPUTS)
    assert full.output_mapping == {socket: name for name, socket in OUTPUTS.items()}
    verify_only = _rag(with_retriever=False, **params)
    assert set(verify_only.pipeline.graph.nodes) == {*COMPONENTS, "joiner"} - {RETRIEVER}
    assert sorted(_without_joiner(verify_only)) == sorted(
        e for e in graph if RETRIEVER not in (e[0].split(".")[0], e[1].split(".")[0])
    )
