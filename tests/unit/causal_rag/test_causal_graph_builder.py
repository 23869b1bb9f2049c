"""CausalGraphBuilder with a scripted extractor and a table embedder: graph, cache, resume, failures."""

import asyncio
import copy
import json
import os

import pytest
from haystack import Document

from haystack_cfrag.causal_rag import CausalGraphBuilder
from haystack_cfrag.causal_rag.math.names import node_document_id
from haystack_cfrag.causal_rag.prompts import EXTRACTION_PROMPT
from haystack_cfrag.common import timing
from haystack_cfrag.evaluation.llm_cache import CachingChatGenerator

from .fakes import ScriptedExtractor, TableEmbedder

DOCS = [
    Document(id="p1", content="Heavy rain fell for three days over the valley, and a flood followed."),
    Document(id="p2", content="The flood that followed ruined the crops and closed the roads."),
    Document(id="p3", content="Drought also hurt the crops in the south.", meta={"source": "news"}),
]


def builder(tmp_path=None, **kwargs):
    kwargs.setdefault("chat_generator", ScriptedExtractor())
    kwargs.setdefault("document_embedder", TableEmbedder())
    if tmp_path is not None:
        kwargs.setdefault("cache_dir", str(tmp_path / "cache"))
    return CausalGraphBuilder(**kwargs)


def by_name(nodes):
    return {n.content: n for n in nodes}


def test_nodes_carry_their_edges_passages_and_embeddings():
    docs = copy.deepcopy(DOCS)
    out = builder().run(documents=docs)
    nodes = by_name(out["nodes"])
    assert set(nodes) == {"Heavy rain", "Flood", "Crops", "Roads", "Drought"}
    flood = nodes["Flood"]
    assert flood.id == node_document_id("Flood") and flood.embedding == [0.01] * 4
    assert flood.meta["cfrag_graph_node"] is True and flood.meta["node_id"] == "Flood"
    assert flood.meta["edges_in"] == [{"source": "Heavy rain", "target": "Flood", "relation": "CAUSES",
                                       "passage_ids": ["p1"]}]
    assert [(e["target"], e["relation"], e["passage_ids"]) for e in flood.meta["edges_out"]] == [
        ("Crops", "DAMAGES", ["p2"]), ("Roads", "CLOSES", ["p2"])]
    assert sorted(flood.meta["passage_ids"]) == ["p1", "p2"]
    assert nodes["Crops"].meta["passage_ids"] == ["p2", "p3"] and nodes["Heavy rain"].meta["node_type"] == "Weather"
    # passages pass on as copies with the flag, ids and other meta unchanged; inputs untouched
    assert [d.id for d in out["documents"]] == ["p1", "p2", "p3"]
    assert all(d.meta["cfrag_graph_passage"] is True for d in out["documents"])
    assert out["documents"][2].meta["source"] == "news" and docs == DOCS
    s = out["stats"]
    assert (s["passages"], s["chunks"], s["llm_calls"], s["parse_failures"], s["cached"]) == (3, 3, 3, 0, 0)
    assert (s["prompt_tokens"], s["completion_tokens"], s["nodes"], s["edges"]) == (300, 30, 5, 4)
    assert s["seconds"] >= 0 and out["degradations"] == []


def test_the_prompt_is_the_extraction_prompt_over_each_chunk():
    gen = ScriptedExtractor()
    long_doc = Document(id="long", content="Heavy rain. " + "x" * 1500)
    builder(chat_generator=gen).run(documents=[long_doc])
    assert len(gen.prompts) == 2   # 1,512 characters: two 1,000-character windows
    assert gen.prompts[0] == EXTRACTION_PROMPT.format(text=long_doc.content[:1000])
    assert gen.prompts[1].endswith("Text: " + long_doc.content[900:])


def test_cache_miss_then_hit_sends_nothing_again(tmp_path):
    first = builder(tmp_path)
    out1 = first.run(documents=DOCS)
    files = sorted(os.listdir(tmp_path / "cache"))
    assert len(files) == 3 and all(f.endswith(".json") and len(f) == 69 for f in files)
    second = builder(tmp_path)
    out2 = second.run(documents=DOCS)
    assert second.chat_generator.prompts == [] and out2["stats"]["cached"] == 3 and out2["stats"]["llm_calls"] == 0
    assert [(n.content, n.meta) for n in out2["nodes"]] == [(n.content, n.meta) for n in out1["nodes"]]
    # a changed passage misses; a changed prompt or chunking misses everything
    changed = [DOCS[0], Document(id="p2", content="The flood came back."), DOCS[2]]
    third = builder(tmp_path)
    assert third.run(documents=changed)["stats"]["llm_calls"] == 1
    other = builder(tmp_path, prompt_template="Extract:\n{text}")
    assert other.run(documents=DOCS)["stats"]["llm_calls"] == 3


def test_each_passage_keeps_its_price_in_the_cache_and_a_later_build_finds_it_there(tmp_path):
    """A resumed build (or one whose first build wrote no stats) still knows what each extraction cost."""
    out1 = builder(tmp_path).run(documents=DOCS)
    assert [c["how"] for c in out1["costs"]] == ["extracted"] * 3
    assert all(set(c["timed_on"]) == {timing.timed_on()} and c["seconds"] >= 0 and c["prompt_tokens"] == 100
               for c in out1["costs"])
    assert out1["stats"]["call_seconds"] <= out1["stats"]["seconds"]
    out2 = builder(tmp_path).run(documents=DOCS + [Document(id="p1b", content=DOCS[0].content)])
    assert [c["how"] for c in out2["costs"]] == ["cached"] * 3  # the duplicate passage is priced once
    priced = ("key", "seconds", "timed_on", "prompt_tokens", "completion_tokens")
    assert [[c[k] for k in priced] for c in out2["costs"]] == [[c[k] for k in priced] for c in out1["costs"]]
    for name in os.listdir(tmp_path / "cache"):  # records written before the cache kept seconds: price unknown
        path = tmp_path / "cache" / name
        path.write_text(json.dumps({k: v for k, v in json.loads(path.read_text()).items() if k != "timed_on"}))
    old = builder(tmp_path).run(documents=DOCS)
    assert old["stats"]["cached"] == 3 and all(c["seconds"] is None and c["timed_on"] is None for c in old["costs"])
    name = sorted(os.listdir(tmp_path / "cache"))[0]
    path = tmp_path / "cache" / name
    path.write_text(json.dumps({**json.loads(path.read_text()), "timed_on": {"m": -1.0}}))
    assert builder(tmp_path).run(documents=DOCS)["stats"]["cache_corrupt"] == 1  # a malformed price: re-extracted


def test_a_replayed_call_is_priced_at_the_seconds_and_machine_of_the_original(tmp_path):
    """The evaluation's reply cache marks a replayed reply; its extraction is charged what the original took."""
    replies = str(tmp_path / "replies.jsonl")
    made = builder(tmp_path / "a", chat_generator=CachingChatGenerator(generator=ScriptedExtractor(), path=replies))
    made.run(documents=DOCS)
    entries = [json.loads(line) for line in open(replies, encoding="utf-8")]
    for entry in entries:  # as if timed on another machine
        entry.update(seconds=10.0, timed_on="bbbb2222")
    other = tmp_path / "replies2.jsonl"
    other.write_text("".join(json.dumps(e) + "\n" for e in entries))
    replaying = CachingChatGenerator(generator=ScriptedExtractor(), path=str(other))
    out = builder(tmp_path / "b", chat_generator=replaying).run(documents=DOCS)
    assert replaying.generator.prompts == [] and [c["how"] for c in out["costs"]] == ["replayed"] * 3
    assert all(c["seconds"] == 10.0 and c["timed_on"] == {"bbbb2222": 10.0} for c in out["costs"])
    again = builder(tmp_path / "b", chat_generator=replaying).run(documents=DOCS)  # the extraction cache keeps it
    assert all(c["how"] == "cached" and c["timed_on"] == {"bbbb2222": 10.0} for c in again["costs"])


def test_identical_passages_are_extracted_once():
    gen = ScriptedExtractor()
    out = builder(chat_generator=gen).run(documents=[DOCS[0], Document(id="p1b", content=DOCS[0].content)])
    assert len(gen.prompts) == 1 and out["stats"]["cached"] == 1
    assert sorted(by_name(out["nodes"])["Flood"].meta["passage_ids"]) == ["p1", "p1b"]


def test_an_interrupted_run_resumes_from_the_cache(tmp_path):
    crashing = builder(tmp_path, chat_generator=ScriptedExtractor(fail_on=["Drought"]), raise_on_failure=True)
    with pytest.raises(RuntimeError, match="extraction call failed"):
        crashing.run(documents=DOCS)
    assert len(os.listdir(tmp_path / "cache")) == 2   # p1 and p2 were kept
    resumed = builder(tmp_path)
    out = resumed.run(documents=DOCS)
    assert out["stats"]["cached"] == 2 and len(resumed.chat_generator.prompts) == 1
    assert "Drought" in by_name(out["nodes"])


def test_a_failed_call_degrades_is_not_cached_and_the_passage_still_goes_out(tmp_path):
    b = builder(tmp_path, chat_generator=ScriptedExtractor(fail_on=["Drought"]))
    out = b.run(documents=DOCS)
    assert "Drought" not in by_name(out["nodes"]) and [d.id for d in out["documents"]] == ["p1", "p2", "p3"]
    [deg] = out["degradations"]
    assert deg["stage"] == "extraction" and deg["reason"] == "generator failed" and deg["passage_id"] == "p3"
    assert out["stats"]["failed_calls"] == 1 and len(os.listdir(tmp_path / "cache")) == 2
    assert len(out["costs"]) == 2  # not priced: it is sent again next time (its call's time is the build's)


def test_a_reply_that_does_not_parse_is_counted_and_the_passage_still_goes_out(tmp_path):
    docs = DOCS + [Document(id="p4", content="Gibberish about nothing.")]
    out = builder(tmp_path).run(documents=docs)
    assert out["stats"]["parse_failures"] == 1 and [d.id for d in out["documents"]][-1] == "p4"
    [deg] = out["degradations"]
    assert deg["reason"] == "reply did not parse" and deg["passage_id"] == "p4" and "not sure" in deg["reply"]
    # the unparsable reply is cached (the model would say the same): counted again, not asked again
    again = builder(tmp_path).run(documents=docs)
    assert again["stats"]["parse_failures"] == 1 and again["stats"]["llm_calls"] == 0
    # the passage's price says it too, so a report over several builds counts it once (not at each reload)
    assert [c["unparsed"] for c in out["costs"]] == [c["unparsed"] for c in again["costs"]] == [0, 0, 0, 1]


@pytest.mark.parametrize("content", [b"{not json", b"", b'{"version": 1, "key": "x", "chunks": []}',
                                     b'{"version": 1, "chunks": [{"nodes": "bad"}]}', b"\xff\xfe"])
def test_a_corrupt_cache_file_is_re_extracted_with_a_warning(tmp_path, content):
    builder(tmp_path).run(documents=DOCS[:1])
    [name] = os.listdir(tmp_path / "cache")
    (tmp_path / "cache" / name).write_bytes(content)
    b = builder(tmp_path)
    out = b.run(documents=DOCS[:1])
    assert len(b.chat_generator.prompts) == 1 and out["stats"]["cache_corrupt"] == 1
    assert out["degradations"][0]["stage"] == "cache" and "Flood" in by_name(out["nodes"])
    fixed = builder(tmp_path)
    assert fixed.run(documents=DOCS[:1])["stats"]["cached"] == 1 and fixed.chat_generator.prompts == []


def test_a_symlinked_cache_file_is_never_followed(tmp_path):
    builder(tmp_path).run(documents=DOCS[:1])
    [name] = os.listdir(tmp_path / "cache")
    outside = tmp_path / "outside.json"
    outside.write_bytes((tmp_path / "cache" / name).read_bytes())
    os.remove(tmp_path / "cache" / name)
    os.symlink(outside, tmp_path / "cache" / name)
    b = builder(tmp_path)
    out = b.run(documents=DOCS[:1])
    assert len(b.chat_generator.prompts) == 1 and out["stats"]["cache_corrupt"] == 1
    assert not os.path.islink(tmp_path / "cache" / name)            # replaced by a regular file
    assert json.loads(outside.read_bytes())["chunks"]                # the link's target was not written


def test_documents_without_text_are_passed_on_unread():
    out = builder().run(documents=[Document(id="empty", content="  "), Document(id="none")])
    assert out["nodes"] == [] and out["stats"]["skipped"] == 2 and [d.id for d in out["documents"]] == ["empty", "none"]
    assert builder().run(documents=[])["nodes"] == []
    with pytest.raises(ValueError, match="list of Documents"):
        builder().run(documents=["text"])


def test_without_an_embedder_nodes_come_out_unembedded_and_a_failing_one_raises():
    out = builder(document_embedder=None).run(documents=DOCS)
    assert out["nodes"] and all(n.embedding is None for n in out["nodes"])

    class Broken(TableEmbedder):
        def run(self, documents):
            raise RuntimeError("embedder down")

    with pytest.raises(RuntimeError, match="document embedder failed"):
        builder(document_embedder=Broken()).run(documents=DOCS)


def test_graph_limits_raise_naming_the_limit():
    with pytest.raises(ValueError, match="MAX_NODES=2"):
        builder(max_nodes=2).run(documents=DOCS)


def test_long_passages_read_at_most_max_chunks():
    gen = ScriptedExtractor()
    out = builder(chat_generator=gen, max_chunks_per_passage=2).run(documents=[Document(content="y" * 5000)])
    assert len(gen.prompts) == 2 and out["degradations"][0]["reason"].startswith("passage longer")


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"chunk_chars": 50}, "chunk_chars"), ({"chunk_overlap": 600}, "chunk_overlap"),
    ({"max_triples": 0}, "max_triples"), ({"prompt_template": "no placeholder"}, "lacks the placeholder {text}"),
    ({"prompt_template": "{text} {other}"}, "unknown placeholder"), ({"cache_dir": ""}, "cache_dir"),
    ({"timeout_s": 0}, "timeout_s"), ({"chat_generator": None}, "chat_generator"),
    ({"progress_bar": "yes"}, "progress_bar"),
])
def test_bad_parameters_raise_one_line_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        builder(**kwargs)


@pytest.mark.parametrize("twin", ["run", "run_async"])
def test_the_progress_bar_counts_the_passages_cached_ones_included(tmp_path, capsys, monkeypatch, twin):
    from haystack_cfrag.causal_rag.components import causal_graph_builder as module  # noqa: PLC0415

    positions = []

    class Recording(module.tqdm):  # the bar's count after each update (tqdm draws at most every 0.1 s)
        def update(self, n=1):
            super().update(n)
            positions.append(self.n)

    monkeypatch.setattr(module, "tqdm", Recording)

    def build(**kwargs):
        positions.clear()
        b = builder(tmp_path, **kwargs)
        b.run(documents=DOCS) if twin == "run" else asyncio.run(b.run_async(documents=DOCS))
        return capsys.readouterr().err

    err = build()
    assert "CausalGraphBuilder: passages" in err and "3/3" in err
    assert positions == [0, 1, 2, 3]  # extracted: passage by passage
    build()  # every passage from the cache now: the bar still ends at all of them
    assert positions == [3]
    assert "passage" not in build(progress_bar=False)


def test_round_trip_and_async_twin(tmp_path):
    b = builder(tmp_path, chunk_chars=800, chunk_overlap=50, prompt_template="Extract from:\n{text}",
                generation_kwargs={"max_tokens": 300}, timeout_s=30.0, progress_bar=False)
    restored = CausalGraphBuilder.from_dict(b.to_dict())
    assert restored.to_dict() == b.to_dict()
    assert isinstance(restored.chat_generator, ScriptedExtractor) and isinstance(restored.document_embedder,
                                                                                 TableEmbedder)
    sync = builder().run(documents=DOCS)
    async_ = asyncio.run(builder().run_async(documents=DOCS))
    untimed = lambda d: {k: v for k, v in d.items() if k not in ("seconds", "call_seconds", "timed_on")}  # noqa: E731
    strip = lambda out: ([(n.id, n.content, n.meta, n.embedding) for n in out["nodes"]],  # noqa: E731
                         untimed(out["stats"]), [untimed(c) for c in out["costs"]], out["degradations"])
    assert strip(sync) == strip(async_)


def test_triples_whose_ends_are_not_in_the_passage_are_dropped_and_counted():
    # the 1.5B extractor copies the prompt's example into a film passage: "PRODUCED_BY Microsoft"
    reply = ('[{"head": "The Dark Knight", "relation": "DIRECTED_BY", "tail": "Christopher Nolan"}, '
             '{"head": "The Dark Knight", "relation": "PRODUCED_BY", "tail": "Microsoft"}]')
    doc = Document(id="tdk", content="The Dark Knight is a 2008 film directed by Christopher Nolan.")
    gen = ScriptedExtractor(table={"Dark Knight": reply})
    out = builder(chat_generator=gen).run(documents=[doc])
    names = {d.meta["node_id"] for d in out["nodes"]}
    assert names == {"The Dark Knight", "Christopher Nolan"} and out["stats"]["ungrounded"] == 1
    kept = builder(chat_generator=ScriptedExtractor(table={"Dark Knight": reply}),
                   grounded_only=False).run(documents=[doc])
    assert "Microsoft" in {d.meta["node_id"] for d in kept["nodes"]} and kept["stats"]["ungrounded"] == 0
