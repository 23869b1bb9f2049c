"""The examples, built and run with deterministic fakes (their __main__ uses the real models)."""

import difflib
import importlib.util
import inspect
import sys
from pathlib import Path

import pytest
from haystack.document_stores.in_memory import InMemoryDocumentStore

from tests import dark_knight as dk
from tests.fakes import HashingDocumentEmbedder, HashingTextEmbedder, KeywordReader

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(name):
    sys.path.insert(0, str(EXAMPLES))
    try:
        spec = importlib.util.spec_from_file_location(name.replace(".py", ""), EXAMPLES / name)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(EXAMPLES))


@pytest.fixture
def parts():
    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    store.write_documents(HashingDocumentEmbedder().run(dk.documents())["documents"])
    reader = KeywordReader(candidates=dk.CANDIDATES, counterfactual_reply=dk.COUNTERFACTUAL_REPLY)
    return store, HashingTextEmbedder(), reader


def test_standard_rag_falls_into_the_trap(parts):
    mod = load("standard_rag.py")
    assert mod.ask(mod.build(*parts), dk.QUESTION) == "Heath Ledger"


def test_example1_replace_generation(parts):
    mod = load("01_replace_generation.py")
    answer, trace = mod.ask(mod.build(*parts), dk.QUESTION)
    assert answer in dk.CANDIDATES
    assert trace["drafts"] and trace["decision"] in {"baseline", "override"}  # the default defends standard RAG's answer
    assert trace["override"]["baseline_draft"] in {d["index"] for d in trace["drafts"]}
    used = {e["id"] for d in trace["drafts"] for e in d["evidence"]}
    assert used, "the drafts must have seen evidence"


def test_example1_is_a_small_diff_from_standard_rag():
    base = inspect.getsource(load("standard_rag.py").build).splitlines()
    ex1 = inspect.getsource(load("01_replace_generation.py").build).splitlines()
    changed = [ln for ln in difflib.unified_diff(base, ex1, lineterm="", n=0)
               if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
    print("\n".join(changed))
    assert len(changed) <= 10, changed  # the issue asks for about ten lines


def test_example2_expands_queries_and_keeps_provenance(parts):
    mod = load("02_expand_queries.py")
    answer, queries = mod.ask(mod.build(*parts), dk.QUESTION)
    assert queries[0] == dk.QUESTION and len(queries) > 1
    assert answer.data in dk.CANDIDATES
    assert all("cfrag_provenance" in d.meta for d in answer.documents)
    assert any(p["query_index"] > 0 for d in answer.documents for p in d.meta["cfrag_provenance"])


def test_example3_arbitrates_the_drafted_answers(parts):
    mod = load("03_arbitrate_answers.py")
    answer, trace = mod.ask(mod.build(*parts), dk.QUESTION)
    assert len(trace["drafts"]) == 2
    assert answer == trace["drafts"][0]["answer"] or answer in {d["answer"] for d in trace["drafts"]}
    assert trace["counterfactuals"] and all(d["scores"]["causal"] is not None for d in trace["drafts"])
