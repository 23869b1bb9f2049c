"""The reader's reading of the tokens it writes (`adapters.token_reads`), kept by `LlamaCppLogprobsChatGenerator(
read_tokens=…)` and read by the gate's scorer in place of a scoring (`ReaderSupportScorer.read_generated`): the
recorder over seeded logits, the match of a reply's tokens, the generator's parameter and the meta it writes over a
fake llama.cpp model (test_reader_token_reads.py), the gate's choice of reading. The real model (the same numbers as
a scoring): tests/integration/test_support_scorer.py."""

import numpy as np
import pytest
from haystack import Document
from haystack.dataclasses import ChatMessage

from haystack_cfrag.adapters.token_reads import (
    META_KEY,
    READ_TOKENS,
    TokenReadRecorder,
    answer_reads,
    prompt_digest,
)
from haystack_cfrag.cascade.components.escalation_gate import EscalationGate
from haystack_cfrag.support.backend_common import AnswerLogprobs
from haystack_cfrag.support.math import token_read

PROMPT = [5, 6, 7]


def _recorded(picks, rows, prompt=PROMPT, limit=READ_TOKENS):
    """What a recorder keeps when the reader picks `picks` from `rows` (one logits row per step) after `prompt`."""
    recorder, ids = TokenReadRecorder(limit), list(prompt)
    for pick, row in zip(picks, rows, strict=True):
        assert recorder(np.array(ids), row) is row  # the logits are left as they are
        ids.append(pick)
    recorder(np.array(ids), rows[-1])  # the step after the last pick (its own pick is never seen)
    return recorder.reads()


def test_each_pick_is_read_off_the_logits_it_was_sampled_from():
    rows = np.random.default_rng(0).normal(size=(4, 50)).astype(np.float32)
    picks = [int(np.argmax(rows[0])), 3, 17, int(np.argmax(rows[3]))]  # greedy, then two that were not first
    reads = _recorded(picks, rows)
    want = [token_read(row, pick) for row, pick in zip(rows, picks, strict=True)]
    assert reads["prompt_tokens"] == 3 and reads["prompt_digest"] == prompt_digest(PROMPT)
    assert reads["tokens"] == picks
    assert reads["logprobs"] == [w[0] for w in want] and reads["margins"] == [w[1] for w in want]
    assert reads["ranks"] == [w[2] for w in want] and reads["ranks"][0] == 0 and reads["ranks"][1] > 0


def test_the_limit_stops_the_reading_and_nothing_read_is_none():
    rows = np.random.default_rng(1).normal(size=(5, 20))
    assert _recorded([1, 2, 3, 4, 5], rows, limit=2)["tokens"] == [1, 2]
    assert TokenReadRecorder(4).reads() is None
    only = TokenReadRecorder(4)
    only(np.array(PROMPT), rows[0])  # one step, its pick never seen
    assert only.reads() is None


def test_a_call_out_of_step_reads_nothing_more():
    rows = np.random.default_rng(2).normal(size=(3, 20))
    recorder = TokenReadRecorder(8)
    recorder(np.array(PROMPT), rows[0])
    recorder(np.array([*PROMPT, 4, 9]), rows[1])  # two tokens later: not the step the kept row was for
    recorder(np.array([*PROMPT, 4, 9, 1]), rows[2])
    assert recorder.reads() is None


def test_the_answer_is_read_only_where_the_reply_is_the_prefix_then_the_answer():
    rows = np.random.default_rng(3).normal(size=(5, 30))
    reads = _recorded([10, 11, 12, 13, 2], rows)  # "Answer" ":" then the answer 12 13, then the end
    got = answer_reads(reads, [*PROMPT, 10, 11], [12, 13])
    assert got is not None
    assert got[0] == tuple(reads["logprobs"][2:4]) and got[2] == tuple(reads["ranks"][2:4])
    assert answer_reads(reads, [*PROMPT, 10, 11], [12, 14]) is None  # another answer
    assert answer_reads(reads, [*PROMPT, 10], [12, 13]) is None  # a reply without the whole prefix
    assert answer_reads(reads, [5, 6, 8, 10, 11], [12, 13]) is None  # another prompt
    assert answer_reads(reads, [*PROMPT, 10, 11], [12, 13, 2, 4]) is None  # reads that stop short
    assert answer_reads(reads, [*PROMPT, 10, 11], []) is None
    nan = {**reads, "logprobs": [float("nan")] * len(reads["logprobs"])}
    for broken in (None, {}, {**reads, "tokens": None}, {**reads, "ranks": reads["ranks"][:-1]}, "reads",
                   {**reads, "logprobs": ["x"] * len(reads["logprobs"])}, nan):
        assert answer_reads(broken, [*PROMPT, 10, 11], [12, 13]) is None


class GeneratedScorer:
    """A scorer that reads the reply from the reader's reads where it can (ReaderSupportScorer.read_generated)."""

    def __init__(self, readable):
        self.readable = readable
        self.calls = []

    def score(self, query, answer, documents):
        return -5.0

    def read_generated(self, messages, answer, reply_prefix, token_reads):
        self.calls.append(("read_generated", answer, token_reads))
        return {"support": -0.1, "margin": 3.0, "min_margin": 1.0, "rank": 0} if self.readable else None

    def read_reply(self, messages, answer, reply_prefix=""):
        self.calls.append(("read_reply", answer))
        return {"support": -0.2, "margin": 2.0, "min_margin": 0.5, "rank": 0}


MODEL = {"features": ["support"], "means": [-0.5], "scales": [0.5], "weights": [-2.0], "intercept": -1.0,
         "threshold": 0.5}


def _gate_reading(scorer, meta):
    gate = EscalationGate(support_scorer=scorer, model=MODEL)
    reply = ChatMessage.from_assistant("Answer: Mount Everest", meta=meta)
    out = gate.run(query="Tallest mountain?", replies=[reply], documents=[Document(content="Mount Everest")],
                   prompt=[ChatMessage.from_user("the prompt")])
    return out["trace"]["signals"]


def test_the_gate_reads_the_reply_from_the_reads_and_scores_where_they_do_not_serve():
    reads = {"tokens": [1]}
    readable = GeneratedScorer(readable=True)
    assert _gate_reading(readable, {META_KEY: reads})["support"] == -0.1
    assert readable.calls == [("read_generated", " Mount Everest", reads)]
    unreadable = GeneratedScorer(readable=False)
    assert _gate_reading(unreadable, {META_KEY: reads})["support"] == -0.2
    assert [c[0] for c in unreadable.calls] == ["read_generated", "read_reply"]
    none = GeneratedScorer(readable=True)
    assert _gate_reading(none, {})["support"] == -0.2 and [c[0] for c in none.calls] == ["read_reply"]


class _Model:
    """A stand-in for a loaded `llama_cpp.Llama` (the backend only takes its lock here)."""


class FakeBackend:
    """The llama.cpp backend's encoding without a model: the prompt's ids, the prefix's, the answer's."""

    name = "llama_cpp"

    def __init__(self):
        self.scored = 0

    def warm_up(self):
        pass

    def encode(self, prompt, answer, reply_prefix=""):
        return [*PROMPT, 10, 11], [12, 13] if answer == " Everest" else [14]

    def generated_logprobs(self, prompt, answer, reply_prefix, reads):
        read = answer_reads(reads, *self.encode(prompt, answer, reply_prefix))
        return None if read is None else AnswerLogprobs(read[0], 0, 5, 0.0, read[1], read[2])

    def answer_logprobs(self, prompt, answer, reply_prefix=""):
        self.scored += 1
        return AnswerLogprobs((-9.0,), 2, 5, 0.0, (0.1,), (3,))


class ReaderWithBackend:
    """A reader that brings its own support backend (`support_backend()`)."""

    def __init__(self):
        self.backend = FakeBackend()

    def support_backend(self):
        return self.backend


def test_the_scorer_reads_the_generated_reply_and_counts_a_scoring_with_nothing_evaluated():
    from haystack_cfrag.common.timing import count_llm_usage  # noqa: PLC0415
    from haystack_cfrag.support.scorer import ReaderSupportScorer  # noqa: PLC0415

    reads = _recorded([10, 11, 12, 13, 2], np.random.default_rng(6).normal(size=(5, 30)))
    scorer = ReaderSupportScorer(chat_generator=ReaderWithBackend())
    prompt = [ChatMessage.from_user("q")]
    with count_llm_usage() as usage:
        got = scorer.read_generated(prompt, " Everest", "Answer:", reads)
    assert got["support"] == pytest.approx(np.mean(reads["logprobs"][2:4])) and got["tokens_evaluated"] == 0
    assert got["rank"] == reads["ranks"][2] and got["min_margin"] == min(reads["margins"][2:4])
    assert usage.scorings == 1 and usage.scoring_tokens == 0
    assert scorer.read_generated(prompt, " Lhotse", "Answer:", reads) is None  # not this reply: the caller scores
    assert scorer.read_generated(prompt, " Everest", "Answer:", None) is None
    assert scorer.read_reply(prompt, " Everest", "Answer:")["support"] == -9.0  # a scoring, as before
    assert scorer._backend.scored == 1


def test_the_backend_reads_the_answer_from_the_reads_with_nothing_evaluated(monkeypatch):
    from haystack_cfrag.support import llama_cpp_backend  # noqa: PLC0415

    rows = np.random.default_rng(5).normal(size=(5, 30))
    reads = _recorded([10, 11, 12, 13, 2], rows)
    backend = llama_cpp_backend.LlamaCppBackend(model=_Model(), prefix_states=0)
    monkeypatch.setattr(backend, "encode", FakeBackend().encode)
    got = backend.generated_logprobs([{"role": "user", "content": "q"}], " Everest", "Answer:", reads)
    assert got.tokens_evaluated == 0 and got.token_logprobs == tuple(reads["logprobs"][2:4])
    assert got.token_margins == tuple(reads["margins"][2:4])
    assert backend.generated_logprobs([{"role": "user", "content": "q"}], " Lhotse", "Answer:", reads) is None
