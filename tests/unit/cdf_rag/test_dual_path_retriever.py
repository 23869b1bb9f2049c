"""DualPathRetriever: dense ∪ causal-graph passages with provenance, edges passed on, no models."""

import asyncio
import copy
import re
from typing import Any

import pytest
import yaml
from haystack import Document, Pipeline, component
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.document_stores.in_memory import InMemoryDocumentStore

from haystack_cfrag.cdf_rag import CausalConsistencyChecker, DualPathRetriever
from haystack_cfrag.pipelines.loading import pipeline_from_dict

RAIN = Document(id="p1", content="Heavy rain fell on the valley for a week.", meta={"title": "Rain"}, score=0.9)
DAM = Document(id="p2", content="The old dam held during the storm.", meta={"title": "Dam"}, score=0.7)
FARM = Document(id="p3", content="The flood ruined the harvest of the valley.", meta={"title": "Farms"}, score=0.5)
RAIN_GRAPH = Document(id="p1", content=RAIN.content, meta={"title": "Rain (graph)", "graph_node": "heavy rain"})
CROPS = Document(id="p4", content="Crop loss raised grain prices.", meta={"title": "Prices"})
DENSE = [RAIN, DAM, FARM]
GRAPH = [CROPS, RAIN_GRAPH]
EDGES = [
    {"source": "heavy rain", "target": "flood", "relation": "causes", "passage_ids": ["p1"]},
    {"source": "flood", "target": "crop loss", "relation": "causes", "passage_ids": ["p3"]},
    {"source": "crop loss", "target": "grain prices", "relation": "raises", "passage_ids": ["p4"]},
]


def merged(**kwargs):
    run = {k: kwargs.pop(k) for k in ("dense_documents", "graph_documents", "causal_edges", "top_k") if k in kwargs}
    run.setdefault("dense_documents", DENSE)
    return DualPathRetriever(**kwargs).run(**run)


def ids(out):
    return [d.id for d in out["documents"]]


# ---------------------------------------------------------------- order and provenance
def test_rrf_order_and_provenance_on_every_copy():
    out = merged(graph_documents=GRAPH, causal_edges=EDGES)
    # p1: dense 1 + graph 2; p4: graph 1 (ties with nothing); p2: dense 2; p3: dense 3
    assert ids(out) == ["p1", "p4", "p2", "p3"]
    paths = {d.id: d.meta["cfrag_paths"] for d in out["documents"]}
    assert paths == {"p1": ["dense", "graph"], "p4": ["graph"], "p2": ["dense"], "p3": ["dense"]}
    ranks = {d.id: d.meta["cfrag_ranks"] for d in out["documents"]}
    assert ranks == {"p1": {"dense": 1, "graph": 2}, "p4": {"graph": 1}, "p2": {"dense": 2}, "p3": {"dense": 3}}
    assert out["documents"][0].meta["cfrag_rrf_score"] == pytest.approx(1 / 61 + 1 / 62)
    assert {k: out["trace"][k] for k in ("dense", "graph", "both", "kept")} == {"dense": 3, "graph": 2, "both": 1,
                                                                               "kept": 4}
    assert out["trace"]["kept_by_path"] == {"dense": 2, "graph": 1, "both": 1}
    assert out["trace"]["graph_path"] == "used" and out["degradations"] == []


def test_a_passage_both_paths_found_is_the_dense_copy_with_the_graph_meta_it_lacks():
    p1 = merged(graph_documents=GRAPH)["documents"][0]
    assert p1.content == RAIN.content and p1.score == 0.9
    assert p1.meta["title"] == "Rain" and p1.meta["graph_node"] == "heavy rain"  # dense meta wins, graph's added


def test_interleave_alternates_the_paths():
    out = merged(graph_documents=GRAPH, merge_mode="interleave")
    assert ids(out) == ["p1", "p4", "p2", "p3"]
    out = merged(dense_documents=[DAM, FARM], graph_documents=GRAPH, merge_mode="interleave")
    assert ids(out) == ["p2", "p4", "p3", "p1"]
    assert "cfrag_rrf_score" not in out["documents"][0].meta and out["trace"]["merge_mode"] == "interleave"


# ---------------------------------------------------------------- dedup
def test_duplicates_within_and_across_paths_come_out_once():
    out = merged(dense_documents=[RAIN, DAM, RAIN], graph_documents=[RAIN_GRAPH, RAIN_GRAPH, CROPS])
    assert ids(out) == ["p1", "p2", "p4"] and out["trace"]["duplicates"] == {"dense": 1, "graph": 1}
    assert out["documents"][0].meta["cfrag_ranks"] == {"dense": 1, "graph": 1}


def test_dedupe_by_content_joins_the_same_text_under_two_ids():
    twin = Document(id="other-id", content="Heavy  rain fell on the valley\nfor a week.")
    by_id = merged(dense_documents=[RAIN], graph_documents=[twin])
    by_text = merged(dense_documents=[RAIN], graph_documents=[twin], dedupe_by="content")
    assert ids(by_id) == ["p1", "other-id"]
    assert ids(by_text) == ["p1"] and by_text["documents"][0].meta["cfrag_paths"] == ["dense", "graph"]


def test_edges_citing_either_id_of_a_passage_joined_by_content_are_kept():
    twin = Document(id="other-id", content=RAIN.content)
    edges = [{"source": "heavy rain", "target": "flood", "passage_ids": ["other-id"]}]
    out = merged(dense_documents=[RAIN], graph_documents=[twin], causal_edges=edges, dedupe_by="content")
    assert ids(out) == ["p1"] and out["causal_edges"] == edges


# ---------------------------------------------------------------- top_k
def test_top_k_bounds_the_passages_and_the_run_value_overrides_the_init_value():
    assert ids(merged(graph_documents=GRAPH, top_k=2)) == ["p1", "p4"]
    assert ids(DualPathRetriever(top_k=1).run(dense_documents=DENSE, graph_documents=GRAPH, top_k=3)) == [
        "p1", "p4", "p2"]
    out = DualPathRetriever(top_k=1).run(dense_documents=DENSE, graph_documents=GRAPH)
    assert ids(out) == ["p1"] and out["trace"]["kept"] == 1 and out["trace"]["top_k"] == 1


def test_edges_whose_passages_were_cut_by_top_k_are_dropped():
    out = merged(graph_documents=GRAPH, causal_edges=EDGES, top_k=2)  # p1 and p4 kept, p3 cut
    assert [e["target"] for e in out["causal_edges"]] == ["flood", "grain prices"]
    assert out["trace"]["edges"] == {"given": 3, "kept": 2, "mode": "cited", "uncited": 0, "unmatched": 1,
                                          "not_understood": 0}


# ---------------------------------------------------------------- a missing graph path
@pytest.mark.parametrize(("graph", "state"), [(None, "absent"), ([], "empty")])
def test_no_graph_path_gives_the_dense_passages_with_a_note(graph, state):
    out = merged(graph_documents=graph)
    assert ids(out) == ["p1", "p2", "p3"] and all(d.meta["cfrag_paths"] == ["dense"] for d in out["documents"])
    assert out["trace"]["graph_path"] == state and "dense passages alone" in out["trace"]["note"]
    assert out["degradations"] == [] and out["causal_edges"] == []


def test_dense_only_is_the_ablation_without_the_graph_path():
    """`merge_mode="dense_only"`: the dense passages in their order, the graph path counted but not merged."""
    out = merged(graph_documents=GRAPH, causal_edges=EDGES, merge_mode="dense_only")
    assert ids(out) == ["p1", "p2", "p3"] and all(d.meta["cfrag_paths"] == ["dense"] for d in out["documents"])
    assert out["documents"][0].meta["cfrag_ranks"] == {"dense": 1} and "graph_node" not in out["documents"][0].meta
    assert out["trace"]["graph"] == 2 and out["trace"]["kept_by_path"] == {"dense": 3, "graph": 0, "both": 0}
    assert out["trace"]["graph_path"] == "ignored" and "dense passages alone" in out["trace"]["note"]
    assert [e["passage_ids"] for e in out["causal_edges"]] == [["p1"], ["p3"]]  # the edges citing a kept passage


def test_empty_inputs_give_nothing():
    out = DualPathRetriever().run(dense_documents=[])
    assert out["documents"] == [] and out["causal_edges"] == [] and out["trace"]["kept"] == 0


# ---------------------------------------------------------------- edges
def test_uncited_edges_are_all_passed_on_and_other_shapes_become_dicts():
    edges = [{"cause": "rain", "effect": "flood"}, ("flood", "crop loss", "causes"), "drought -> famine", 7,
             {"source": ""}]
    out = merged(causal_edges=edges)
    assert out["causal_edges"] == [{"cause": "rain", "effect": "flood"},
                                   {"source": "flood", "target": "crop loss", "relation": "causes"},
                                   {"source": "drought", "target": "famine"}]
    assert out["trace"]["edges"]["mode"] == "all" and out["trace"]["edges"]["not_understood"] == 2
    assert out["degradations"] == [{"stage": "dual_path", "reason": "edges not understood", "skipped": 2}]


def test_max_edges_bounds_the_edges_and_says_so():
    edges = [{"source": f"c{i}", "target": f"e{i}", "passage_ids": ["p1"]} for i in range(5)]
    out = merged(causal_edges=edges, max_edges=3)
    assert [e["source"] for e in out["causal_edges"]] == ["c0", "c1", "c2"]
    assert {"stage": "dual_path", "reason": "too many edges", "kept": 3, "given": 5} in out["degradations"]


def test_a_single_passage_id_string_is_read_as_one_citation():
    edges = [{"source": "a", "target": "b", "passage_ids": "p2"}, {"source": "c", "target": "d", "passage_ids": "zz"}]
    assert merged(causal_edges=edges)["causal_edges"] == edges[:1]


# ---------------------------------------------------------------- contract
def test_inputs_are_never_mutated():
    dense, graph, edges = copy.deepcopy(DENSE), copy.deepcopy(GRAPH), copy.deepcopy(EDGES)
    out = DualPathRetriever(top_k=3).run(dense_documents=dense, graph_documents=graph, causal_edges=edges)
    assert dense == DENSE and graph == GRAPH and edges == EDGES
    assert all("cfrag_paths" not in d.meta for d in dense + graph)
    out["causal_edges"][0]["passage_ids"].append("changed")
    out["documents"][0].meta["title"] = "changed"
    assert edges == EDGES and dense == DENSE and graph == GRAPH


def test_run_async_equals_run():
    comp = DualPathRetriever(top_k=3)
    kwargs = {"dense_documents": DENSE, "graph_documents": GRAPH, "causal_edges": EDGES}
    assert asyncio.run(comp.run_async(**kwargs)) == comp.run(**kwargs)
    again = DualPathRetriever(merge_mode="interleave")
    assert asyncio.run(again.run_async(dense_documents=DENSE)) == again.run(dense_documents=DENSE)


def test_to_dict_from_dict_round_trip():
    comp = DualPathRetriever(merge_mode="interleave", rrf_k=10, top_k=7, max_edges=50, dedupe_by="content")
    data = comp.to_dict()
    assert data["init_parameters"] == {"merge_mode": "interleave", "rrf_k": 10, "top_k": 7, "max_edges": 50,
                                       "dedupe_by": "content"}
    again = DualPathRetriever.from_dict(copy.deepcopy(data))
    assert again.to_dict() == data
    assert DualPathRetriever.from_dict(DualPathRetriever().to_dict()).to_dict() == DualPathRetriever().to_dict()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"merge_mode": "vote"}, "'merge_mode'"), ({"rrf_k": -1}, "'rrf_k'"), ({"top_k": 0}, "'top_k'"),
     ({"max_edges": 0}, "'max_edges'"), ({"dedupe_by": "title"}, "'dedupe_by'")],
)
def test_bad_parameters_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DualPathRetriever(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"dense_documents": "p1"}, "'dense_documents'"), ({"dense_documents": [RAIN], "graph_documents": [1]},
                                                        "'graph_documents'"),
     ({"dense_documents": [RAIN], "causal_edges": "a -> b"}, "'causal_edges'"),
     ({"dense_documents": [RAIN], "top_k": 0}, "'top_k'")],
)
def test_bad_inputs_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DualPathRetriever().run(**kwargs)


def test_the_docstring_example_runs(capsys):
    code = re.findall(r"```python\n(.*?)```", DualPathRetriever.__doc__, re.DOTALL)[0]
    code = "\n".join(line[4:] if line.startswith("    ") else line for line in code.splitlines())
    exec(compile(code, "<DualPathRetriever docstring>", "exec"), {})
    assert capsys.readouterr().out.strip() == "[('p1', ['dense', 'graph']), ('p3', ['graph'])] 2"


# ---------------------------------------------------------------- in a pipeline
@component
class FakeGraphRetriever:
    """The sockets of CausalRAG's CausalGraphRetriever: nodes, edges citing passages, source passages."""

    @component.output_types(nodes=list[Document], causal_edges=list[dict[str, Any]], documents=list[Document],
                            trace=dict[str, Any], degradations=list[dict[str, Any]])
    def run(self, query: str) -> dict[str, Any]:
        return {"nodes": [Document(content="heavy rain"), Document(content="flood")],
                "causal_edges": EDGES[:2], "documents": [CROPS, RAIN_GRAPH], "trace": {}, "degradations": []}


def test_between_two_retrievers_and_the_causal_checker_in_a_pipeline():
    store = InMemoryDocumentStore()
    store.write_documents([RAIN, DAM, FARM, CROPS])
    pipe = Pipeline()
    pipe.add_component("dense", InMemoryBM25Retriever(document_store=store, top_k=2))
    pipe.add_component("graph", FakeGraphRetriever())
    pipe.add_component("dual_path", DualPathRetriever(top_k=3))
    pipe.add_component("causal", CausalConsistencyChecker())
    pipe.connect("dense.documents", "dual_path.dense_documents")
    pipe.connect("graph.documents", "dual_path.graph_documents")
    pipe.connect("graph.causal_edges", "dual_path.causal_edges")
    pipe.connect("dual_path.documents", "causal.documents")
    pipe.connect("dual_path.causal_edges", "causal.causal_edges")
    query = "Why was the harvest of the valley ruined?"
    inputs = {"dense": {"query": query}, "graph": {"query": query},
              "causal": {"query": query, "answer": "The flood caused heavy rain."}}
    again = pipeline_from_dict(yaml.safe_load(pipe.dumps()), allowed_modules=["tests"])
    assert again.get_component("dual_path").to_dict() == pipe.get_component("dual_path").to_dict()
    for p in (pipe, again):
        out = p.run(inputs, include_outputs_from={"dual_path"})
        docs = out["dual_path"]["documents"]  # BM25 finds p3 and p1; the graph p4 and p1
        paths = {d.id: d.meta["cfrag_paths"] for d in docs}
        assert paths == {"p1": ["dense", "graph"], "p3": ["dense"], "p4": ["graph"]}
        assert out["dual_path"]["causal_edges"] == EDGES[:2]
        assert out["causal"]["s_causal"] == 0.0 and out["causal"]["decision"] == "regenerate"  # check only
