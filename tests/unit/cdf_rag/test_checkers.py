"""HallucinationChecker and CausalConsistencyChecker with inline fakes (no models)."""

import asyncio
import copy
import re

import pytest
from haystack import Document, component, default_from_dict, default_to_dict
from haystack.dataclasses import ChatMessage

from haystack_cfrag.cdf_rag.components import CausalConsistencyChecker, HallucinationChecker
from haystack_cfrag.cdf_rag.math.claims import REWRITE_MODES
from haystack_cfrag.cdf_rag.prompts import REANSWER_PROMPT, REGENERATE_PROMPT, REWRITE_PROMPT, REWRITE_PROMPTS
from tests.fakes import FixedReplyGenerator as ScriptedGenerator

Q = "Who is the lead actor in The Dark Knight?"
DOCS = [Document(content="Christian Bale stars as Bruce Wayne."), Document(content="Heath Ledger plays the Joker.")]




@component
class TableScorer:
    """Support per claim from a table (default `otherwise`); raises when `fail`, or returns `bad` when set."""

    def __init__(self, table: dict | None = None, otherwise: float = -4.0, fail: bool = False, bad=None) -> None:
        self.table = dict(table or {})
        self.otherwise = otherwise
        self.fail = fail
        self.bad = bad
        self.calls: list[tuple[str, str, int]] = []

    @component.output_types(score=float)
    def run(self, query: str, answer: str, documents: list[Document]) -> dict:
        return {"score": self.score(query, answer, documents)}

    def score(self, query, answer, documents):
        self.calls.append((query, answer, len(documents)))
        if self.fail:
            raise RuntimeError("scorer down")
        if self.bad is not None:
            return self.bad
        return self.table.get(answer, self.otherwise)

    def to_dict(self) -> dict:
        return default_to_dict(self, table=self.table, otherwise=self.otherwise, fail=self.fail)

    @classmethod
    def from_dict(cls, data: dict) -> "TableScorer":
        return default_from_dict(cls, data)


def agree(make, **inputs):
    """run and run_async on two fresh components agree."""
    sync = make().run(**inputs)
    async_ = asyncio.run(make().run_async(**inputs))
    assert sync == async_
    return sync


# ---------------------------------------------------------------- HallucinationChecker
TWO_CLAIMS = "Christian Bale plays Batman. He won an Oscar for it."


def hall(table, reply="Answer: Christian Bale plays Batman.", fail=False, **kwargs):
    return HallucinationChecker(support_scorer=TableScorer(table), chat_generator=ScriptedGenerator(reply, fail),
                                **kwargs)


def test_s_hall_at_delta_keeps_the_answer_and_above_rewrites_it():
    table = {"Christian Bale plays Batman.": -0.2, "He won an Oscar for it.": -3.0}  # S_hall = 0.5
    keep = hall(table, delta=0.5).run(query=Q, documents=DOCS, answer=TWO_CLAIMS)
    assert keep["s_hall"] == 0.5 and keep["decision"] == "keep" and not keep["rewritten"]
    assert keep["answer"] == TWO_CLAIMS and keep["degradations"] == []
    assert [c["supported"] for c in keep["claims"]] == [True, False]
    assert keep["trace"]["claim_supports"] == [-0.2, -3.0]  # kept in the records: what calibrates the thresholds
    checker = hall(table, delta=0.49)
    out = checker.run(query=Q, documents=DOCS, answer=TWO_CLAIMS)
    assert out["decision"] == "rewrite" and out["rewritten"] and out["answer"] == "Christian Bale plays Batman."
    assert out["replies"][0].text == out["answer"]
    [prompt] = checker.chat_generator.prompts
    assert prompt.startswith(REWRITE_PROMPT.split("{evidence}")[0])
    # only the unsupported
    assert "- He won an Oscar for it." in prompt and "- Christian Bale plays Batman." not in prompt
    assert "Christian Bale stars as Bruce Wayne." in prompt and Q in prompt


def test_reanswer_mode_asks_for_a_fresh_answer_naming_the_flagged_one():
    """A one-claim answer flagged: "correct or remove" asks the reader to mend its only statement;
    "reanswer" asks the question again over the same evidence, the flagged answer named."""
    checker = hall({"Heath Ledger": -3.0}, reply="Answer: Christian Bale", rewrite_mode="reanswer")
    out = checker.run(query=Q, documents=DOCS, answer="Heath Ledger")
    assert out["decision"] == "rewrite" and out["rewritten"] and out["answer"] == "Christian Bale"
    assert out["trace"]["rewrite_mode"] == "reanswer" and out["trace"]["original_answer"] == "Heath Ledger"
    [prompt] = checker.chat_generator.prompts
    assert prompt.startswith(REANSWER_PROMPT.split("{evidence}")[0]) and "Answer to rewrite" not in prompt
    assert '"Heath Ledger"' in prompt and "- Heath Ledger" in prompt and "[2] Heath Ledger plays the Joker." in prompt
    # the default stays the paper's rewrite
    default = hall({"Heath Ledger": -3.0})
    default.run(query=Q, documents=DOCS, answer="Heath Ledger")
    assert default.chat_generator.prompts[0].startswith(REWRITE_PROMPT.split("{evidence}")[0])
    assert default.to_dict()["init_parameters"]["rewrite_mode"] == "correct"


def test_every_rewrite_mode_has_its_prompt_and_a_custom_prompt_is_traced_as_such():
    assert set(REWRITE_PROMPTS) == set(REWRITE_MODES)
    checker = hall({}, prompt_template="{query} {evidence} {answer} {unsupported}", rewrite_mode="reanswer")
    out = checker.run(query=Q, documents=DOCS, answer="Heath Ledger")
    assert out["trace"]["rewrite_mode"] == "custom" and checker.chat_generator.prompts[0].startswith(Q)


def test_each_claim_is_scored_with_the_query_and_all_documents():
    checker = hall({})
    checker.run(query=Q, documents=DOCS, answer=TWO_CLAIMS)
    assert checker.support_scorer.calls == [(Q, "Christian Bale plays Batman.", 2), (Q, "He won an Oscar for it.", 2)]


def test_a_supported_short_answer_is_kept_without_a_call():
    checker = hall({"Christian Bale": -0.1})
    out = checker.run(query=Q, documents=DOCS, answer="Christian Bale")
    assert out["s_hall"] == 0.0 and out["decision"] == "keep" and checker.chat_generator.prompts == []


def test_the_answer_can_come_from_any_generators_replies():
    table = {"Heath Ledger": -3.0}
    for replies in ([ChatMessage.from_assistant("Answer: Heath Ledger\nRationale: he is famous")], ["Heath Ledger"]):
        out = hall(table).run(query=Q, documents=DOCS, replies=replies)
        assert out["trace"]["original_answer"] == "Heath Ledger" and out["decision"] == "rewrite"
    with pytest.raises(ValueError, match="give 'answer' or 'replies'"):
        hall(table).run(query=Q, documents=DOCS)


def test_an_empty_answer_is_undefined_and_decides_nothing():
    checker = hall({})
    out = checker.run(query=Q, documents=DOCS, answer="  ")
    assert out["s_hall"] is None and out["decision"] == "undefined" and out["claims"] == []
    assert checker.support_scorer.calls == [] and checker.chat_generator.prompts == []


@pytest.mark.parametrize(("fail", "bad"), [(True, None), (False, float("nan")), (False, "high")])
def test_a_failing_scorer_leaves_the_answer_and_says_so(fail, bad):
    def make():
        return HallucinationChecker(support_scorer=TableScorer(fail=fail, bad=bad), chat_generator=ScriptedGenerator())

    out = agree(make, query=Q, documents=DOCS, answer="Heath Ledger")
    assert out["answer"] == "Heath Ledger" and out["decision"] == "scorer_failed" and out["s_hall"] is None
    assert not out["rewritten"] and out["degradations"][0]["reason"] == "scorer failed"
    assert out["trace"]["claim_supports"] is None  # no score, not a zero
    with pytest.raises(RuntimeError, match="the support scorer failed"):
        HallucinationChecker(support_scorer=TableScorer(fail=True), raise_on_failure=True).run(
            query=Q, documents=DOCS, answer="Heath Ledger")


@pytest.mark.parametrize(("reply", "fail", "reason"), [("x", True, "generator failed"), ("", False, "empty reply")])
def test_a_failing_rewrite_leaves_the_answer_and_says_so(reply, fail, reason):
    out = hall({}, reply=reply, fail=fail).run(query=Q, documents=DOCS, answer="Heath Ledger")
    assert out["decision"] == "rewrite" and not out["rewritten"] and out["answer"] == "Heath Ledger"
    assert out["degradations"] == [{"stage": "rewrite", "reason": reason, **({"error": "RuntimeError('generator "
                                                                                      "down')"} if fail else {})}]


def test_without_a_generator_the_checker_only_reports():
    out = HallucinationChecker(support_scorer=TableScorer()).run(query=Q, documents=DOCS, answer="Heath Ledger")
    assert out["decision"] == "rewrite" and not out["rewritten"] and out["answer"] == "Heath Ledger"
    assert "check only" in out["trace"]["rewrite_note"]


@pytest.mark.parametrize("mode", REWRITE_MODES)
def test_hallucination_checker_run_equals_run_async_and_round_trips(mode):
    table = {"Christian Bale plays Batman.": -0.2}
    out = agree(lambda: hall(table, delta=0.2, rewrite_mode=mode), query=Q, documents=DOCS, answer=TWO_CLAIMS)
    assert out["rewritten"] and out["trace"]["rewrite_mode"] == mode
    checker = hall(table, delta=0.3, support_threshold=-2.0, rewrite_mode="reanswer", max_claims=5,
                   short_answer_words=4, max_evidence_chars=100, generation_kwargs={"max_tokens": 32}, timeout_s=3.0,
                   prompt_template="{query} {evidence} {answer} {unsupported}", answer_prefix="Answer:")
    data = checker.to_dict()
    again = HallucinationChecker.from_dict(copy.deepcopy(data))
    assert again.to_dict() == data and again.support_scorer.table == table
    assert again.answer_prefix == "Answer:"


def test_hallucination_checker_does_not_mutate_its_inputs():
    docs = copy.deepcopy(DOCS)
    replies = [ChatMessage.from_assistant(TWO_CLAIMS)]
    hall({}).run(query=Q, documents=docs, replies=replies)
    assert docs == DOCS and replies[0].text == TWO_CLAIMS


class ReplyTableScorer(TableScorer):
    """A TableScorer that can also read a claim as the reader's reply to the answer prompt."""

    def __init__(self, table: dict | None = None, reply_table: dict | None = None, **kwargs) -> None:
        super().__init__(table, **kwargs)
        self.reply_table = dict(reply_table or {})
        self.reply_calls: list[tuple[list, str, str]] = []

    def score_reply(self, messages, answer, reply_prefix=""):
        self.reply_calls.append((messages, answer, reply_prefix))
        if self.fail:
            raise RuntimeError("scorer down")
        return self.reply_table.get(answer, self.otherwise)


ANSWER_PROMPT = [ChatMessage.from_user(f"Documents: ... Question: {Q}\nReply in this format:\nAnswer: <answer>")]


def test_given_the_answer_prompt_each_claim_is_read_as_the_readers_reply_to_it():
    scorer = ReplyTableScorer({"Heath Ledger": -0.1}, {" Heath Ledger": -3.0})
    checker = HallucinationChecker(support_scorer=scorer, chat_generator=ScriptedGenerator("Answer: Christian Bale"),
                                   answer_prefix="Answer:")
    out = checker.run(query=Q, documents=DOCS, answer="Heath Ledger", prompt=ANSWER_PROMPT)
    # the support read under the answer prompt (-3.0) decides, not the support prompt's (-0.1, never asked)
    assert scorer.reply_calls == [(ANSWER_PROMPT, " Heath Ledger", "Answer:")] and scorer.calls == []
    assert out["trace"]["claim_supports"] == [-3.0] and out["trace"]["scored_under"] == "answer prompt"
    assert out["decision"] == "rewrite" and out["answer"] == "Christian Bale"
    sync = out
    again = asyncio.run(HallucinationChecker(support_scorer=ReplyTableScorer({}, {" Heath Ledger": -3.0}),
                                             chat_generator=ScriptedGenerator("Answer: Christian Bale"),
                                             answer_prefix="Answer:")
                        .run_async(query=Q, documents=DOCS, answer="Heath Ledger", prompt=ANSWER_PROMPT))
    assert again == sync


def test_without_the_answer_prompt_or_a_reply_reader_claims_are_scored_under_the_support_prompt():
    scorer = ReplyTableScorer({"Heath Ledger": -0.1}, {" Heath Ledger": -3.0})
    out = HallucinationChecker(support_scorer=scorer, answer_prefix="Answer:").run(
        query=Q, documents=DOCS, answer="Heath Ledger")
    assert scorer.calls == [(Q, "Heath Ledger", 2)] and scorer.reply_calls == []
    assert out["trace"]["scored_under"] == "support prompt" and out["decision"] == "keep"
    plain = TableScorer({"Heath Ledger": -0.1})  # no score_reply: the prompt cannot be used
    out = HallucinationChecker(support_scorer=plain).run(query=Q, documents=DOCS, answer="Heath Ledger",
                                                         prompt=ANSWER_PROMPT)
    assert plain.calls == [(Q, "Heath Ledger", 2)] and out["trace"]["scored_under"] == "support prompt"


def test_a_failing_reply_reading_leaves_the_answer_and_says_so():
    scorer = ReplyTableScorer(fail=True)
    out = HallucinationChecker(support_scorer=scorer, answer_prefix="Answer:").run(
        query=Q, documents=DOCS, answer="Heath Ledger", prompt=ANSWER_PROMPT)
    assert out["decision"] == "scorer_failed" and out["answer"] == "Heath Ledger"


@pytest.mark.parametrize("prompt", [[], "Answer the question", [ChatMessage.from_user("q"), "not a message"]])
def test_a_bad_answer_prompt_is_refused_in_one_line(prompt):
    with pytest.raises(ValueError, match="HallucinationChecker: 'prompt' must be a non-empty list of chat messages"):
        HallucinationChecker(support_scorer=ReplyTableScorer()).run(query=Q, documents=DOCS, answer="x", prompt=prompt)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"answer_prefix": 3}, "'answer_prefix' must be a string of at most 200"),
        ({"answer_prefix": "x" * 201}, "'answer_prefix' must be a string of at most 200"),
        ({"support_scorer": object()}, "'support_scorer' must have a score"),
        ({"delta": 1.5}, "'delta'"),
        ({"support_threshold": 0.5}, "'support_threshold'"),
        ({"rewrite_mode": "redo"}, "'rewrite_mode' must be one of 'correct', 'reanswer'"),
        ({"max_claims": 0}, "'max_claims'"),
        ({"prompt_template": "{query} {answer}"}, r"lacks the placeholder \{evidence\}"),
    ],
)
def test_hallucination_checker_validation(kwargs, message):
    with pytest.raises(ValueError, match=message):
        HallucinationChecker(**{"support_scorer": TableScorer(), **kwargs})


# ---------------------------------------------------------------- CausalConsistencyChecker
EDGES = [("heavy rain", "flood"), ("flood", "crop loss")]
FLOOD_Q = "Why were the crops lost?"


def causal(reply="Answer: Heavy rain caused the flood, and the flood caused crop loss.", fail=False, **kwargs):
    return CausalConsistencyChecker(chat_generator=ScriptedGenerator(reply, fail), **kwargs)


def test_regeneration_at_tau_is_not_triggered_and_below_it_is():
    answer = "Heavy rain caused the flood. Crop loss caused the flood."  # S_causal = 0.5
    keep = causal(tau=0.5).run(query=FLOOD_Q, causal_edges=EDGES, answer=answer)
    assert keep["s_causal"] == 0.5 and keep["decision"] == "keep" and not keep["regenerated"]
    checker = causal(tau=0.51)
    out = checker.run(query=FLOOD_Q, causal_edges=EDGES, answer=answer, documents=DOCS)
    assert out["decision"] == "regenerate" and out["regenerated"]
    assert out["answer"] == "Heavy rain caused the flood, and the flood caused crop loss."
    assert out["trace"]["s_causal_after"] == 1.0
    [prompt] = checker.chat_generator.prompts
    assert "- heavy rain -> flood\n- flood -> crop loss" in prompt and FLOOD_Q in prompt
    assert prompt.startswith(REGENERATE_PROMPT.split("{evidence}")[0])


def test_verdicts_are_reported_per_edge():
    out = causal().run(query=FLOOD_Q, causal_edges=EDGES + [("wind", "fire")],
                       answer="Heavy rain caused the flood. Crop loss caused the flood.", )
    assert [v["verdict"] for v in out["verdicts"]] == ["respected", "violated", "neutral"]
    assert (out["trace"]["respected"], out["trace"]["violated"]) == (1, 1)


def test_an_answer_that_speaks_to_no_edge_is_undefined_and_not_regenerated():
    checker = causal(tau=1.0)
    out = checker.run(query=Q, causal_edges=EDGES, answer="Christian Bale")
    assert out["s_causal"] is None and out["decision"] == "undefined" and checker.chat_generator.prompts == []


def test_a_short_answer_is_judged_through_the_question_unless_disabled():
    edges = [("sulfur dioxide", "acid rain")]
    on = causal().run(query="What causes acid rain?", causal_edges=edges, answer="Sulfur dioxide")
    off = causal(use_question=False).run(query="What causes acid rain?", causal_edges=edges, answer="Sulfur dioxide")
    assert on["s_causal"] == 1.0 and off["s_causal"] is None


def test_edges_in_every_shape_and_bad_ones_counted():
    edges = [{"cause": "heavy rain", "effect": "flood"}, {"source": "flood", "target": "crop loss"},
             "wind -> fire", ("drought", "famine", "causes"), 7, {"cause": ""}, "no arrow"]
    out = causal().run(query=FLOOD_Q, causal_edges=edges, answer="Heavy rain caused the flood.")
    assert [(v["cause"], v["effect"]) for v in out["verdicts"]] == [
        ("heavy rain", "flood"), ("flood", "crop loss"), ("wind", "fire"), ("drought", "famine")]
    assert out["degradations"] == [{"stage": "causal_check", "reason": "edges not understood", "skipped": 3}]


@pytest.mark.parametrize(("reply", "fail", "reason"), [("x", True, "generator failed"), ("", False, "empty reply")])
def test_a_failing_regeneration_leaves_the_answer_and_says_so(reply, fail, reason):
    out = causal(reply=reply, fail=fail).run(query=FLOOD_Q, causal_edges=EDGES, answer="The flood caused heavy rain.")
    assert out["decision"] == "regenerate" and not out["regenerated"]
    assert out["answer"] == "The flood caused heavy rain." and out["degradations"][0]["reason"] == reason
    with pytest.raises(RuntimeError, match="the regeneration failed"):
        causal(fail=True, raise_on_failure=True).run(query=FLOOD_Q, causal_edges=EDGES,
                                                     answer="The flood caused heavy rain.")


@pytest.mark.parametrize("mode", ["run", "run_async"])
def test_an_empty_corrective_reply_raises_once_with_raise_on_failure(mode):
    checker = causal(reply="", raise_on_failure=True)
    run = getattr(checker, mode)
    with pytest.raises(RuntimeError) as info:
        out = run(query=FLOOD_Q, causal_edges=EDGES, answer="The flood caused heavy rain.")
        if mode == "run_async":
            asyncio.run(out)
    assert str(info.value) == "CausalConsistencyChecker: the regeneration failed: empty reply"
    checker = hall({"Heath Ledger": -4.0}, reply="", raise_on_failure=True)
    with pytest.raises(RuntimeError, match=r"^HallucinationChecker: the rewrite failed: empty reply$"):
        checker.run(query="Who is the lead actor in The Dark Knight?", answer="Heath Ledger", documents=[])


def test_causal_checker_run_equals_run_async_and_round_trips():
    out = agree(lambda: causal(), query=FLOOD_Q, causal_edges=EDGES, answer="The flood caused heavy rain.")
    assert out["regenerated"]
    checker = causal(tau=0.7, use_question=False, max_edges=10, max_evidence_chars=50, timeout_s=2.0,
                     generation_kwargs={"max_tokens": 16}, prompt_template="{query}|{evidence}|{causal_edges}")
    data = checker.to_dict()
    assert CausalConsistencyChecker.from_dict(copy.deepcopy(data)).to_dict() == data
    assert CausalConsistencyChecker.from_dict(CausalConsistencyChecker().to_dict()).chat_generator is None


def test_causal_checker_does_not_mutate_its_inputs_and_bounds_the_edges():
    edges = [list(e) for e in EDGES] * 3
    before = copy.deepcopy(edges)
    out = causal(max_edges=2).run(query=FLOOD_Q, causal_edges=edges, answer="Heavy rain caused the flood.")
    assert edges == before and len(out["verdicts"]) == 2
    assert {"stage": "causal_check", "reason": "too many edges", "kept": 2, "given": 6} in out["degradations"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"tau": -0.1}, "'tau'"), ({"max_edges": 0}, "'max_edges'"), ({"use_question": 1}, "'use_question'"),
     ({"prompt_template": "{query}"}, r"lacks the placeholder \{evidence\}")],
)
def test_causal_checker_validation(kwargs, message):
    with pytest.raises(ValueError, match=message):
        CausalConsistencyChecker(**kwargs)


@pytest.mark.parametrize("cls", [HallucinationChecker, CausalConsistencyChecker])
def test_the_docstring_examples_run(cls, capsys):
    try:
        from haystack.components.generators.chat import MockChatGenerator  # noqa: F401
    except ImportError:
        pytest.skip("MockChatGenerator exists only in Haystack 3")
    code = re.findall(r"```python\n(.*?)```", cls.__doc__, re.DOTALL)[0]
    code = "\n".join(line[4:] if line.startswith("    ") else line for line in code.splitlines())
    exec(compile(code, f"<{cls.__name__} docstring>", "exec"), {})
    printed = capsys.readouterr().out.split()
    assert printed[:2] in (["1.0", "rewrite"], ["0.0", "regenerate"])


def test_the_checkers_drop_in_after_a_generator_and_survive_yaml():
    import yaml
    from haystack import Pipeline

    from haystack_cfrag.pipelines.loading import pipeline_from_dict

    pipe = Pipeline()
    pipe.add_component("generator", ScriptedGenerator("Answer: Heath Ledger"))
    pipe.add_component("hallucination", hall({"Christian Bale": -0.1}))
    pipe.add_component("causal", causal())
    pipe.connect("generator.replies", "hallucination.replies")
    pipe.connect("hallucination.replies", "causal.replies")
    inputs = {"generator": {"messages": [ChatMessage.from_user(Q)]},
              "hallucination": {"query": Q, "documents": DOCS},
              "causal": {"query": Q, "causal_edges": EDGES, "documents": DOCS}}
    for p in (pipe, pipeline_from_dict(yaml.safe_load(pipe.dumps()), allowed_modules=["tests"])):
        out = p.run(inputs)
        assert out["hallucination"]["decision"] == "rewrite"
        assert out["causal"]["answer"] == "Christian Bale plays Batman."  # the rewrite, checked again
        assert out["causal"]["decision"] == "undefined"
