"""The examples, built and run with deterministic fakes (their __main__ uses the real models)."""

import difflib
import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Any

import pytest
from haystack import component
from haystack.dataclasses import ChatMessage
from haystack.document_stores.in_memory import InMemoryDocumentStore

from haystack_cfrag.support.backends import AnswerLogprobs
from tests import dark_knight as dk
from tests.fakes import HashingDocumentEmbedder, HashingTextEmbedder, KeywordReader

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


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
    assert trace["drafts"] and trace["decision"] in {"baseline", "override"}  # the default defends standard RAG's
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


# ---------------------------------------------------------------- grounded_rag.py (CDF-RAG's checks after standard RAG)
class WordSupport:
    """A support backend: −0.1 per answer word the prompt's evidence names, −4 per other word."""

    name = "words"

    def warm_up(self):
        pass

    def answer_logprobs(self, prompt, answer):
        evidence = prompt.split("Question:")[0]
        values = tuple(-0.1 if word.strip(".,") in evidence else -4.0 for word in answer.split())
        return AnswerLogprobs(values, len(answer.split()), 0, 0.0)


@component
class ScoringKeywordReader(KeywordReader):
    """A KeywordReader that ReaderSupportScorer can read (`support_backend`); `first_answer`: its first reply."""

    def __init__(self, candidates, counterfactual_reply="", first_answer=None):
        KeywordReader.__init__(self, candidates=candidates, counterfactual_reply=counterfactual_reply)
        self.first_answer = first_answer

    def support_backend(self):
        return WordSupport()

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage], generation_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
        if self.first_answer and not self.prompts:
            self.prompts.append(messages[-1].text or "")
            return {"replies": [ChatMessage.from_assistant(f"Answer: {self.first_answer}")]}
        # (@component: no super())
        return KeywordReader.run(self, messages=messages, generation_kwargs=generation_kwargs)


def test_grounded_rag_keeps_an_answer_its_evidence_supports(parts):
    store, embedder, _ = parts
    reader = ScoringKeywordReader(candidates=dk.CANDIDATES)
    mod = load("grounded_rag.py")
    answer, checks = mod.ask(mod.build(store, embedder, reader), dk.QUESTION)
    grounding = checks["grounding"]
    assert answer == "Heath Ledger"  # the reviews name him: grounded, still the trap (a grounding check is no cure)
    assert grounding["decision"] == "keep" and grounding["s_hall"] == 0.0
    assert [(c["text"], c["supported"]) for c in grounding["claims"]] == [("Heath Ledger", True)]
    assert len(reader.prompts) == 1 and set(checks) == {"grounding"}


def test_grounded_rag_rewrites_an_answer_its_evidence_does_not_support(parts):
    store, embedder, _ = parts
    reader = ScoringKeywordReader(candidates=dk.CANDIDATES, first_answer="Tom Hardy")
    mod = load("grounded_rag.py")
    answer, checks = mod.ask(mod.build(store, embedder, reader), dk.QUESTION)
    grounding = checks["grounding"]
    assert grounding["trace"]["original_answer"] == "Tom Hardy"
    assert grounding["s_hall"] == 1.0 and grounding["decision"] == "rewrite" and grounding["rewritten"]
    assert answer == grounding["answer"] and answer in dk.CANDIDATES
    assert len(reader.prompts) == 2 and "Tom Hardy" in reader.prompts[1] and "Unsupported" in reader.prompts[1]


def test_grounded_rag_with_the_causal_check_first(parts):
    store, embedder, _ = parts
    reader = ScoringKeywordReader(candidates=dk.CANDIDATES)
    mod = load("grounded_rag.py")
    pipe = mod.build(store, embedder, reader, causal_check=True)
    question = "Who caused the posthumous Oscar of The Dark Knight?"
    # hand-written edges, as in the example (a causal graph of the documents would supply them)
    answer, checks = mod.ask(pipe, question, [{"source": "Heath Ledger", "target": "posthumous Oscar"}])
    assert answer == "Heath Ledger" and checks["causal_check"]["s_causal"] == 1.0
    assert checks["causal_check"]["decision"] == "keep" and checks["grounding"]["decision"] == "keep"
    answer, checks = mod.ask(pipe, question, [("posthumous Oscar", "Heath Ledger")])  # the edge reversed
    causal = checks["causal_check"]
    assert causal["s_causal"] == 0.0 and causal["decision"] == "regenerate"
    assert "posthumous Oscar -> Heath Ledger" in reader.prompts[-1]  # the stricter prompt lists the edge
    assert checks["grounding"]["trace"]["original_answer"] == causal["answer"]  # grounding checks what came out
    answer, checks = mod.ask(pipe, dk.QUESTION)  # no edges: the causal check decides nothing
    assert checks["causal_check"]["decision"] == "undefined" and answer == "Heath Ledger"
