"""The reader's kept prefix states on the embedded Qwen model: a question about the same passages, asked after an
unrelated prompt, starts from the state kept for the passages and answers as it does right after them.

Run alone: `pytest -q -s tests/integration/test_prefix_states.py` (prints the tokens reused; under a minute on 2 cores).
"""

from __future__ import annotations

import asyncio

import pytest
from haystack.dataclasses import ChatMessage

from haystack_cfrag.adapters import factories
from haystack_cfrag.adapters import llama_cpp_states as prefix_states
from tests.baker_house_prompts import FIRST, SECOND, ask

OTHER = [ChatMessage.from_user("Name a colour of the sky, one word.")]


@pytest.fixture(scope="module")
def generator():
    gen = factories.chat_generator(n_ctx=2048, max_tokens=12)
    gen.warm_up()
    yield gen
    gen.close()


def _turns(gen, prompts):
    """Each prompt's reply text and the prompt tokens the model did not evaluate, from a cold model."""
    gen._model.reset()
    prefix_states.forget(gen._model)
    out = []
    for messages in prompts:
        reply = gen.run(messages)["replies"][0]
        out.append((reply.text, reply.meta["usage"]["prompt_tokens_details"]["cached_tokens"],
                    reply.meta["usage"]["prompt_tokens"]))
    return out


def test_a_question_after_another_prompt_starts_from_the_passages_kept_state(generator):
    first, second = ask(FIRST), ask(SECOND)
    generator.prefix_states = 0
    direct = _turns(generator, [first, second])  # llama-cpp-python's own reuse: the second right after the first
    plain = _turns(generator, [first, OTHER, second])
    generator.prefix_states = prefix_states.DEFAULT_PREFIX_STATES
    kept = _turns(generator, [first, OTHER, second])
    print(f"\nthe second question: {kept[2][2]} prompt tokens; reused right after the first {direct[1][1]}, after "
          f"another prompt {plain[2][1]} without kept states and {kept[2][1]} with them")
    assert direct[1][1] > 200
    assert plain[2][1] < 20  # only the chat template's first tokens are shared with the unrelated prompt
    # the state kept for the first question is what llama.cpp held right after it: the same reuse, the same reply
    assert kept[2][1] == direct[1][1] and kept[2][0] == direct[1][0]
    assert kept[0][0] == direct[0][0] and kept[1][0] == plain[1][0]


def test_run_async_keeps_and_loads_the_same_states(generator):
    generator.prefix_states = prefix_states.DEFAULT_PREFIX_STATES
    generator._model.reset()
    prefix_states.forget(generator._model)
    generator.run(ask(FIRST))
    generator.run(OTHER)
    reply = asyncio.run(generator.run_async(ask(SECOND)))["replies"][0]
    assert reply.meta["usage"]["prompt_tokens_details"]["cached_tokens"] > 200
    assert len(prefix_states.kept_states(generator._model, 0)) == 3


def test_forget_drops_the_kept_states(generator):
    generator.prefix_states = prefix_states.DEFAULT_PREFIX_STATES
    generator.run(ask(FIRST))
    prefix_states.forget(generator._model)
    generator._model.reset()
    reply = generator.run(ask(SECOND))["replies"][0]
    assert reply.meta["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
