"""One registry of shipped pipelines, read by the CLI, the runtime, the evaluation and the server."""

import importlib
import importlib.util
from pathlib import Path

import pytest
from haystack import Document
from haystack.dataclasses import GeneratedAnswer

from haystack_cfrag import registry
from haystack_cfrag.pipelines import PIPELINES_DIR, shipped_pipelines
from haystack_cfrag.runtime import read_outputs

ROOT = Path(__file__).resolve().parents[3]


def test_every_shipped_yaml_has_one_entry_and_every_entry_a_yaml():
    assert sorted(registry.REGISTRY) == shipped_pipelines()
    assert all(entry.path.parent == PIPELINES_DIR for entry in registry.REGISTRY.values())


def test_a_checkout_reads_the_top_level_pipelines_folder():
    # an editable install has no YAML inside the package: the checkout's folder is the one source
    assert PIPELINES_DIR == ROOT / "pipelines"
    assert not list((ROOT / "haystack_cfrag" / "pipelines").glob("*.yml"))


@pytest.mark.parametrize("module", ["haystack_cfrag.cli.serve", "haystack_cfrag.serving.service",
                                    "haystack_cfrag.evaluation.systems", "haystack_cfrag.evaluation.runner"])
def test_the_name_lists_above_the_components_come_from_the_registry(module):
    source = Path(importlib.import_module(module).__file__).read_text()
    # no tuple of shipped names written by hand (the registry's entries are the one list)
    assert '("cf_rag", "cf_rag_fast", "standard_rag")' not in source
    assert '("standard_rag", "cf_rag_fast", "cf_rag")' not in source


def test_served_and_injection_pipelines_are_registry_entries_and_include_the_baseline():
    assert set(registry.served_pipelines()) <= set(registry.REGISTRY)
    assert registry.BASELINE in registry.served_pipelines() and registry.BASELINE in registry.injection_pipelines()
    from haystack_cfrag.cli.serve import SERVED
    from haystack_cfrag.serving.service import PIPELINES

    assert SERVED == PIPELINES == registry.served_pipelines()


def test_read_outputs_takes_the_answer_socket_whatever_the_node_is_called():
    doc = Document(id="d1", content="Bale plays Batman.", meta={"title": "Cast"})
    best = GeneratedAnswer(data="Christian Bale", query="q", documents=[doc])
    answer, trace, docs = read_outputs({"my_arbiter": {"answer": "Christian Bale", "trace": {"decision": "x"},
                                                       "answers": [best]}})
    assert (answer, trace, [d["id"] for d in docs]) == ("Christian Bale", {"decision": "x"}, ["d1"])
    answer, trace, docs = read_outputs({"builder_2": {"answers": [GeneratedAnswer(data=" Bale\n", query="q",
                                                                                  documents=[doc])]}})
    assert (answer, trace, docs[0]["title"]) == ("Bale", None, "Cast")
    assert read_outputs({"retriever": {"documents": [doc]}}) == ("", None, [])


def test_yaml_written_for_the_old_type_paths_still_loads_through_the_package_loader():
    import yaml
    from haystack import Pipeline

    from haystack_cfrag import EmbeddingDeduplicator
    from haystack_cfrag.pipelines import RENAMED_TYPES
    from haystack_cfrag.pipelines.loading import pipeline_from_dict
    from haystack_cfrag.testing.fakes import HashingDocumentEmbedder, HashingTextEmbedder

    pipe = Pipeline()
    pipe.add_component("dedup", EmbeddingDeduplicator(document_embedder=HashingDocumentEmbedder(),
                                                      text_embedder=HashingTextEmbedder()))
    new_path = "haystack_cfrag.cfrag.components.embedding_deduplicator"
    old_path = "haystack_cfrag." + "components.embedding_deduplicator"  # the 0.1 layout's path
    assert RENAMED_TYPES[old_path] == new_path
    old_yaml = pipe.dumps().replace(new_path, old_path)
    assert old_path + ".EmbeddingDeduplicator" in old_yaml
    loaded = pipeline_from_dict(yaml.safe_load(old_yaml))
    assert type(loaded.get_component("dedup")).__module__ == new_path


def test_a_pipeline_file_is_parsed_once_whoever_reads_it(tmp_path, monkeypatch):
    """`pipelines.read_pipeline` is the one reader: `registry.resolve`, loading, checking, the evaluation's and the
    server's reads go through it, so a file is parsed once per version (and the package has one YAML parse)."""
    import shutil

    from haystack_cfrag import pipelines
    from haystack_cfrag.evaluation.systems import check_system, parse_system
    from haystack_cfrag.pipelines.loading import check_pipeline_file, load_pipeline
    from haystack_cfrag.registry import resolve

    path = tmp_path / "mine.yml"
    shutil.copy(resolve("standard_rag").path, path)
    parsed = []
    real = pipelines.read_yaml
    monkeypatch.setattr(pipelines, "read_yaml", lambda p: parsed.append(p) or real(p))
    check_pipeline_file(path, build=False)
    check_system(parse_system(str(path)))
    if importlib.util.find_spec("sentence_transformers") is not None:  # building needs the embedder (not on 2.x's venv)
        load_pipeline(path)
    assert resolve(path) is resolve(str(path))
    assert parsed == [path]
    path.write_text(path.read_text() + "\n# changed\n")  # a new version is read again
    resolve(path)
    assert len(parsed) == 2

    sources = [p for p in (Path(pipelines.__file__).parents[1]).rglob("*.py")
               if "yaml.safe_load(" in p.read_text() or "get_single_data(" in p.read_text()]
    assert [p.name for p in sources] == ["__init__.py"] and sources[0].parent.name == "pipelines"
