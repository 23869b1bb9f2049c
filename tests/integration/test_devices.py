"""`--device` reaches every local model: embedders, cross-encoder, transformers generator (CPU here).

A GPU spec (cuda:0) is checked up to the component's parameters and serialisation; loading
happens on the CPU, where this machine's models run.
"""

import pytest
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.utils import ComponentDevice

from haystack_cfrag.adapters import factories
from haystack_cfrag.runtime import Runtime
from tests.integration.tiny_models import tiny_chat_model, tiny_cross_encoder


def device_of(component):
    data = component.to_dict()["init_parameters"]
    return ComponentDevice.from_dict(data["device"]) if data.get("device") else None


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny")
    return {"ce": str(tiny_cross_encoder(root / "ce")), "lm": str(tiny_chat_model(root / "lm"))}


@pytest.mark.parametrize("device", ["cpu", "cuda:0"])
def test_device_reaches_each_factory_and_its_serialisation(device, tiny):
    wanted = ComponentDevice.from_str(device)
    built = [factories.text_embedder(device=device), factories.document_embedder(device=device),
             factories.scorer(tiny["ce"], device=device)]
    for comp in built:
        assert device_of(comp) == wanted, type(comp).__name__
        again = type(comp).from_dict(comp.to_dict())
        assert device_of(again) == wanted
    gen = factories.chat_generator(f"hf:{tiny['lm']}", max_tokens=4, device=device)
    assert gen.huggingface_pipeline_kwargs["device"] == wanted.to_hf()
    default = ComponentDevice.resolve_device(None)  # no --device: Haystack's own choice (cpu here)
    assert all(device_of(c) == default for c in (factories.text_embedder(), factories.scorer(tiny["ce"])))


def offload_of(generator):
    kwargs = generator.to_dict()["init_parameters"]["model_kwargs"]
    return {k: kwargs[k] for k in ("n_gpu_layers", "split_mode", "main_gpu") if k in kwargs}


@pytest.mark.parametrize(("device", "offload"), [("cpu", {"n_gpu_layers": 0}),
                                                ("cuda:1", {"n_gpu_layers": -1, "split_mode": 0, "main_gpu": 1}),
                                                (None, {})])
def test_device_reaches_the_llama_cpp_reader_as_offload_settings(device, offload):
    """A GGUF reader: `--device cuda:N` puts every layer on GPU N alone, `cpu` none; no --device: llama.cpp's."""
    assert offload_of(factories.chat_generator("/models/reader.gguf", device=device)) == offload
    rt = Runtime(store=InMemoryDocumentStore(), llm="/models/reader.gguf", device=device)
    assert offload_of(rt.generator) == offload
    with pytest.raises(ValueError, match="disk"):
        factories.chat_generator("/models/reader.gguf", device="disk")


def test_cpu_device_is_where_the_models_load(tiny):
    emb = factories.text_embedder(device="cpu")
    emb.warm_up()
    assert str(emb.embedding_backend.model.device) == "cpu"
    gen = factories.chat_generator(f"hf:{tiny['lm']}", max_tokens=4, device="cpu")
    gen.warm_up()
    assert str(gen.pipeline.model.device) == "cpu"


@pytest.mark.parametrize("device", ["cpu", "cuda:0"])
def test_runtime_passes_the_device_to_embedder_scorer_and_reader(tiny, device):
    """The reader too: without it an `hf:` reader went where Haystack chose (the first GPU), whatever --device said.

    (Nothing is loaded here: a Runtime builds its models, and warm_up loads them.)
    """
    rt = Runtime(store=InMemoryDocumentStore(), llm=f"hf:{tiny['lm']}", scorer=tiny["ce"], device=device)
    wanted = ComponentDevice.from_str(device)
    assert device_of(rt.text_embedder) == wanted and device_of(rt.models.scorer) == wanted
    assert rt.generator.huggingface_pipeline_kwargs["device"] == wanted.to_hf()


def test_index_graph_passes_the_device_to_the_extraction_model(tmp_path, tiny, monkeypatch, graph_cache):
    """`cfrag index --graph --device D`: the extraction model is built for D, like the embedder."""
    from click.testing import CliRunner

    from haystack_cfrag.cli import main

    built = []
    real = factories.chat_generator
    monkeypatch.setattr(factories, "chat_generator", lambda spec, **kw: built.append(kw) or real(spec, **kw))
    (tmp_path / "notes.txt").write_text("Heath Ledger plays the Joker in The Dark Knight.")
    result = CliRunner().invoke(main, ["index", str(tmp_path / "notes.txt"), "--store", str(tmp_path / "s.json"),
                                       "--graph", "--extractor", "llm", "--llm", f"hf:{tiny['lm']}",
                                       "--device", "cpu"])
    assert result.exit_code == 0, result.output
    assert [kw.get("device") for kw in built] == ["cpu"]
    assert "graph: 1 passages" in result.output
