"""common/asking.AsksChatGenerator: the one door of every component's chat call, and what it owns."""

import ast
import asyncio
import time
from pathlib import Path

import pytest
from haystack.dataclasses import ChatMessage

from haystack_cfrag.common import asking
from haystack_cfrag.common.asking import AsksChatGenerator
from haystack_cfrag.common.plumbing import CallTimeoutError
from haystack_cfrag.common.tracing import LLMCall

PACKAGE = Path(asking.__file__).resolve().parents[1]
CALLS = {"call_with_timeout", "call_async_with_timeout"}
OWN_CALL: dict[str, str] = {}
"""Component file (relative to haystack_cfrag/) -> why it may send chat messages itself: none since the graph
extractor asks through the base too (its pool of generators is the `generator=` of each call)."""
CALL = LLMCall(stage="answer", component="Asker")


def component_sources():
    files = sorted(PACKAGE.glob("*/components/*.py"))
    assert len(files) > 15, "the component modules were not found"
    return {str(f.relative_to(PACKAGE)): f.read_text(encoding="utf-8") for f in files}


def timed_calls(source):
    """The names of `call_with_timeout` / `call_async_with_timeout` a module imports or uses."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            found |= {a.name for a in node.names} & CALLS
        elif isinstance(node, ast.Attribute) and node.attr in CALLS:
            found.add(node.attr)
        elif isinstance(node, ast.Name) and node.id in CALLS:
            found.add(node.id)
    return found


def test_no_component_calls_a_chat_generator_past_the_base():
    """Every component asks through AsksChatGenerator (ask / ask_result and their async twins).

    Per-call settings go through its keywords (`generator=`, `timeout_s=`, `generation_kwargs=`,
    `exclusive=`), never through a hand-written `call_with_timeout`.
    """
    offenders = {path: sorted(names) for path, source in component_sources().items()
                 if (names := timed_calls(source))}
    assert offenders == {}, f"call the chat generator through common/asking.AsksChatGenerator: {offenders}"


def test_no_component_writes_its_own_chat_messages_but_the_listed_ones():
    writes = {path for path, source in component_sources().items()
              if "ChatMessage.from_user" in source or '"messages"' in source or "messages=" in source}
    assert writes == set(OWN_CALL), "ask through AsksChatGenerator, or list the component in OWN_CALL with why"


class Gen:
    def __init__(self, reply="Paris", fail=None, delay=0.0):
        self.reply, self.fail, self.delay, self.seen = reply, fail, delay, []

    def run(self, messages, generation_kwargs=None):
        self.seen.append((messages, generation_kwargs))
        time.sleep(self.delay)
        if self.fail:
            raise self.fail
        return {"replies": [ChatMessage.from_assistant(self.reply, meta={"model": "m"})]}


class BareGen(Gen):
    def run(self, messages):  # takes no generation_kwargs
        return super().run(messages)


class Asker(AsksChatGenerator):
    COMPONENT = "Asker"

    def __init__(self, generator, **settings):
        self.chat_generator = generator
        for name, value in settings.items():
            setattr(self, name, value)


def both(asker, method, *args, **kwargs):
    """The sync and the async call's answers."""
    return getattr(asker, method)(*args, **kwargs), asyncio.run(getattr(asker, method + "_async")(*args, **kwargs))


def test_ask_gives_the_text_and_ask_result_the_whole_output_sync_and_async():
    gen = Gen()
    asker = Asker(gen, generation_kwargs={"max_tokens": 5})
    assert both(asker, "ask", "Capital of France?", CALL, "answer") == (("Paris", None), ("Paris", None))
    (result, error), _ = both(asker, "ask_result", "Capital of France?", CALL, "answer")
    assert error is None and result["replies"][0].meta == {"model": "m"}
    messages, generation = gen.seen[0]
    assert [m.text for m in messages] == ["Capital of France?"] and generation == {"max_tokens": 5}
    assert all(seen == gen.seen[0] for seen in gen.seen)


def test_a_call_may_name_its_own_generator_messages_time_limit_and_generation_arguments():
    own, other = Gen(), BareGen(reply="Rome")
    asker = Asker(own, generation_kwargs={"max_tokens": 5})
    message = ChatMessage.from_user("Capital of Italy?")
    assert asker.ask(message, CALL, "answer", generator=other, generation_kwargs={"stop": ["\n"]}) == ("Rome", None)
    assert own.seen == [] and other.seen[0][0] == [message]  # BareGen takes no generation arguments: none sent
    asker.ask([message, message], CALL, "answer", generation_kwargs={"stop": ["\n"]})
    assert len(own.seen[0][0]) == 2 and own.seen[0][1] == {"stop": ["\n"]}
    slow = Asker(Gen(delay=0.5), timeout_s=None)
    text, error = slow.ask("q", CALL, "answer", timeout_s=0.05)
    assert text is None and isinstance(error, CallTimeoutError)


def test_a_failure_comes_back_for_a_degradation_or_raises_with_the_components_message():
    down = ConnectionError("down")
    assert both(Asker(Gen(fail=down)), "ask", "q", CALL, "answer") == ((None, down), (None, down))
    raising = Asker(Gen(fail=down), raise_on_failure=True)
    with pytest.raises(RuntimeError, match=r"^Asker: the chat generator failed \(answer\): down$") as info:
        raising.ask("q", CALL, "answer")
    assert info.value.__cause__ is down
    raising.FAILURE = "{component}: the {what} failed: {reason}"
    with pytest.raises(RuntimeError, match=r"^Asker: the draft failed: ConnectionError\('down'\)$"):
        asyncio.run(raising.ask_async("q", CALL, "draft"))
    assert str(raising.failure("draft", "empty reply")) == "Asker: the draft failed: empty reply"
