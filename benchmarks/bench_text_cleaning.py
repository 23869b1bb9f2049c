"""`clean_query` on hostile text against plain ASCII of the same normalised length (issue #23).

Prints, per hostile pattern at the 1 MiB body limit, the seconds for the hostile text, for plain
ASCII as long as the hostile text becomes under NFKC, and their ratio (best of `--repeat`). The
unit tests check the cause of the quadratic time (no run of more than 30 non-starters reaches
the normaliser); this prints the seconds, which depend on the machine and its load.

    .venv/bin/python benchmarks/bench_text_cleaning.py [--repeat 2]
"""

from __future__ import annotations

import argparse
import time
import unicodedata

from haystack_cfrag.common.text import clean_query
from haystack_cfrag.serving.middleware import MAX_BODY_BYTES

PATTERNS = {
    "issue (a + 230-class marks + 220-class marks)": None,
    "tibetan vowel signs": ["\u0f73", "\u0f75"],
    "two-mark decomposition": ["\u0344", "\u0316"],
    "U+FDFA (NFKC x18)": ["\ufdfa"],
    "zero-width": ["\u200b"],
    "lone surrogate + mark": ["\ud800", "\u0301"],
}


def hostile(unit: list[str] | None, n: int) -> str:
    if unit is None:
        return "a" + "\u0301" * (n // 2) + "\u0316" * (n // 2)
    body = "".join(unit)
    return ("a" + body * (n // len(body) + 1))[:n]


def best_of(text: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        clean_query(text)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    n = MAX_BODY_BYTES // 2  # two UTF-8 bytes a character
    clean_query("\u0301")  # build the non-starter table outside the timings
    print(f"{'pattern':48} {'hostile s':>10} {'ascii s':>10} {'ratio':>7}")
    for name, unit in PATTERNS.items():
        text = hostile(unit, n)
        growth = max(1.0, len(unicodedata.normalize("NFKC", text[:10_000])) / len(text[:10_000]))
        ascii_s = best_of("x" * int(len(text) * growth), args.repeat)
        hostile_s = best_of(text, args.repeat)
        print(f"{name:48} {hostile_s:10.3f} {ascii_s:10.3f} {hostile_s / ascii_s:7.1f}")


if __name__ == "__main__":
    main()
