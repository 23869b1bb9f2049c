"""How a Runtime hands its models and store to what it builds: the pre-init callback (`runtime.parts`)."""

from typing import Any

import pytest
from haystack import Document, component, default_from_dict, default_to_dict
from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
from haystack.dataclasses import ChatMessage
from haystack.document_stores.in_memory import InMemoryDocumentStore

from haystack_cfrag.common.protocols import ChatGenerator, Retriever
from haystack_cfrag.common.serialization import deserialize_init_components, serialize_component
from haystack_cfrag.pipelines.loading import TRUSTED_PREFIXES, pipeline_from_dict
from haystack_cfrag.runtime import Runtime
from haystack_cfrag.runtime.parts import RuntimeParts
from tests import dark_knight as dk
from tests.fakes import HashingDocumentEmbedder, HashingTextEmbedder, KeywordReader


@component
class Unbuildable:
    """A chat generator whose class cannot be built here (llama.cpp not installed, an API key not set)."""

    def __init__(self, model: str = "x") -> None:
        raise RuntimeError("never built: the runtime's generator takes its place")

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage]) -> dict[str, Any]:
        return {"replies": messages}


@component
class Asker:
    """Holds a chat generator and a retriever run per query, as our components do."""

    def __init__(self, chat_generator: ChatGenerator, retriever: Retriever) -> None:
        self.chat_generator, self.retriever = chat_generator, retriever

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, chat_generator=serialize_component(self.chat_generator),
                               retriever=serialize_component(self.retriever))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Asker":
        return default_from_dict(cls, deserialize_init_components(data, ("chat_generator", "retriever")))

    @component.output_types(documents=list[Document])
    def run(self, query: str) -> dict[str, Any]:
        return {"documents": []}


@component
class PrivateStoreRetriever:
    """Keeps its store in `_document_store`, as qdrant-haystack's retrievers do."""

    def __init__(self, document_store: InMemoryDocumentStore, top_k: int = 10) -> None:
        self._document_store, self._top_k = document_store, top_k

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, document_store=self._document_store.to_dict(), top_k=self._top_k)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "PrivateStoreRetriever":
        init = data["init_parameters"]
        init["document_store"] = InMemoryDocumentStore.from_dict(init["document_store"])
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, query_embedding: list[float], top_k: int | None = None) -> dict[str, Any]:
        return {"documents": self._document_store.embedding_retrieval(query_embedding, top_k=top_k or self._top_k)}


def dark_knight_store() -> InMemoryDocumentStore:
    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    store.write_documents(HashingDocumentEmbedder().run(dk.documents())["documents"])
    return store


def parts(store: Any, retriever: Any = None) -> RuntimeParts:
    reader = KeywordReader(candidates=dk.CANDIDATES, counterfactual_reply=dk.COUNTERFACTUAL_REPLY)
    return RuntimeParts(generator=reader, text_embedder=HashingTextEmbedder(), scorer=None, retriever=retriever,
                        keyword=None, store=store, keyword_store=lambda: store, allowed=(*TRUSTED_PREFIXES, "tests"))


def unbuildable() -> dict[str, Any]:
    return {"type": f"{__name__}.Unbuildable", "init_parameters": {"model": "x"}}


def test_a_components_injected_parts_are_the_runtimes_instances_and_the_files_are_never_built():
    store = dark_knight_store()
    rp = parts(store)
    file_retriever = serialize_component(InMemoryEmbeddingRetriever(document_store=InMemoryDocumentStore(), top_k=3))
    data = {"components": {"asker": {"type": f"{__name__}.Asker", "init_parameters": {
        "chat_generator": unbuildable(), "retriever": file_retriever}}}, "connections": []}
    pipe = pipeline_from_dict(rp.plan(data), share_models=False, allowed_modules=["tests"], callbacks=rp.callbacks())
    asker = pipe.get_component("asker")
    assert asker.chat_generator is rp.generator
    assert type(asker.retriever) is InMemoryEmbeddingRetriever and asker.retriever.document_store is store
    assert asker.retriever.top_k == 3  # the file's
    assert data["components"]["asker"]["init_parameters"]["chat_generator"] == unbuildable()  # the input is not changed


def test_a_node_wired_as_a_generator_becomes_the_runtimes_configuration():
    rp = parts(dark_knight_store())
    data = {"components": {"llm": unbuildable()}, "connections": [],
            "inputs": {"messages": ["llm.messages"]}, "outputs": {"replies": "llm.replies"}}
    pipe = pipeline_from_dict(rp.plan(data), share_models=False, allowed_modules=["tests"], callbacks=rp.callbacks())
    llm = pipe.get_component("llm")
    assert type(llm) is KeywordReader and llm is not rp.generator  # its own node, of the runtime's configuration
    assert llm.to_dict() == rp.generator.to_dict()


def test_a_retriever_that_keeps_its_store_private_is_handed_the_runtimes_store_at_construction():
    store = dark_knight_store()
    rt = Runtime(store=store, retriever=PrivateStoreRetriever(document_store=InMemoryDocumentStore(), top_k=1),
                 chat_generator=KeywordReader(candidates=dk.CANDIDATES), text_embedder=HashingTextEmbedder(),
                 allowed_modules=["tests"])
    node = rt.pipeline("standard_rag").get_component("retriever")
    part = rt.pipeline("cf_rag").get_component("retriever").retriever
    for retriever in (node, part):
        assert type(retriever) is PrivateStoreRetriever and retriever._document_store is store  # noqa: SLF001
    assert (node._top_k, part._top_k) == (5, 1)  # noqa: SLF001  (the file's top_k, where it sets one)
    assert rt.ask("standard_rag", dk.QUESTION).answer == "Heath Ledger"


def test_a_new_store_rebuilds_the_pipelines_around_it():
    rt = Runtime(store=dark_knight_store(), chat_generator=KeywordReader(candidates=dk.CANDIDATES),
                 text_embedder=HashingTextEmbedder(), allowed_modules=["tests"])
    before = rt.built("standard_rag")
    rt.use_store(rt.store)  # the same store: nothing rebuilt
    assert rt.built("standard_rag") is before
    other = dark_knight_store()
    rt.use_store(other)
    after = rt.built("standard_rag")
    assert after is not before and after.get_component("retriever").document_store is other
    assert after.get_component("generator") is not rt.generator and rt.ask("standard_rag", dk.QUESTION).answer


def small(model: str = "embedded:qwen2.5-coder-0.5b-instruct") -> dict[str, Any]:
    return {"type": f"{__name__}.Unbuildable", "init_parameters": {"model": model}}


def test_a_generator_of_the_model_the_files_metadata_declares_auxiliary_becomes_the_runtimes_auxiliary_one():
    store = dark_knight_store()
    aux = KeywordReader(candidates=["aux"])
    made = []
    rp = RuntimeParts(generator=KeywordReader(candidates=dk.CANDIDATES), text_embedder=HashingTextEmbedder(),
                      scorer=None, retriever=None, keyword=None, store=store, keyword_store=lambda: store,
                      allowed=(*TRUSTED_PREFIXES, "tests"), auxiliary=lambda: made.append(1) or aux)
    def file_retriever():
        return serialize_component(InMemoryEmbeddingRetriever(document_store=InMemoryDocumentStore(), top_k=3))

    data = {"components": {
        "asks_small": {"type": f"{__name__}.Asker", "init_parameters": {"chat_generator": small(),
                                                                         "retriever": file_retriever()}},
        "asks_reader": {"type": f"{__name__}.Asker", "init_parameters": {"chat_generator": unbuildable(),
                                                                          "retriever": file_retriever()}}},
        "connections": []}
    undeclared = pipeline_from_dict(rp.plan(data), share_models=False, allowed_modules=["tests"],
                                    callbacks=rp.callbacks())
    assert undeclared.get_component("asks_small").chat_generator is rp.generator and not made  # no guess
    data["metadata"] = {"auxiliary_model": "embedded:qwen2.5-coder-0.5b-instruct"}
    pipe = pipeline_from_dict(rp.plan(data), share_models=False, allowed_modules=["tests"], callbacks=rp.callbacks())
    assert pipe.get_component("asks_small").chat_generator is aux
    assert pipe.get_component("asks_reader").chat_generator is rp.generator
    assert made  # built only because the file declared it and a generator of it


def test_the_shipped_files_that_use_the_small_model_declare_it_auxiliary():
    from haystack_cfrag import registry
    from haystack_cfrag.models import AUXILIARY_MODELS, EMBEDDED_SMALL_LLM
    from haystack_cfrag.runtime.parts import auxiliary_model

    declaring = {name for name in registry.REGISTRY if auxiliary_model(registry.resolve(name).data)}
    # a file whose parameters may name the small model (`refiner_model`, `summarizer_model`) declares it
    may_name = {name for name, p in registry.REGISTRY.items()
                if any(q.choices == AUXILIARY_MODELS for q in p.parameters.values())}
    assert declaring == may_name == {"cdf_rag", "cdf_rag_auto", "causal_rag", "causal_rag_auto"}
    assert {auxiliary_model(registry.resolve(name).data) for name in declaring} == {EMBEDDED_SMALL_LLM}


def test_without_an_auxiliary_model_the_reader_makes_every_call():
    rp = parts(dark_knight_store())  # auxiliary=None: a runtime handed its generator (tests, a server's reader)
    data = {"components": {"asker": {"type": f"{__name__}.Asker", "init_parameters": {
        "chat_generator": small(), "retriever": serialize_component(
            InMemoryEmbeddingRetriever(document_store=InMemoryDocumentStore()))}}}, "connections": []}
    pipe = pipeline_from_dict(rp.plan(data), share_models=False, allowed_modules=["tests"], callbacks=rp.callbacks())
    assert pipe.get_component("asker").chat_generator is rp.generator


def test_the_runtime_chooses_its_auxiliary_model_by_its_reader():
    store = dark_knight_store()
    handed = Runtime(store=store, chat_generator=KeywordReader(candidates=dk.CANDIDATES),
                     text_embedder=HashingTextEmbedder())
    server = Runtime(store=store, llm="openai:http://127.0.0.1:9/v1#m", text_embedder=HashingTextEmbedder())
    assert handed.models.aux_llm is None and server.models.aux_llm is None
    small = "embedded:qwen2.5-coder-0.5b-instruct"
    assert Runtime(store=store, chat_generator=KeywordReader(candidates=["a"]), text_embedder=HashingTextEmbedder(),
                   aux_llm=small).models.aux_llm == small


def test_forget_prompts_empties_every_loaded_models_cache():
    class Llama:
        def __init__(self):
            self.resets = 0

        def reset(self):
            self.resets += 1

    store = dark_knight_store()
    reader = KeywordReader(candidates=dk.CANDIDATES)
    reader._model = Llama()  # noqa: SLF001
    rt = Runtime(store=store, chat_generator=reader, text_embedder=HashingTextEmbedder())
    rt.models.forget_prompts()
    rt.models.forget_prompts()
    assert reader._model.resets == 2  # noqa: SLF001


def test_the_auxiliary_model_loads_on_its_first_call_not_at_warm_up(tmp_path):
    """A cascade names the small model for its escalation only: warming the pipeline must not load it."""
    pytest.importorskip("haystack_integrations.components.generators.llama_cpp")  # llama-cpp-haystack
    llama = pytest.importorskip("haystack_cfrag.adapters.llama_cpp_logprobs")
    missing = str(tmp_path / "absent.gguf")
    deferred = llama.LlamaCppLogprobsChatGenerator(model=missing).defer_load()
    deferred.warm_up()  # nothing read: the file does not even exist
    assert deferred._model is None  # noqa: SLF001
    with pytest.raises(Exception, match="absent.gguf"):
        deferred.run([ChatMessage.from_user("Who?")])  # the first call loads it
    with pytest.raises(Exception, match="absent.gguf"):
        llama.LlamaCppLogprobsChatGenerator(model=missing).warm_up()  # not deferred: loaded at warm-up
