"""The reader's `read_tokens` (`LlamaCppLogprobsChatGenerator`): its parameter, and the reads a reply carries over a
fake llama.cpp model that calls the logits processors as llama-cpp-python does (`adapters.token_reads`)."""

import numpy as np
import pytest
from haystack.dataclasses import ChatMessage

pytest.importorskip("haystack_integrations.components.generators.llama_cpp")  # not in the Haystack 2.x tests

from haystack_cfrag.adapters import llama_cpp_logprobs as adapter  # noqa: E402
from haystack_cfrag.adapters.llama_cpp_logprobs import LlamaCppLogprobsChatGenerator  # noqa: E402
from haystack_cfrag.adapters.token_reads import META_KEY  # noqa: E402

PROMPT = [5, 6, 7]


def test_read_tokens_is_validated_and_serialised():
    with pytest.raises(ValueError, match="read_tokens"):
        LlamaCppLogprobsChatGenerator(model="x.gguf", read_tokens=-1)
    with pytest.raises(ValueError, match="read_tokens"):
        LlamaCppLogprobsChatGenerator(model="x.gguf", read_tokens=10_000)
    data = LlamaCppLogprobsChatGenerator(model="x.gguf", read_tokens=8).to_dict()
    assert data["init_parameters"]["read_tokens"] == 8
    assert LlamaCppLogprobsChatGenerator.from_dict(data).read_tokens == 8
    assert LlamaCppLogprobsChatGenerator(model="x.gguf").read_tokens == 0


class WritingLlama:
    """A fake llama.cpp model that writes `reply` greedily from seeded logits, calling the logits processors as
    llama-cpp-python does: before each pick, with the tokens evaluated so far."""

    def __init__(self, reply):
        self.reply = reply
        self.input_ids = np.zeros(64, dtype=np.intc)
        self.n_tokens = 0
        self.kwargs = None

    def create_chat_completion(self, messages, **kwargs):
        self.kwargs = kwargs
        ids = list(PROMPT)
        rng = np.random.default_rng(4)
        for token in self.reply:
            row = rng.normal(size=40)
            row[token] = row.max() + 1.0  # greedy: the reply's token is the first choice
            for processor in kwargs.get("logits_processor") or []:
                row = processor(np.array(ids), row)
            ids.append(token)
        for processor in kwargs.get("logits_processor") or []:
            processor(np.array(ids), rng.normal(size=40))  # the end's step
        return {"choices": [{"message": {"role": "assistant", "content": "Answer: x"}, "finish_reason": "stop",
                             "index": 0}], "usage": {"prompt_tokens": 3, "completion_tokens": len(self.reply)},
                "model": "fake", "id": "1", "created": 0}


def _writer(read_tokens, **kwargs):
    gen = LlamaCppLogprobsChatGenerator(model="x.gguf", prefix_states=0, read_tokens=read_tokens, **kwargs)
    gen._model = WritingLlama([10, 11, 12])
    return gen


def test_the_reply_carries_what_the_reader_read_as_it_wrote_it():
    mine = lambda ids, row: row  # noqa: E731  (a processor of the caller's own: kept, before the recorder)
    gen = _writer(4)
    reply = gen.run([ChatMessage.from_user("q")], generation_kwargs={"logits_processor": [mine]})["replies"][0]
    reads = reply.meta[META_KEY]
    assert reads["tokens"] == [10, 11, 12] and reads["ranks"] == [0, 0, 0] and reads["prompt_tokens"] == 3
    assert gen._model.kwargs["logits_processor"][0] is mine


def test_without_read_tokens_nothing_is_read():
    gen = _writer(0)
    reply = gen.run([ChatMessage.from_user("q")])["replies"][0]
    assert META_KEY not in reply.meta and "logits_processor" not in gen._model.kwargs


def test_the_generators_own_processors_stay_first():
    mine = lambda ids, row: row  # noqa: E731
    merged = adapter._with_processor({"logits_processor": [mine], "max_tokens": 5}, {"temperature": 0.0}, "rec")
    assert list(merged["logits_processor"]) == [mine, "rec"] and merged["temperature"] == 0.0
