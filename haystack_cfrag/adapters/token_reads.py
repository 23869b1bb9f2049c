"""The reader's reading of the tokens it generates, kept as it generates them: each token's log-probability, the
top-1 − top-2 gap and its rank, read off the logits it was sampled from (`common.logits.token_read`).

A scorer that would read a reply the reader has just written (the cascade's gate reads standard RAG's answer) takes
these instead of evaluating the answer's tokens again, where the reply's tokens are the ones it would score: the same
logits, so the same numbers (llama.cpp evaluates generated tokens one at a time, as the scorer does).

>>> import numpy as np
>>> recorder = TokenReadRecorder(limit=4)
>>> logits = np.log(np.array([0.1, 0.6, 0.3]))
>>> _ = recorder([7, 8], logits)           # the prompt [7, 8]; the reader then picks token 1
>>> _ = recorder([7, 8, 1], logits)        # ... and token 2
>>> _ = recorder([7, 8, 1, 2], logits)     # the last step's pick is not seen: it is not read
>>> reads = recorder.reads()
>>> reads["prompt_tokens"], reads["tokens"], [round(x, 3) for x in reads["logprobs"]], reads["ranks"]
(2, [1, 2], [-0.511, -1.204], [0, 1])
>>> answer_reads(reads, [7, 8], [1, 2])[2]
(0, 1)
>>> answer_reads(reads, [7, 8, 1], [2])[0] == (reads["logprobs"][1],)
True
>>> answer_reads(reads, [7, 9], [1, 2]) is None     # another prompt: not this reply
True
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from haystack_cfrag.common.logits import token_read

META_KEY = "token_reads"
"""Where a reply's meta keeps them (`LlamaCppLogprobsChatGenerator(read_tokens=…)`)."""

READ_TOKENS = 32
"""What the package's llama.cpp readers read (`adapters.factories`, every cascade's reader: `cascade.contract`):
standard RAG's reply is "Answer: <the short answer>", and its first line is what a gate reads."""

MAX_READ_TOKENS = 256
"""The most generated tokens read per reply (`read_tokens`' upper bound)."""


def prompt_digest(ids: Sequence[int]) -> str:
    """A short digest of token ids: which prompt the reads follow (the ids themselves are not kept).

    >>> prompt_digest([1, 2, 3]) == prompt_digest(np.array([1, 2, 3])), prompt_digest([1, 2]) == prompt_digest([2, 1])
    (True, False)
    """
    return hashlib.blake2b(np.asarray(ids, dtype=np.int64).tobytes(), digest_size=8).hexdigest()


class TokenReadRecorder:
    """A llama-cpp-python logits processor that reads each of the first `limit` generated tokens off the logits it
    was sampled from; it leaves the logits as they are (the reply is the one the reader gives without it).

    llama-cpp-python calls it before each sampling with the tokens evaluated so far: the first call's are the
    prompt, and each later call's last token is what the previous sampling picked.
    """

    def __init__(self, limit: int) -> None:
        """:param limit: read at most this many generated tokens (the answer's first line needs few)."""
        self.limit = limit
        self._prompt_tokens: int | None = None
        self._digest = ""
        self._row: np.ndarray | None = None
        self._tokens: list[int] = []
        self._reads: list[tuple[float, float, int]] = []

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        """Read the previous step's pick; keep this step's logits until its pick is seen."""
        n = len(input_ids)
        if self._prompt_tokens is None:
            self._prompt_tokens, self._digest = n, prompt_digest(input_ids)
        elif self._row is not None and n == self._prompt_tokens + len(self._tokens) + 1:
            chosen = int(input_ids[-1])
            self._tokens.append(chosen)
            self._reads.append(token_read(self._row, chosen))
        self._row = None
        if len(self._tokens) < self.limit and n == self._prompt_tokens + len(self._tokens):
            self._row = np.array(scores, dtype=np.float32, copy=True)
        return scores

    def reads(self) -> dict[str, Any] | None:
        """What a reply's meta keeps (None before any token was read)."""
        if self._prompt_tokens is None or not self._tokens:
            return None
        return {"prompt_tokens": self._prompt_tokens, "prompt_digest": self._digest, "tokens": list(self._tokens),
                "logprobs": [r[0] for r in self._reads], "margins": [r[1] for r in self._reads],
                "ranks": [r[2] for r in self._reads]}


def answer_reads(reads: Any, prompt_ids: Sequence[int], answer_ids: Sequence[int]
                 ) -> tuple[tuple[float, ...], tuple[float, ...], tuple[int, ...]] | None:
    """The answer tokens' (log-probabilities, margins, ranks) from a reply's `reads`, where the reply was generated
    after `prompt_ids`' first `prompt_tokens` and its tokens are the rest of `prompt_ids` (the reply's prefix), then
    `answer_ids`; None where they are not (another prompt, another tokenization, a reply without the prefix, reads
    that stop short, or `reads` not of this shape)."""
    try:  # a reply's meta may come from a cache file: anything not of this shape is not read
        n = int(reads["prompt_tokens"])
        tokens, ranks = [int(t) for t in reads["tokens"]], [int(r) for r in reads["ranks"]]
        logprobs, margins = [float(x) for x in reads["logprobs"]], [float(x) for x in reads["margins"]]
        digest = reads["prompt_digest"]
    except (TypeError, KeyError, ValueError, OverflowError):
        return None
    wanted = list(prompt_ids[n:]) + list(answer_ids)
    if (not answer_ids or n > len(prompt_ids) or not wanted or len(tokens) < len(wanted)
            or not (len(logprobs) == len(margins) == len(ranks) == len(tokens))
            or tokens[: len(wanted)] != wanted or digest != prompt_digest(list(prompt_ids[:n]))):
        return None
    span = slice(len(wanted) - len(answer_ids), len(wanted))
    if not all(math.isfinite(x) for x in (*logprobs[span], *margins[span])):
        return None
    return tuple(logprobs[span]), tuple(margins[span]), tuple(ranks[span])


__all__ = ["MAX_READ_TOKENS", "META_KEY", "READ_TOKENS", "TokenReadRecorder", "answer_reads", "prompt_digest"]
