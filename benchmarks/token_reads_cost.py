"""What the reader's token reads cost and save on the embedded model (prints times and ratios, asserts nothing).

    python benchmarks/token_reads_cost.py [--rounds 5]

Per round, on one loaded model whose prompt is already evaluated (so only the reply's tokens are timed): the
reader writes its reply to a question over eight passages with `read_tokens=0` and with the package's
`READ_TOKENS` (alternated, so that a slower minute of the machine hits both); then what the gate's reading of the
answer costs each way: a scoring of the answer's tokens (`read_reply`) against the reads kept with the reply
(`read_generated`).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from haystack_cfrag.adapters import factories
from haystack_cfrag.adapters.token_reads import META_KEY, READ_TOKENS
from haystack_cfrag.cascade.math import answer_of
from haystack_cfrag.common.replies import reply_text
from haystack_cfrag.support.scorer import ReaderSupportScorer


def reply_ms_per_token(gen, messages, read_tokens: int) -> tuple[float, object]:
    """Milliseconds per written token of one reply (its prompt evaluated first, untimed), and the reply."""
    gen.read_tokens = 0
    gen.run(messages, generation_kwargs={"max_tokens": 1})
    gen.read_tokens = read_tokens
    start = time.perf_counter()
    reply = gen.run(messages)["replies"][0]
    seconds = time.perf_counter() - start
    return 1000 * seconds / max(1, reply.meta["usage"]["completion_tokens"]), reply


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's tests/ (the shared prompts)
    from tests.baker_house_prompts import FIRST, SECOND, ask  # noqa: PLC0415

    gen = factories.chat_generator(n_ctx=2048, max_tokens=24)
    gen.warm_up()
    scorer = ReaderSupportScorer(chat_generator=gen, prefix_states=0)
    plain, read, scored, generated = [], [], [], []
    for _ in range(args.rounds):
        for question in (FIRST, SECOND):
            messages = ask(question)
            plain.append(reply_ms_per_token(gen, messages, 0)[0])
            ms, reply = reply_ms_per_token(gen, messages, READ_TOKENS)
            read.append(ms)
            answer = reply_text("", answer_of(reply.text or "", ""))
            start = time.perf_counter()
            from_reads = scorer.read_generated(messages, answer, "", reply.meta.get(META_KEY))
            generated.append(time.perf_counter() - start)
            start = time.perf_counter()
            scorer.read_reply(messages, answer, "")
            scored.append(time.perf_counter() - start)
            if from_reads is None:
                print(f"the reply {reply.text!r} is not read from its reads (its tokens are not the answer's)")
    p, r = statistics.median(plain), statistics.median(read)
    print(f"a written token (median of {len(plain)}): read_tokens=0 {p:.1f} ms, read_tokens={READ_TOKENS} {r:.1f} ms "
          f"({r / p:.3f}x)")
    s, g = statistics.median(scored), statistics.median(generated)
    print(f"the gate's reading of the answer: scored {1000 * s:.1f} ms, from the reads {1000 * g:.1f} ms "
          f"({g / s:.3f}x)")


if __name__ == "__main__":
    main()
