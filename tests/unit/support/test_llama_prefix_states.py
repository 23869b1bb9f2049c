"""LlamaCppBackend's kept prefix states over a fake llama.cpp model: same log-probabilities, fewer tokens."""

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from haystack_cfrag.support.backends import LlamaCppBackend

VOCAB = 16


class FakeLlama:
    """A model whose next-token logits are a seeded function of every token in its KV cache."""

    def __init__(self) -> None:
        self.kv: list[int] = []
        self.input_ids = np.zeros(4096, dtype=np.intc)
        self.n_tokens = 0
        self.evaluated = 0

    def n_ctx(self) -> int:
        return 4096

    def eval(self, tokens):
        self.kv = self.kv[: self.n_tokens] + list(tokens)  # Llama.eval drops the cache from n_tokens on
        self.input_ids[self.n_tokens : self.n_tokens + len(tokens)] = tokens
        self.n_tokens += len(tokens)
        self.evaluated += len(tokens)

    def logits(self) -> np.ndarray:
        return np.random.default_rng(hash(tuple(self.kv)) % 2**32).normal(size=VOCAB)


class FakeBackend(LlamaCppBackend):
    """The real backend's reuse logic; tokens are the prompt's characters, states copies of the fake KV."""

    def warm_up(self) -> None:
        pass

    def encode(self, prompt, answer, reply_prefix=""):
        text = prompt if isinstance(prompt, str) else "".join(m["content"] for m in prompt)
        return [ord(c) % VOCAB for c in text + reply_prefix], [ord(c) % VOCAB for c in answer]

    @staticmethod
    def _last_logits(llm):
        return llm.logits()

    @staticmethod
    def _copy_state(llm):
        return list(llm.kv)

    @staticmethod
    def _load_state(llm, state):
        llm.kv = list(state)
        return True


def _cer_like_prompts(rng, n):
    """Prompts as CER's search makes them: a header, a chosen prefix, one candidate, the question."""
    passages = ["".join(rng.choice("abcdefgh") for _ in range(rng.randint(5, 30))) for _ in range(n)]
    prompts, chosen = [], []
    for _ in range(n):
        pool = [i for i in range(n) if i not in chosen]
        prompts += ["H:" + "|".join(passages[i] for i in chosen + [d]) + "?Q" for d in pool]
        chosen.append(rng.choice(pool))
    return prompts


def _score_all(states, prompts):
    backend = FakeBackend(model=FakeLlama(), prefix_states=states)
    values = [backend.answer_logprobs(p, "ans").token_logprobs for p in prompts]
    return values, backend._llm.evaluated


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 5), states=st.integers(1, 6))
def test_kept_states_change_no_value_and_never_cost_more(seed, n, states):
    prompts = _cer_like_prompts(random.Random(seed), n)
    plain, plain_cost = _score_all(0, prompts)
    kept, kept_cost = _score_all(states, prompts)
    assert kept == plain and kept_cost <= plain_cost


def test_the_next_round_reads_the_chosen_passage_from_its_kept_state():
    # round 1 scores "A" then "B"; round 2 scores "A"+"C": without kept states A is evaluated again
    prompts = ["H:" + "a" * 40 + "?Q", "H:" + "b" * 40 + "?Q", "H:" + "a" * 40 + "|c?Q"]
    plain, plain_cost = _score_all(0, prompts)
    kept, kept_cost = _score_all(4, prompts)
    assert kept == plain and plain_cost - kept_cost >= 40


def test_a_reply_to_the_prompt_the_reader_just_answered_evaluates_only_its_own_tokens():
    # the generator answered "H:passages?Q" with "A: x": the model holds that prompt and its reply
    llm = FakeLlama()
    prompt = "H:" + "p" * 200 + "?Q"
    llm.eval([ord(c) % VOCAB for c in prompt + "A: x"])
    backend = FakeBackend(model=llm)
    before = llm.evaluated
    got = backend.answer_logprobs([{"role": "user", "content": prompt}], " x", reply_prefix="A:")
    # the reply's prefix is in the model too: only its last token and the answer's tokens but the last are evaluated
    assert llm.evaluated - before == len(" x")
    assert got.tokens_reused == len(prompt) + len("A:") - 1
    # the same value as on a model that read everything afresh
    fresh = FakeBackend(model=FakeLlama()).answer_logprobs(prompt, " x", reply_prefix="A:")
    assert got.token_logprobs == fresh.token_logprobs and len(got.token_logprobs) == 2


def test_prefix_states_is_validated():
    with pytest.raises(ValueError, match="prefix_states"):
        LlamaCppBackend(model=FakeLlama(), prefix_states=-1)
