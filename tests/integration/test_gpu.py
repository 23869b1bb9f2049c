"""On a GPU, `--device cuda:0` puts each local model there and gives what the CPU gives.

Skipped (with the reason in `make test`'s log) where torch sees no CUDA device: CI and the
development machine have none. Run on a GPU machine with
`CFRAG_GPU_EMBEDDER=<sentence-transformers folder> pytest -rs tests/integration/test_gpu.py`
(the embedder defaults to the embedded all-MiniLM-L6-v2; `tiny` builds a tiny random one, for a
machine the embedded model cannot travel to). `CFRAG_TEST_GPU=cpu` runs the same
checks with the CPU in the GPU's place, to try the test itself without a GPU.
What was verified on which card: docs/deployment.md, "A GPU recipe".
"""

import json
import os
import re

import numpy as np
import pytest
from click.testing import CliRunner
from haystack import Document

from haystack_cfrag import models
from haystack_cfrag.adapters import factories
from haystack_cfrag.cli import main
from tests.integration.tiny_models import tiny_chat_model, tiny_cross_encoder, tiny_sentence_embedder

torch = pytest.importorskip("torch")

GPU = os.environ.get("CFRAG_TEST_GPU", "cuda:0")
EMBEDDER_SPEC = os.environ.get("CFRAG_GPU_EMBEDDER", models.EMBEDDED_EMBEDDER)
pytestmark = pytest.mark.skipif(GPU.startswith("cuda") and not torch.cuda.is_available(),
                                reason="no CUDA device (torch.cuda.is_available() is False)")

PASSAGES = [
    "Christian Bale stars as Bruce Wayne in The Dark Knight, directed by Christopher Nolan.",
    "Heath Ledger plays the Joker, the film's villain, in The Dark Knight.",
    "The Dark Knight was released in 2008 and grossed over one billion dollars.",
]
QUESTION = "Who is the lead actor in The Dark Knight?"


def device_type(model) -> str:
    """'cuda' or 'cpu': where a torch module (or a sentence-transformers model) holds its weights."""
    return next(model.parameters()).device.type


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny")
    return {"ce": str(tiny_cross_encoder(root / "ce")), "lm": str(tiny_chat_model(root / "lm"))}


@pytest.fixture(scope="module")
def embedder(tmp_path_factory):
    """The embedder spec: CFRAG_GPU_EMBEDDER's, or a tiny random one built here when it says `tiny`."""
    if EMBEDDER_SPEC != "tiny":
        return EMBEDDER_SPEC
    return str(tiny_sentence_embedder(tmp_path_factory.mktemp("tiny-embedder")))


def test_embedder_on_the_gpu_gives_the_cpu_embeddings(embedder):
    on = {}
    for device in ("cpu", GPU):
        emb = factories.document_embedder(embedder, device=device)
        emb.warm_up()
        assert device_type(emb.embedding_backend.model) == device.split(":")[0]
        docs = emb.run(documents=[Document(content=p) for p in PASSAGES])["documents"]
        on[device] = np.array([d.embedding for d in docs])
    assert on["cpu"].shape == (3, on["cpu"].shape[1]) and np.allclose(np.linalg.norm(on[GPU], axis=1), 1, atol=1e-4)
    assert np.abs(on["cpu"] - on[GPU]).max() < 1e-3


def test_cross_encoder_on_the_gpu_gives_the_cpu_scores(tiny):
    scores = {}
    for device in ("cpu", GPU):
        ranker = factories.scorer(tiny["ce"], device=device)
        ranker.warm_up()
        assert device_type(ranker._cross_encoder) == device.split(":")[0]
        out = ranker.run(query=QUESTION, documents=[Document(content=p) for p in PASSAGES])["documents"]
        scores[device] = {d.content: d.score for d in out}
    assert all(abs(scores["cpu"][p] - scores[GPU][p]) < 1e-4 for p in PASSAGES)


def test_hf_generator_and_its_support_scores_on_the_gpu_match_the_cpu(tiny):
    """The reader on the GPU: the same greedy reply, and the shared primitive reads the same log-probabilities."""
    from haystack.dataclasses import ChatMessage

    from haystack_cfrag.support import ReaderSupportScorer

    replies, support = {}, {}
    for device in ("cpu", GPU):
        gen = factories.chat_generator(f"hf:{tiny['lm']}", max_tokens=6, device=device)
        gen.warm_up()
        assert device_type(gen.pipeline.model) == device.split(":")[0]
        replies[device] = gen.run(messages=[ChatMessage.from_user(QUESTION)])["replies"][0].text
        out = ReaderSupportScorer(chat_generator=gen).run(
            query=QUESTION, answers=["christian bale", "heath ledger"],
            documents=[Document(content=p) for p in PASSAGES[:2]])
        support[device] = np.array(out["support"], dtype=float)
    assert replies["cpu"] == replies[GPU]
    assert np.isfinite(support[GPU]).all() and np.abs(support["cpu"] - support[GPU]).max() < 1e-3


def test_runtime_puts_the_reader_and_the_graph_extraction_on_the_gpu(tiny, embedder, graph_cache):
    """Runtime(device=…): the `hf:` reader loads there, and CausalRAG's graph is extracted by it there.

    The tiny reader's extractions do not parse (counted, the passages stay retrievable as text);
    the check is that each passage got its call on the GPU and none failed.
    """
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    from haystack_cfrag.runtime import Runtime

    store = InMemoryDocumentStore()
    emb = factories.document_embedder(embedder, device=GPU)
    emb.warm_up()
    store.write_documents(emb.run(documents=[Document(content=p) for p in PASSAGES])["documents"])
    rt = Runtime(store=store, llm=f"hf:{tiny['lm']}", embedder=embedder, device=GPU, max_tokens=8)
    rt.warm_up()
    assert device_type(rt.generator.pipeline.model) == GPU.split(":")[0]
    assert device_type(rt.text_embedder.embedding_backend.model) == GPU.split(":")[0]
    rt.stores.graph_store()
    (stats,) = rt.graph_stats
    assert stats["passages"] == len(PASSAGES) and stats["llm_calls"] == len(PASSAGES) and stats["failed_calls"] == 0
    assert any(graph_cache.rglob("*")), "the extraction was not cached"


def test_cli_index_graph_extracts_with_the_model_on_the_gpu(tmp_path, tiny, embedder, graph_cache):
    """`cfrag index --graph --device`: the embedder and the extraction model on the GPU, one call per passage."""
    (tmp_path / "notes.txt").write_text("\n\n".join(PASSAGES))
    result = CliRunner().invoke(main, ["index", str(tmp_path / "notes.txt"), "--store", str(tmp_path / "store.json"),
                                       "--embedder", embedder, "--device", GPU, "--graph", "--extractor", "llm",
                                       "--llm", f"hf:{tiny['lm']}",
                                       "--words", "20", "--overlap", "0"])
    assert result.exit_code == 0, result.output
    # (transformers' loading bar can share the summary's line in the captured output)
    assert re.search(r"graph: (\d+) passages \(0 cached\), \1 LLM calls", result.output), result.output


@pytest.mark.parametrize("pipeline", ["cf_rag", "cer", "causal_rag", "cdf_rag", "grounded_rag_lite"])
def test_cli_indexes_and_answers_with_every_local_model_on_the_gpu(tmp_path, tiny, embedder, graph_cache, pipeline):
    """`cfrag index/ask --device`: embedder, cross-encoder and an hf: reader all on the GPU, end to end.

    The tiny reader's answers mean nothing; the check is that each pipeline runs there and traces
    (CausalRAG's and CDF-RAG's graph is extracted at the first question, by the same reader).
    """
    (tmp_path / "notes.txt").write_text("\n\n".join(PASSAGES))
    store = str(tmp_path / "store.json")
    runner = CliRunner()
    result = runner.invoke(main, ["index", str(tmp_path / "notes.txt"), "--store", store,
                                        "--embedder", embedder, "--device", GPU, "--words", "20", "--overlap", "0"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(main, ["ask", QUESTION, "--pipeline", pipeline, "--store", store,
                                        "--llm", f"hf:{tiny['lm']}", "--embedder", embedder, "--scorer", tiny["ce"],
                                        "--device", GPU, "--max-tokens", "8", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output[result.output.index("{"):])
    assert isinstance(data["answer"], str) and data["trace"] and data["llm"]["calls"] >= 1


def test_faiss_searches_a_gpu_copy_with_the_cpu_results(tmp_path):
    """`faiss:` stores search a GPU copy of the index when faiss has a GPU (a faiss-gpu build)."""
    faiss = pytest.importorskip("faiss", reason="faiss is not installed")
    if GPU.startswith("cuda") and faiss.get_num_gpus() == 0:
        pytest.skip("faiss reports no GPU: a CPU build of faiss (faiss-gpu-cu12 or conda's faiss-gpu has one)")
    from haystack_cfrag.stores import embedding_retriever
    from haystack_cfrag.stores.kinds.faiss_gpu import GpuFAISSDocumentStore

    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(500, 64)).astype("float32")
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    docs = [Document(id=f"d{i}", content=f"passage {i}", embedding=v.tolist()) for i, v in enumerate(vectors)]
    found = {}
    for device in (-1, None):  # -1: the CPU index; None: GPU 0 when faiss has one
        store = GpuFAISSDocumentStore(embedding_dim=64, device=device)
        store.write_documents(docs)
        assert store.on_gpu == (device is None and GPU.startswith("cuda"))
        retriever = embedding_retriever(store, top_k=5)
        found[device] = [[d.id for d in retriever.run(query_embedding=v.tolist())["documents"]] for v in vectors[:20]]
    assert found[-1] == found[None] and all(ids[0] == f"d{i}" for i, ids in enumerate(found[None]))
