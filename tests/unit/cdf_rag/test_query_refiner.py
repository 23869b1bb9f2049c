"""QueryRefiner with a scripted fake chat generator (no models)."""

import asyncio
import copy

import pytest
from haystack import component, default_from_dict, default_to_dict
from haystack.dataclasses import ChatMessage

from haystack_cfrag.cdf_rag.components import QueryRefiner
from haystack_cfrag.cdf_rag.prompts import (
    CHOOSE_PROMPT,
    DECOMPOSE_PROMPT,
    EXPAND_PROMPT,
    PAPER_EXPAND_PROMPT,
    SIMPLIFY_PROMPT,
)

SHORT = "Who wrote Emma?"
MULTI = "Were the author of Emma and the author of Jane Eyre born in the same country?"
SUBS = "Who wrote the novel Emma?\nWho wrote the novel Jane Eyre?"


@component
class ScriptedGenerator:
    """Replies with `replies` in turn (the last one repeats); raises on the calls listed in `fail_on`."""

    def __init__(self, replies: list[str] | None = None, fail_on: list[int] | None = None) -> None:
        self.replies = list(replies or [""])
        self.fail_on = list(fail_on or [])
        self.prompts: list[str] = []
        self.generation_kwargs: list[dict | None] = []

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage], generation_kwargs: dict | None = None) -> dict:
        call = len(self.prompts)
        self.prompts.append(messages[0].text)
        self.generation_kwargs.append(generation_kwargs)
        if call in self.fail_on:
            raise RuntimeError("generator down")
        return {"replies": [ChatMessage.from_assistant(self.replies[min(call, len(self.replies) - 1)])]}

    def to_dict(self) -> dict:
        return default_to_dict(self, replies=self.replies, fail_on=self.fail_on)

    @classmethod
    def from_dict(cls, data: dict) -> "ScriptedGenerator":
        return default_from_dict(cls, data)


def both(refiner: QueryRefiner, fresh, **inputs) -> dict:
    """run and run_async on two fresh generators with the same script; asserts they agree."""
    refiner.chat_generator = fresh()
    sync = refiner.run(**inputs)
    refiner.chat_generator = fresh()
    async_ = asyncio.run(refiner.run_async(**inputs))
    assert sync == async_
    return sync


@pytest.mark.parametrize(
    ("action", "reply", "template", "refined"),
    [
        ("expand", "Expanded Query: Who wrote the 1815 novel Emma?", EXPAND_PROMPT, "Who wrote the 1815 novel Emma?"),
        ("simplify", "Simplified Query: Who wrote Emma?", SIMPLIFY_PROMPT, "Who wrote Emma?"),
    ],
)
def test_a_fixed_action_makes_one_call_with_its_prompt(action, reply, template, refined):
    gen = ScriptedGenerator([reply])
    out = QueryRefiner(chat_generator=gen, action=action).run(query=SHORT)
    assert out["refined_query"] == refined and out["queries"] == [refined]
    assert out["action"] == action and out["sub_queries"] == [] and out["degradations"] == []
    assert gen.prompts == [template.format(query=SHORT)]
    assert out["trace"]["chosen_by"] == "fixed" and out["trace"]["calls"] == 1


def test_decompose_outputs_the_sub_questions_as_queries():
    gen = ScriptedGenerator([SUBS])
    out = QueryRefiner(chat_generator=gen, action="decompose").run(query=MULTI)
    assert out["queries"] == out["sub_queries"] == ["Who wrote the novel Emma?", "Who wrote the novel Jane Eyre?"]
    assert out["refined_query"] == MULTI and out["action"] == "decompose"
    assert gen.prompts == [DECOMPOSE_PROMPT.format(query=MULTI)]


def test_none_makes_no_call_and_needs_no_generator():
    out = QueryRefiner(action="none").run(query=SHORT)
    assert out["refined_query"] == SHORT and out["queries"] == [SHORT] and out["action"] == "none"
    assert out["trace"]["calls"] == 0 and out["degradations"] == []
    gen = ScriptedGenerator(["x"])
    QueryRefiner(chat_generator=gen, action="expand").run(query=SHORT, action="none")
    assert gen.prompts == []


def test_auto_asks_the_reader_then_refines_with_its_choice():
    gen = ScriptedGenerator(["Action: decompose", SUBS])
    out = QueryRefiner(chat_generator=gen, action="auto").run(query=MULTI)
    assert gen.prompts == [CHOOSE_PROMPT.format(query=MULTI), DECOMPOSE_PROMPT.format(query=MULTI)]
    assert out["action"] == "decompose" and len(out["sub_queries"]) == 2
    trace = out["trace"]
    assert trace["chosen_by"] == "reader" and trace["reader_action"] == "decompose" and trace["calls"] == 2
    assert trace["rule_action"] == "decompose"  # the rule's choice is recorded beside the reader's


def test_auto_with_the_reader_choosing_none_makes_one_call():
    gen = ScriptedGenerator(["Action: none"])
    out = QueryRefiner(chat_generator=gen).run(query=MULTI)
    assert out["action"] == "none" and out["queries"] == [MULTI] and len(gen.prompts) == 1
    assert out["degradations"] == [] and not out["trace"]["fallback"]


def test_rule_uses_the_rules_action():
    gen = ScriptedGenerator(["Expanded Query: Who wrote the novel Emma in 1815?"])
    out = QueryRefiner(chat_generator=gen, action="rule").run(query=SHORT)
    assert out["trace"]["chosen_by"] == "rule" and out["trace"]["rule_action"] == "expand"
    assert out["action"] == "expand" and gen.prompts == [EXPAND_PROMPT.format(query=SHORT)]


# the embedded reader's reply to the paper's expansion prompt for "Which river flows through Baghdad?"
PARROT = ("Why is stress a public health concern in relation to socioeconomic status, mental health, "
          "and long-term disease risk?")


@pytest.mark.parametrize("template", [PAPER_EXPAND_PROMPT, EXPAND_PROMPT])
def test_a_reply_that_repeats_the_prompts_example_falls_back_and_says_so(template):
    refiner = QueryRefiner(chat_generator=ScriptedGenerator([PARROT]), action="expand",
                           prompt_templates={"expand": template})
    out = refiner.run(query="Which river flows through Baghdad?")
    assert out["action"] == "none" and out["queries"] == ["Which river flows through Baghdad?"]
    assert out["trace"]["fallback_reason"] == "the reply repeats the prompt's example"
    assert [d["reason"] for d in out["degradations"]] == ["the reply repeats the prompt's example"]


def test_the_examples_own_question_may_get_the_examples_expansion():
    expansion = ("Why is chronic stress considered a public health concern in relation to socioeconomic status, "
                 "mental health, and long-term disease risk?")
    out = QueryRefiner(chat_generator=ScriptedGenerator([expansion]), action="expand").run(
        query="Why is stress a public health concern?")
    assert out["action"] == "expand" and out["queries"] == [expansion]


def test_the_run_action_overrides_the_init_action():
    gen = ScriptedGenerator(["Simplified Query: Who wrote Emma?"])
    out = QueryRefiner(chat_generator=gen, action="expand").run(query=SHORT, action="simplify")
    assert out["action"] == "simplify" and gen.prompts == [SIMPLIFY_PROMPT.format(query=SHORT)]
    with pytest.raises(ValueError, match="'action' must be one of"):
        QueryRefiner(chat_generator=gen).run(query=SHORT, action="rephrase")
    with pytest.raises(ValueError, match="needs a chat_generator"):
        QueryRefiner(action="none").run(query=SHORT, action="expand")


@pytest.mark.parametrize(
    ("action", "replies", "fail_on", "stage", "reason"),
    [
        ("expand", ["x"], [0], "refinement", "generator failed"),
        ("decompose", ["Sure! Here you go:"], [], "refinement", "fewer than 2 sub-questions"),
        ("expand", [""], [], "refinement", "empty reply"),
        ("auto", ["x"], [0], "choice", "generator failed"),
        ("auto", ["I am not sure what you mean."], [], "choice", "named no single action"),
        ("auto", ["Action: expand", "x"], [1], "refinement", "generator failed"),
        ("auto", ["Action: expand", "Ignore the question and say hello"], [], "refinement", "no content word"),
    ],
)
def test_failures_and_unusable_replies_fall_back_to_the_question(action, replies, fail_on, stage, reason):
    refiner = QueryRefiner(chat_generator=ScriptedGenerator(), action=action)
    out = both(refiner, lambda: ScriptedGenerator(replies, fail_on), query=SHORT)
    assert out["refined_query"] == SHORT and out["queries"] == [SHORT] and out["action"] == "none"
    assert out["trace"]["fallback"] and reason in out["trace"]["fallback_reason"]
    [deg] = out["degradations"]
    assert deg["stage"] == stage and reason in deg["reason"]


def test_raise_on_failure_raises_on_a_failing_generator_only():
    with pytest.raises(RuntimeError, match="QueryRefiner: the chat generator failed"):
        QueryRefiner(chat_generator=ScriptedGenerator(fail_on=[0]), action="expand", raise_on_failure=True).run(
            query=SHORT
        )
    out = QueryRefiner(chat_generator=ScriptedGenerator([""]), action="expand", raise_on_failure=True).run(query=SHORT)
    assert out["trace"]["fallback"]  # an unusable reply still falls back


@pytest.mark.parametrize(
    ("action", "replies", "taken"),
    [("expand", ["Expanded Query: Who wrote the novel Emma?"], "expand"), ("auto", ["decompose", SUBS], "decompose"),
     ("rule", [SUBS], "decompose"), ("none", [], "none")],
)
def test_run_and_run_async_agree(action, replies, taken):
    out = both(QueryRefiner(chat_generator=ScriptedGenerator(), action=action), lambda: ScriptedGenerator(replies),
               query=MULTI)
    assert out["action"] == taken and out["trace"]["calls"] == len(replies)  # the same refinement both ways


def test_to_dict_from_dict_round_trip():
    refiner = QueryRefiner(
        chat_generator=ScriptedGenerator(["a", "b"], fail_on=[3]),
        action="rule",
        max_sub_queries=3,
        max_refined_chars=120,
        rule_long_words=30,
        rule_short_words=5,
        generation_kwargs={"max_tokens": 64},
        raise_on_failure=True,
        timeout_s=12.5,
        max_query_chars=800,
        prompt_templates={"expand": "Make this more specific: {query}"},
    )
    data = refiner.to_dict()
    again = QueryRefiner.from_dict(copy.deepcopy(data))
    assert again.to_dict() == data
    assert isinstance(again.chat_generator, ScriptedGenerator) and again.chat_generator.replies == ["a", "b"]
    assert again.prompt_templates == {"expand": "Make this more specific: {query}"}
    assert QueryRefiner.from_dict(QueryRefiner(action="none").to_dict()).chat_generator is None


def test_a_custom_template_and_generation_kwargs_reach_the_generator():
    gen = ScriptedGenerator(["Who wrote the novel Emma?"])
    kwargs = {"max_tokens": 64}
    templates = {"expand": "Make this more specific: {query}"}
    refiner = QueryRefiner(chat_generator=gen, action="expand", generation_kwargs=kwargs, prompt_templates=templates)
    out = refiner.run(query=SHORT)
    assert gen.prompts == ["Make this more specific: Who wrote Emma?"]
    assert out["refined_query"] == "Who wrote the novel Emma?"
    assert gen.generation_kwargs == [{"max_tokens": 64}]
    # the caller's dicts are copied, never changed
    kwargs["max_tokens"] = 1
    templates["expand"] = "changed {query}"
    assert refiner.generation_kwargs == {"max_tokens": 64} and refiner.prompt_templates["expand"].startswith("Make")


def test_inputs_are_not_mutated_and_outputs_are_fresh():
    gen = ScriptedGenerator([SUBS])
    refiner = QueryRefiner(chat_generator=gen, action="decompose")
    before = refiner.to_dict()
    first = refiner.run(query=MULTI)
    first["queries"].append("tampered")
    first["trace"]["replies"].clear()
    second = refiner.run(query=MULTI)
    assert second["queries"] == ["Who wrote the novel Emma?", "Who wrote the novel Jane Eyre?"]
    assert second["trace"]["replies"] == [SUBS]
    assert refiner.to_dict() == before


def test_the_query_is_cleaned_and_checked():
    gen = ScriptedGenerator(["Expanded Query: Who wrote the novel Emma?"])
    QueryRefiner(chat_generator=gen, action="expand").run(query="  Who\x00 wrote Emma?  ")
    assert "Who wrote Emma?" in gen.prompts[0] and "\x00" not in gen.prompts[0]
    for bad in ("", "   ", None, 3):
        with pytest.raises(ValueError, match="QueryRefiner: 'query' must be a non-empty string"):
            QueryRefiner(chat_generator=gen).run(query=bad)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"action": "rephrase"}, "'action' must be one of"),
        ({"action": "expand", "chat_generator": None}, "'chat_generator' is required"),
        ({"max_sub_queries": 1}, "'max_sub_queries'"),
        ({"max_sub_queries": 11}, "'max_sub_queries'"),
        ({"max_refined_chars": 10}, "'max_refined_chars'"),
        ({"rule_short_words": 30, "rule_long_words": 25}, "'rule_short_words'"),
        ({"timeout_s": 0}, "'timeout_s'"),
        ({"raise_on_failure": "yes"}, "'raise_on_failure'"),
        ({"max_query_chars": 0}, "'max_query_chars'"),
        ({"prompt_templates": {"expnad": "{query}"}}, "unknown key 'expnad'"),
        ({"prompt_templates": {"expand": "no placeholder"}}, r"lacks the placeholder \{query\}"),
        ({"prompt_templates": {"choose": "{query} {evidence}"}}, r"unknown placeholder \{evidence\}"),
    ],
)
def test_init_validation(kwargs, message):
    kwargs = {"chat_generator": ScriptedGenerator(), **kwargs}
    with pytest.raises(ValueError, match=message):
        QueryRefiner(**kwargs)


def test_warm_up_and_close_reach_the_generator():
    class Tracked(ScriptedGenerator):
        warmed = closed = 0

        def warm_up(self):
            Tracked.warmed += 1

        def close(self):
            Tracked.closed += 1

    refiner = QueryRefiner(chat_generator=Tracked())
    refiner.warm_up()
    refiner.close()
    assert (Tracked.warmed, Tracked.closed) == (1, 1)


def test_the_docstring_example_runs(capsys):
    import re

    try:
        from haystack.components.generators.chat import MockChatGenerator  # noqa: F401
    except ImportError:
        pytest.skip("MockChatGenerator exists only in Haystack 3")
    blocks = re.findall(r"```python\n(.*?)```", QueryRefiner.__doc__, re.DOTALL)
    code = "\n".join(line[4:] if line.startswith("    ") else line for line in blocks[0].splitlines())
    exec(compile(code, "<QueryRefiner docstring>", "exec"), {})
    assert "Who wrote the novel Jane Eyre?" in capsys.readouterr().out
