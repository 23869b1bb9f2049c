"""The reader's kept prefix states (`LlamaCppLogprobsChatGenerator(prefix_states=…)`): its parameter, what it
renders, and that a reply starts from the kept state over a fake llama.cpp model. The real model:
tests/integration/test_prefix_states.py."""

from types import SimpleNamespace

import numpy as np
import pytest
from haystack.dataclasses import ChatMessage, ToolCall

pytest.importorskip("haystack_integrations.components.generators.llama_cpp")  # not in the Haystack 2.x tests

from haystack_cfrag.adapters import llama_cpp_logprobs as adapter  # noqa: E402
from haystack_cfrag.adapters import llama_cpp_states as prefix_states  # noqa: E402
from haystack_cfrag.adapters.llama_cpp_logprobs import LlamaCppLogprobsChatGenerator  # noqa: E402


def test_prefix_states_is_validated_and_serialised():
    with pytest.raises(ValueError, match="prefix_states"):
        LlamaCppLogprobsChatGenerator(model="x.gguf", prefix_states=prefix_states.MAX_PREFIX_STATES + 1)
    gen = LlamaCppLogprobsChatGenerator(model="x.gguf", n_ctx=512, prefix_states=3)
    data = gen.to_dict()
    assert data["init_parameters"]["prefix_states"] == 3 and data["init_parameters"]["n_ctx"] == 512
    again = LlamaCppLogprobsChatGenerator.from_dict(data)
    assert again.prefix_states == 3 and again.to_dict() == data
    assert LlamaCppLogprobsChatGenerator(model="x.gguf").prefix_states == prefix_states.DEFAULT_PREFIX_STATES


def test_only_text_turns_are_rendered_for_a_kept_state():
    call = ChatMessage.from_assistant(tool_calls=[ToolCall(tool_name="f", arguments={})])
    assert adapter._plain_turns([ChatMessage.from_user("Hi"), call]) is None
    assert adapter._plain_turns([]) is None


class FakeLlama:
    """llama-cpp-python's prefix handling in `generate`: the longest common prefix with `input_ids[:n_tokens]`."""

    def __init__(self):
        self.input_ids = np.zeros(256, dtype=np.intc)
        self.n_tokens = 0
        self.evaluated = []

    def tokenize(self, text, add_bos=True, special=True):
        return [ord(c) % 97 for c in text.decode()]

    def create_chat_completion(self, messages, **kwargs):
        tokens = self.tokenize(messages[-1]["content"].encode())
        shared = 0
        for a, b in zip(self.input_ids[: self.n_tokens], tokens[:-1], strict=False):
            if a != b:
                break
            shared += 1
        self.evaluated.append(len(tokens) - shared)
        self.input_ids[: len(tokens)] = tokens
        self.n_tokens = len(tokens)
        return {"choices": [{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop", "index": 0}],
                "usage": {"prompt_tokens": len(tokens), "completion_tokens": 1}, "model": "fake", "id": "1",
                "created": 0}


def _generator(monkeypatch, states):
    llm = FakeLlama()
    gen = LlamaCppLogprobsChatGenerator(model="x.gguf", prefix_states=states)
    gen._model = llm
    render = lambda messages: SimpleNamespace(prompt=messages[-1]["content"], added_special=True)  # noqa: E731
    monkeypatch.setattr(adapter, "chat_formatter", lambda model: render)
    monkeypatch.setattr(prefix_states, "copy_state", lambda model: "kv")
    monkeypatch.setattr(prefix_states, "load_state", lambda model, state: True)
    return gen, llm


@pytest.mark.parametrize("states", [0, 4])
def test_a_reply_after_another_prompt_starts_from_the_kept_state(monkeypatch, states):
    gen, llm = _generator(monkeypatch, states)
    passages = "passages " * 10
    for text in (passages + "first?", "unrelated", passages + "second?"):
        reply = gen.run([ChatMessage.from_user(text)])["replies"][0]
    cached = reply.meta["usage"]["prompt_tokens_details"]["cached_tokens"]
    if states:
        assert llm.evaluated[-1] == len("second?") and cached == len(passages)
        assert len(prefix_states.kept_states(llm, 0)) == 3
    else:
        assert llm.evaluated[-1] == len(passages + "second?") and cached == 0


def test_the_factory_and_a_one_question_runtime_keep_none():
    from haystack_cfrag.adapters import factories
    from haystack_cfrag.runtime.model_parts import ModelParts
    from haystack_cfrag.testing.fakes import HashingTextEmbedder

    assert factories.chat_generator("x.gguf", prefix_states=0).prefix_states == 0
    assert factories.chat_generator("x.gguf").prefix_states == prefix_states.DEFAULT_PREFIX_STATES
    parts = ModelParts(llm="x.gguf", text_embedder=HashingTextEmbedder(), prefix_states=0, aux_llm=None)
    assert parts.generator.prefix_states == 0
