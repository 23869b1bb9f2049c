"""haystack_cfrag.testing.MockChatGenerator: replies the components parse, deterministic failures, serialisation."""

import asyncio
import json
import re

import pytest
from haystack import Document
from haystack.dataclasses import ChatMessage

from haystack_cfrag.cfrag.components.counterfactual_query_expander import CounterfactualQueryExpander
from haystack_cfrag.cfrag.math.replies import parse_draft_reply
from haystack_cfrag.cfrag.prompts import (
    COUNTERFACTUAL_PROMPT,
    DRAFT_PROMPT,
    SYNTHESIS_PROMPT,
    render_drafts,
    render_evidence,
)
from haystack_cfrag.testing import MockChatGenerator
from haystack_cfrag.testing.mock_chat_generator import InjectedFailureError


def ask(gen, prompt):
    return gen.run(messages=[ChatMessage.from_user(prompt)])["replies"][0].text


def draft_prompt(docs):
    return DRAFT_PROMPT.format(query="Who is the lead actor?", evidence=render_evidence(docs))


def test_counterfactual_reply_is_the_json_the_expander_asks_for():
    text = ask(MockChatGenerator(), COUNTERFACTUAL_PROMPT.format(query="Who is the lead actor in X?", n_candidates=7))
    data = json.loads(text)
    questions = [c["question"] for c in data["counterfactuals"]]
    assert len(questions) == 7 and len(set(questions)) == 7
    assert all(q.startswith("Who is the lead actor in X") for q in questions)
    assert len({c["answer_hint"] for c in data["counterfactuals"]}) == 7


def test_expander_keeps_the_mocks_counterfactuals():
    out = CounterfactualQueryExpander(chat_generator=MockChatGenerator(), n_counterfactuals=2,
                                      similarity_threshold=0.3).run(query="Who is the lead actor in The Dark Knight?")
    assert len(out["counterfactuals"]) == 2 and out["queries"][0] == "Who is the lead actor in The Dark Knight?"


def test_draft_reply_names_the_first_passages_title_even_with_parentheses():
    docs = [Document(content="Bale stars.", meta={"title": "The Dark Knight (2008 film)"}), Document(content="x")]
    parsed = parse_draft_reply(ask(MockChatGenerator(), draft_prompt(docs)))
    assert parsed["answer"] == "The Dark Knight (2008 film)" and parsed["key_evidence"] == [1]


def test_draft_reply_without_title_uses_the_first_words_and_without_evidence_says_unknown():
    prompt = draft_prompt([Document(content="Christian Bale stars in the lead")])
    assert parse_draft_reply(ask(MockChatGenerator(), prompt))["answer"] == "Christian Bale stars in"
    assert parse_draft_reply(ask(MockChatGenerator(), draft_prompt([])))["answer"] == "unknown"


def test_synthesis_reply_takes_the_first_draft():
    drafts = render_drafts([("Christian Bale", "cast", 0.8), ("Heath Ledger", "r", 0.2)])
    prompt = SYNTHESIS_PROMPT.format(query="q?", drafts=drafts)
    assert parse_draft_reply(ask(MockChatGenerator(), prompt))["answer"] == "Christian Bale"


def count_failures(gen, n, prompt="Evidence:\n[1] a\n\nQuestion: q?"):
    failed = 0
    for _ in range(n):
        try:
            gen.run(messages=[ChatMessage.from_user(prompt)])
        except InjectedFailureError:
            failed += 1
    return failed


def test_failure_rate_by_call_is_deterministic_and_close_to_the_rate():
    first = count_failures(MockChatGenerator(failure_rate=0.1, seed=3), 1000)
    assert first == count_failures(MockChatGenerator(failure_rate=0.1, seed=3), 1000)
    assert 60 <= first <= 140
    assert count_failures(MockChatGenerator(failure_rate=0.0), 50) == 0
    assert count_failures(MockChatGenerator(failure_rate=1.0), 50) == 50


def test_failure_by_prompt_is_the_same_for_the_same_prompt():
    gen = MockChatGenerator(failure_rate=0.5, failure_mode="prompt", seed=1)
    outcomes = {count_failures(gen, 5, prompt=f"Question: {i}?") for i in range(40)}
    assert outcomes == {0, 5}  # a prompt always fails or never does


def test_failures_and_calls_are_counted():
    gen = MockChatGenerator(failure_rate=1.0)
    with pytest.raises(InjectedFailureError, match="injected failure"):
        gen.run(messages=[ChatMessage.from_user("x")])
    assert gen.calls == 1 and gen.failures == 1


def test_run_async_replies_like_run_and_waits_the_delay():
    gen = MockChatGenerator(delay_s=0.01)
    prompt = draft_prompt([Document(content="Bale", meta={"title": "Cast"})])
    out = asyncio.run(gen.run_async(messages=[ChatMessage.from_user(prompt)]))
    assert out["replies"][0].text == ask(gen, prompt)
    assert out["replies"][0].meta["usage"]["completion_tokens"] > 0


def test_streaming_callback_gets_the_reply_in_chunks():
    chunks = []
    text = MockChatGenerator(streaming_callback=chunks.append).run(
        messages=[ChatMessage.from_user(draft_prompt([Document(content="a", meta={"title": "T"})]))])["replies"][0].text
    assert len(chunks) > 1 and "".join(c.content for c in chunks) == text


def test_round_trip_and_inputs_not_mutated():
    gen = MockChatGenerator(failure_rate=0.25, delay_s=0.5, seed=7, failure_mode="prompt")
    again = MockChatGenerator.from_dict(gen.to_dict())
    assert again.to_dict() == gen.to_dict()
    assert gen.to_dict()["init_parameters"] == {"failure_rate": 0.25, "delay_s": 0.5, "seed": 7,
                                                "failure_mode": "prompt"}
    messages = [ChatMessage.from_user("Question: q?")]
    before = [m.to_dict() for m in messages]
    MockChatGenerator().run(messages=messages)
    assert [m.to_dict() for m in messages] == before


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"failure_rate": 1.5}, "failure_rate"), ({"failure_rate": -0.1}, "failure_rate"), ({"delay_s": -1}, "delay_s"),
     ({"delay_s": 61}, "delay_s"), ({"seed": -1}, "seed"), ({"seed": 1.5}, "seed"),
     ({"failure_mode": "x"}, "failure_mode"), ({"streaming_callback": 3}, "streaming_callback")],
)
def test_init_validates_at_once(kwargs, name):
    with pytest.raises(ValueError, match=re.escape(f"'{name}'")):
        MockChatGenerator(**kwargs)


def test_docstring_example_runs(capsys):
    block = re.findall(r"```python\n(.*?)```", MockChatGenerator.__doc__, re.DOTALL)[0]
    code = "\n".join(line[4:] if line.startswith("    ") else line for line in block.splitlines())
    exec(compile(code, "<MockChatGenerator docstring>", "exec"), {})
    assert "Christian Bale" in capsys.readouterr().out
