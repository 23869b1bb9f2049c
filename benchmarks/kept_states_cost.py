"""What the reader's kept prefix states cost and save on the embedded model (prints times and ratios, asserts nothing).

    python benchmarks/kept_states_cost.py [--rounds 5]

Per round, on one loaded model: the reader answers question A over eight passages, the support backend scores a
different prompt (as a cascade's gate does), then the reader answers question B over the same passages. Timed with
`prefix_states=0` (llama-cpp-python's own reuse: B evaluates its passages again after the scoring) and with the
default (B starts from A's kept state); and the bare cost of copying and loading one kept state.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from haystack_cfrag.adapters import factories
from haystack_cfrag.adapters import llama_cpp_states as states
from haystack_cfrag.support.llama_cpp_backend import LlamaCppBackend


def round_seconds(gen, backend, kept: int) -> float:
    """Seconds of the reader's second answer after a scoring call."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's tests/ (the shared prompts)
    from tests.baker_house_prompts import FIRST, SECOND, ask  # noqa: PLC0415

    gen.prefix_states = kept
    gen._model.reset()
    states.forget(gen._model)
    gen.run(ask(FIRST))
    backend.answer_logprobs("Is the sky blue? Answer yes or no.", "yes")
    start = time.perf_counter()
    gen.run(ask(SECOND))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    gen = factories.chat_generator(n_ctx=2048, max_tokens=8)
    gen.warm_up()
    backend = LlamaCppBackend(model=gen._model, prefix_states=0)
    plain, kept = [], []
    for _ in range(args.rounds):  # alternated, so that a slower minute of the machine hits both
        plain.append(round_seconds(gen, backend, 0))
        kept.append(round_seconds(gen, backend, states.DEFAULT_PREFIX_STATES))
    llm = gen._model
    copies, loads = [], []
    for _ in range(args.rounds):
        start = time.perf_counter()
        state = states.copy_state(llm)
        copies.append(time.perf_counter() - start)
        start = time.perf_counter()
        states.load_state(llm, state)
        loads.append(time.perf_counter() - start)
    size = state[1] / 1e6 if state else 0.0
    p, k = statistics.median(plain), statistics.median(kept)
    print(f"the second answer after a scoring call (median of {args.rounds}): prefix_states=0 {p:.2f} s, "
          f"prefix_states={states.DEFAULT_PREFIX_STATES} {k:.2f} s ({k / p:.2f}x)")
    print(f"one kept state of {llm.n_tokens} tokens ({size:.1f} MB): copy {1000 * statistics.median(copies):.1f} ms, "
          f"load {1000 * statistics.median(loads):.1f} ms")


if __name__ == "__main__":
    main()
