"""EvidenceSetSelector with an inline fake support scorer and a fake chat generator (no models)."""

import asyncio
import copy
import math
import random

import pytest
import yaml
from haystack import Document, component, default_from_dict, default_to_dict
from haystack.dataclasses import ChatMessage
from hypothesis import given, settings
from hypothesis import strategies as st

from haystack_cfrag.cer.components import EvidenceSetSelector
from haystack_cfrag.cer.components.evidence_set_selector import DELETION_KEY, NECESSITY_KEY, RANK_KEY
from haystack_cfrag.cer.math.settings import CerSettings
from haystack_cfrag.pipelines.loading import pipeline_from_dict
from tests import dark_knight as dk
from tests.fakes import FixedReplyGenerator as FakeGenerator


@component
class FakeScorer:
    """log P(answer | query, documents): high when a passage holds `marker`, low otherwise.

    The yes/no verification question gets "no" likely when a passage holds `contra`.
    `closed_book` is the support with no documents.
    """

    def __init__(
        self,
        marker: str = "Christian Bale",
        closed_book: float = -3.0,
        contra: str = "Joker",
        fail: bool = False,
    ) -> None:
        self.marker = marker
        self.closed_book = closed_book
        self.contra = contra
        self.fail = fail
        self.calls: list[tuple[str, str, tuple[str, ...]]] = []

    @component.output_types(score=float)
    def run(self, query: str, answer: str, documents: list[Document]) -> dict:
        return {"score": self.score(query, answer, documents)}

    def score(self, query, answer, documents):
        self.calls.append((query, answer, tuple(d.id for d in documents)))
        if self.fail:
            raise RuntimeError("scorer down")
        texts = [d.content or "" for d in documents]
        if answer in ("yes", "no"):
            contradicted = any(self.contra in t for t in texts)
            return math.log(0.8 if (answer == "no") == contradicted else 0.2)
        if not documents:
            return self.closed_book
        return -0.05 if any(self.marker in t for t in texts) else -2.0

    def to_dict(self) -> dict:
        return default_to_dict(
            self, marker=self.marker, closed_book=self.closed_book, contra=self.contra, fail=self.fail
        )

    @classmethod
    def from_dict(cls, data: dict) -> "FakeScorer":
        return default_from_dict(cls, data)


def dark_knight_pool():
    """Reviews first (a relevance ranker's order under the trap), then the cast list, then the rest."""
    return dk.documents()


def make(**kwargs):
    kwargs.setdefault("support_scorer", FakeScorer())
    kwargs.setdefault("chat_generator", FakeGenerator())
    return EvidenceSetSelector(**kwargs)


class TestDarkKnight:
    def test_keeps_the_cast_passage_alone(self):
        docs = dark_knight_pool()
        before = copy.deepcopy(docs)
        sel = make()
        out = sel.run(query=dk.QUESTION, documents=docs)
        assert [d.id for d in out["documents"]] == ["cast"]
        assert out["answer"] == "Christian Bale"
        trace = out["trace"]
        assert trace["steps"][0]["chosen"] == "cast" and trace["kept"] == ["cast"]
        assert not any(i.startswith("review") for i in trace["kept"])
        assert trace["pruned"] and set(trace["pruned"]) == set(trace["forward"]) - {"cast"}
        assert trace["reached"] and trace["stop"] == "delta" and out["degradations"] == []
        assert trace["necessity"] == {"cast": 1.0}
        assert trace["deletion_effects"]["cast"] > 0.5
        assert len(trace["qualities"]) == len(trace["steps"]) == len(trace["forward"])
        # no review names the answer: F̂'s bound (p_entail = 1) cannot beat the cast list's, unscored
        assert set(trace["steps"][0]["utilities"]) == {"cast"}
        # the kept passage is a copy carrying its necessity; the inputs are untouched
        kept = out["documents"][0]
        assert kept.meta[NECESSITY_KEY] == 1.0 and kept.meta[RANK_KEY] == 0 and DELETION_KEY in kept.meta
        assert docs == before and NECESSITY_KEY not in docs[4].meta

    def test_drafts_once_from_the_top_passages(self):
        gen = FakeGenerator()
        make(chat_generator=gen, draft_top_k=5).run(query=dk.QUESTION, documents=dark_knight_pool())
        assert len(gen.prompts) == 1
        assert dk.CAST in gen.prompts[0] and dk.INTERVIEW not in gen.prompts[0]  # 5th in, 6th out

    def test_a_given_answer_needs_no_generator(self):
        scorer = FakeScorer()
        sel = EvidenceSetSelector(support_scorer=scorer)
        out = sel.run(query=dk.QUESTION, documents=dark_knight_pool(), answer="Christian Bale")
        assert [d.id for d in out["documents"]] == ["cast"] and out["answer"] == "Christian Bale"
        assert all(a == "Christian Bale" for _, a, _ in scorer.calls)

    def test_scoring_count_is_reported_and_memoised(self):
        scorer = FakeScorer()
        out = make(support_scorer=scorer).run(query=dk.QUESTION, documents=dark_knight_pool())
        sets = [docs for _, _, docs in scorer.calls]
        assert len(sets) == len(set(sets)) == out["trace"]["scorer_calls"] == out["trace"]["quality_calls"]

    def test_replacement_effects_use_a_similar_outside_passage(self):
        out = make(replacement=True).run(query=dk.QUESTION, documents=dark_knight_pool())
        trace = out["trace"]
        neg = trace["replacements"]["cast"]
        assert neg != "cast" and neg not in trace["kept"]
        assert trace["replacement_effects"]["cast"] is not None
        fused = trace["fused_effects"]["cast"]
        assert fused == pytest.approx(
            0.7 * trace["deletion_effects"]["cast"] + 0.3 * trace["replacement_effects"]["cast"]
        )

    def test_without_replacement(self):
        out = make(replacement=False).run(query=dk.QUESTION, documents=dark_knight_pool())
        assert out["trace"]["replacements"] == {} and out["trace"]["replacement_effects"] == {"cast": None}


class TestQualityTerms:
    def test_trace_values_are_the_quality_formula(self):
        from haystack_cfrag.cer.math.quality import quality_score

        docs = dark_knight_pool()
        trace = make(skip_decided=False).run(query=dk.QUESTION, documents=docs)["trace"]
        assert set(trace["steps"][0]["utilities"]) == {d.id for d in docs}
        empty = quality_score(math.exp(-3.0), 0.0, 0.0, 0)  # closed book: no key token covered
        cast = quality_score(math.exp(-0.05), 1.0, 0.0, 1)
        review = quality_score(math.exp(-2.0), 0.0, 0.0, 1)
        assert trace["initial_quality"] == pytest.approx(empty)
        assert trace["qualities"][0] == pytest.approx(cast)
        words = {d.id: len(d.content.split()) for d in docs}
        utilities = trace["steps"][0]["utilities"]
        assert utilities["cast"] == pytest.approx(cast - empty - 0.05 * words["cast"] / 1000)
        assert utilities["review-0"] == pytest.approx(review - empty - 0.05 * words["review-0"] / 1000)

    def test_complementary_passages_are_both_kept_and_share_necessity(self):
        docs = [
            Document(id="first", content="The actor's first name is Christian."),
            Document(id="noise", content="Gotham City is fictional."),
            Document(id="last", content="His family name is Bale."),
        ]
        # the reader supports the full name only with both halves; coverage rises with each
        scorer = FakeScorer(marker="\x00")  # never matched: support stays low …

        def score(query, answer, documents):
            scorer.calls.append((query, answer, tuple(d.id for d in documents)))
            ids = {d.id for d in documents}
            return -0.05 if {"first", "last"} <= ids else -1.5

        scorer.score = score
        out = make(support_scorer=scorer).run(query="Who?", documents=docs, answer="Christian Bale")
        assert {d.id for d in out["documents"]} == {"first", "last"}
        nec = out["trace"]["necessity"]
        assert sum(nec.values()) == pytest.approx(1.0) and all(v > 0 for v in nec.values())

    def test_contradiction_lowers_quality_and_costs_two_scorings_per_set(self):
        docs = [Document(id="cast", content=dk.CAST + " The Joker is Ledger.")]
        off = make().run(query=dk.QUESTION, documents=docs)
        scorer = FakeScorer()
        on = make(support_scorer=scorer, contradiction="yes_no").run(query=dk.QUESTION, documents=docs)
        assert on["trace"]["quality"] < off["trace"]["quality"]
        assert on["trace"]["scorer_calls"] == 3 * on["trace"]["quality_calls"]
        assert {a for _, a, _ in scorer.calls} == {"Christian Bale", "yes", "no"}

    def test_pmi_entailment_with_a_reader_that_knows_the_answer_does_not_reach_theta(self):
        scorer = FakeScorer(closed_book=-0.05)  # the evidence adds nothing the reader did not know
        out = make(support_scorer=scorer, entailment="pmi").run(
            query=dk.QUESTION, documents=dark_knight_pool()
        )
        assert not out["trace"]["reached"] and out["documents"]
        assert any(d["stage"] == "cer_search" and "not reached" in d["reason"] for d in out["degradations"])
        support = make(support_scorer=FakeScorer(closed_book=-0.05)).run(
            query=dk.QUESTION, documents=dark_knight_pool()
        )
        assert support["trace"]["reached"]  # the absolute support still finds the cast list

    def test_k_max_bounds_the_pool(self):
        out = make(k_max=3).run(query=dk.QUESTION, documents=dark_knight_pool())
        assert out["trace"]["pool"] == ["review-0", "review-1", "review-2"]
        assert len(out["documents"]) <= 3


class TestFailures:
    def test_empty_documents_make_no_call(self):
        scorer, gen = FakeScorer(), FakeGenerator()
        out = make(support_scorer=scorer, chat_generator=gen).run(query=dk.QUESTION, documents=[])
        assert out["documents"] == [] and out["degradations"] == []
        assert scorer.calls == [] and gen.prompts == []

    def test_draft_failure_keeps_the_top_passages(self):
        scorer = FakeScorer()
        out = make(support_scorer=scorer, chat_generator=FakeGenerator(fail=True), draft_top_k=2).run(
            query=dk.QUESTION, documents=dark_knight_pool()
        )
        assert [d.id for d in out["documents"]] == ["review-0", "review-1"]
        assert out["degradations"][0]["stage"] == "cer_draft" and scorer.calls == []
        assert out["trace"]["fallback"]

    def test_empty_draft_degrades(self):
        out = make(chat_generator=FakeGenerator(reply="")).run(
            query=dk.QUESTION, documents=dark_knight_pool()
        )
        assert "empty reply" in out["degradations"][0]["reason"] and out["answer"] == ""

    def test_scorer_failure_keeps_the_top_passages(self):
        out = make(support_scorer=FakeScorer(fail=True)).run(query=dk.QUESTION, documents=dark_knight_pool())
        assert len(out["documents"]) == 5 and out["degradations"][0]["stage"] == "cer_search"
        assert out["answer"] == "Christian Bale"

    def test_raise_on_failure(self):
        with pytest.raises(RuntimeError, match="answer draft failed"):
            make(chat_generator=FakeGenerator(fail=True), raise_on_failure=True).run(
                query=dk.QUESTION, documents=dark_knight_pool()
            )
        with pytest.raises(RuntimeError, match="support scoring failed"):
            make(support_scorer=FakeScorer(fail=True), raise_on_failure=True).run(
                query=dk.QUESTION, documents=dark_knight_pool()
            )

    @pytest.mark.parametrize(
        "kwargs, name",
        [
            ({"theta": 0.0}, "theta"),
            ({"epsilon": 0.9}, "epsilon"),
            ({"k_max": 0}, "k_max"),
            ({"weights": (0.4, 0.3)}, "weights"),
            ({"draft_top_k": 0}, "draft_top_k"),
            ({"entailment": "nli"}, "entailment"),
            ({"contradiction": "nli"}, "contradiction"),
            ({"pmi_scale": 0.0}, "pmi_scale"),
            ({"min_size": -1}, "min_size"),
            ({"support_scorer": object()}, "support_scorer"),
        ],
    )
    def test_invalid_parameters(self, kwargs, name):
        with pytest.raises(ValueError, match=f"'{name}'"):
            make(**kwargs)

    def test_invalid_inputs(self):
        sel = make()
        with pytest.raises(ValueError, match="'query'"):
            sel.run(query="  ", documents=[])
        with pytest.raises(ValueError, match="'documents'"):
            sel.run(query="q", documents=["text"])
        with pytest.raises(ValueError, match="'answer'"):
            sel.run(query="q", documents=[], answer=" ")
        with pytest.raises(ValueError, match="without a chat_generator"):
            EvidenceSetSelector(support_scorer=FakeScorer()).run(query="q", documents=[])


class SeededScorer:
    """A counting fake reader: a log-probability per (question, answer, ordered passages), seeded."""

    def __init__(self, seed: int) -> None:
        self.seed, self.values, self.calls = seed, {}, 0

    def score(self, query, answer, documents):
        self.calls += 1
        key = (query, answer, tuple(d.id for d in documents))
        if key not in self.values:
            self.values[key] = -random.Random(f"{self.seed}|{key}").choice([0.01, 0.05, 0.3, 1.0, 3.0])
        return self.values[key]


SELECTION = ("pool", "kept", "forward", "pruned", "cut", "quality", "reached", "stop", "qualities",
             "initial_quality", "necessity", "deletion_effects", "fused_effects")


class TestSkipDecided:
    """Scorings whose outcome F̂'s free upper bound decides are skipped: same selection, fewer scorings."""

    @settings(max_examples=150, deadline=None)
    @given(
        seed=st.integers(0, 10**6),
        n=st.integers(1, 6),
        theta=st.sampled_from([0.6, 0.75, 0.85]),
        answer=st.sampled_from(["Christian Bale", "Gotham", "yes"]),
        contradiction=st.sampled_from(["off", "yes_no"]),
        entailment=st.sampled_from(["support", "pmi"]),
    )
    def test_same_selection_as_scoring_everything(self, seed, n, theta, answer, contradiction, entailment):
        rng = random.Random(seed)
        words = ["Christian", "Bale", "Gotham", "Joker", "film", "actor"]
        docs = [Document(id=f"d{i}", content=" ".join(rng.choices(words, k=rng.randint(1, 6))))
                for i in range(n)]
        outs, costs = [], []
        for skip in (False, True):
            scorer = SeededScorer(seed)
            sel = make(support_scorer=scorer, theta=theta, contradiction=contradiction,
                       entailment=entailment, skip_decided=skip)
            outs.append(sel.run(query="Who?", documents=docs, answer=answer))
            costs.append(scorer.calls)
        old, new = (o["trace"] for o in outs)
        assert {k: new[k] for k in SELECTION} == {k: old[k] for k in SELECTION}
        assert [d.id for d in outs[1]["documents"]] == [d.id for d in outs[0]["documents"]]
        assert costs[1] == new["scorer_calls"] <= costs[0] == old["scorer_calls"]

    def test_the_dark_knight_costs_fewer_scorings(self):
        counts = {}
        for skip in (False, True):
            scorer = FakeScorer()
            sel = make(support_scorer=scorer, skip_decided=skip)
            out = sel.run(query=dk.QUESTION, documents=dark_knight_pool())
            counts[skip] = (len(scorer.calls), [d.id for d in out["documents"]])
        assert counts[True][1] == counts[False][1] == ["cast"]
        assert counts[True][0] < counts[False][0]


class TestSerialisationAndAsync:
    def test_roundtrip(self):
        sel = make(theta=0.7, weights=[0.5, 0.3, 0.1, 0.1], contradiction="yes_no", entailment="pmi",
                   skip_decided=False, replacement=True)
        data = sel.to_dict()
        back = EvidenceSetSelector.from_dict(data)
        assert back.to_dict() == data and back.skip_decided is False and back.replacement is True
        assert isinstance(back.support_scorer, FakeScorer) and isinstance(back.chat_generator, FakeGenerator)
        assert back.settings == CerSettings(theta=0.7, weights=(0.5, 0.3, 0.1, 0.1))

    def test_roundtrip_without_generator(self):
        sel = EvidenceSetSelector(support_scorer=FakeScorer())
        assert EvidenceSetSelector.from_dict(sel.to_dict()).chat_generator is None

    def test_async_matches_sync(self):
        sync = make().run(query=dk.QUESTION, documents=dark_knight_pool())
        out = asyncio.run(make().run_async(query=dk.QUESTION, documents=dark_knight_pool()))
        assert [d.id for d in out["documents"]] == [d.id for d in sync["documents"]]
        drop = {"seconds"}
        assert {k: v for k, v in out["trace"].items() if k not in drop} == {
            k: v for k, v in sync["trace"].items() if k not in drop
        }

    def test_close_reaches_the_injected_components(self):
        closed = []

        class Closing(FakeScorer):
            def close(self):
                closed.append("scorer")

        make(support_scorer=Closing()).close()
        assert closed == ["scorer"]


def test_docstring_example_runs(capsys):
    import re

    from haystack.components.generators import chat

    if not hasattr(chat, "MockChatGenerator"):
        pytest.skip("MockChatGenerator exists only in Haystack 3")

    blocks = re.findall(r"```python\n(.*?)```", EvidenceSetSelector.__doc__, re.DOTALL)
    code = "\n".join(line[4:] if line.startswith("    ") else line for line in blocks[0].splitlines())
    exec(compile(code, "<EvidenceSetSelector docstring>", "exec"), {})
    printed = capsys.readouterr().out
    assert "Christian Bale stars" in printed and "Ledger" not in printed


def test_in_a_pipeline_before_a_prompt_and_generator_and_through_yaml():
    from haystack import Pipeline
    from haystack.components.builders import ChatPromptBuilder
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    store = InMemoryDocumentStore()
    store.write_documents(dk.documents())
    reader = FakeGenerator(reply="Christian Bale")
    template = [ChatMessage.from_user("{% for d in documents %}{{ d.content }}\n{% endfor %}Q: {{ query }}")]
    pipe = Pipeline()
    pipe.add_component("retriever", InMemoryBM25Retriever(document_store=store, top_k=10))
    pipe.add_component("selector", make())
    pipe.add_component(
        "prompt", ChatPromptBuilder(template=template, required_variables=["documents", "query"])
    )
    pipe.add_component("reader", reader)
    pipe.connect("retriever.documents", "selector.documents")
    pipe.connect("selector.documents", "prompt.documents")
    pipe.connect("prompt.prompt", "reader.messages")
    again = pipeline_from_dict(yaml.safe_load(pipe.dumps()), allowed_modules=["tests"])  # Haystack 2.x and 3
    for p in (pipe, again):
        q = dk.QUESTION
        out = p.run(
            {"retriever": {"query": q}, "selector": {"query": q}, "prompt": {"query": q}},
            include_outputs_from={"selector"},
        )
        assert [d.id for d in out["selector"]["documents"]] == ["cast"]
    assert dk.CAST in reader.prompts[-1] and dk.REVIEWS[0] not in reader.prompts[-1]


class TestMaxRounds:
    """`max_rounds` (issue 61): the forward phase stops after so many rounds; a set short of θ is then the
    whole pool, most useful first by the last round's scores, with nothing more scored."""

    def test_a_set_that_reached_theta_is_the_searchs(self):
        docs = dark_knight_pool()
        whole, capped = FakeScorer(), FakeScorer()
        out_whole = make(support_scorer=whole).run(query=dk.QUESTION, documents=docs, answer="Christian Bale")
        out = make(support_scorer=capped, max_rounds=1).run(query=dk.QUESTION, documents=docs,
                                                            answer="Christian Bale")
        assert [d.id for d in out["documents"]] == [d.id for d in out_whole["documents"]] == ["cast"]
        assert out["trace"]["stop"] == "rounds" and out["trace"]["reached"]
        assert len(capped.calls) < len(whole.calls)

    def test_short_of_theta_the_whole_pool_by_the_rounds_scores(self):
        docs = dark_knight_pool()
        scorer = FakeScorer(marker="Gotham")  # the passages naming Gotham support "Adam West" a little more
        out = make(support_scorer=scorer, max_rounds=1, skip_decided=False).run(
            query=dk.QUESTION, documents=docs, answer="Adam West")
        trace = out["trace"]
        pool = trace["pool"]
        utilities = trace["steps"][0]["utilities"]
        assert len(trace["steps"]) == 1 and trace["stop"] == "rounds" and not trace["reached"]
        assert sorted(trace["kept"]) == sorted(pool)  # the whole pool, nothing pruned
        ranked = sorted(pool, key=lambda i: (-utilities[i], pool.index(i)))
        assert trace["kept"] == ranked and [d.id for d in out["documents"]] == ranked
        assert trace["unscored"] == ranked[1:]
        assert {ids for _, _, ids in scorer.calls if ids} == {(i,) for i in pool}  # singletons: one round
        assert all(d.meta[NECESSITY_KEY] is None for d in out["documents"])  # effects not measured
        assert any("θ was not reached" in d["reason"] for d in out["degradations"])

    def test_max_rounds_is_checked_and_round_trips(self):
        with pytest.raises(ValueError, match="'max_rounds'"):
            make(max_rounds=0)
        assert EvidenceSetSelector.from_dict(make(max_rounds=2).to_dict()).max_rounds == 2
        assert make().to_dict()["init_parameters"]["max_rounds"] is None
