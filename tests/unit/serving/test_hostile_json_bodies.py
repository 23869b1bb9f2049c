"""The strict-JSON walk of a request body (issue #43, item 1): time and memory linear in the body's size.

Before the fix the walk that looks for non-finite numbers and lone surrogates built each
element's path by copying its parent's: `{"k" * 24000: [0] * 24000}` (100 KB) held 24,000 copies
of a 24,000-character path, about +500 MB. Each shape below is measured at a size n and at 4n
(the same shape, 4 times the body): a linear walk grows about 4-fold in peak memory (tracemalloc)
and in time; a quadratic one 16-fold. The bounds are ratios with generous room (no wall-clock
limits): memory under 8×, CPU time under 12× (best of five rounds each).
"""

import json
import time
import tracemalloc
from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from haystack_cfrag.serving.requests import RequestError, load_json

SCALE, MEMORY_RATIO, TIME_RATIO = 4, 8.0, 12.0


def _wide_list(n: int, key_len: int) -> object:  # the issue's shape: one long key over a long list
    return {"k" * (key_len * n // 64 + 1): [0] * n}


def _deep(n: int, key_len: int) -> object:  # nested objects, each key long: path length grows with depth
    body: object = 0
    for i in range(max(1, n // 40)):
        body = {f"{i}" + "k" * key_len: body, "x": [1, 2]}
    return body


def _records(n: int, key_len: int) -> object:  # a list of objects with long keys
    return [{"k" * key_len + str(j): [0.5, "t"] for j in range(4)} for _ in range(n // 8 + 1)]


def _lists_in_lists(n: int, key_len: int) -> object:  # nested lists under a long key
    return {"k" * (key_len * 8): [[[0] * 8 for _ in range(8)] for _ in range(n // 64 + 1)]}


SHAPES: list[Callable[[int, int], object]] = [_wide_list, _deep, _records, _lists_in_lists]


def _peak(raw: bytes) -> int:
    """The tracemalloc peak of `load_json(raw)`, in bytes."""
    tracemalloc.start()
    try:
        load_json(raw)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _measure(raw: bytes) -> tuple[int, float]:
    """(tracemalloc peak in bytes, CPU seconds of one call) of `load_json(raw)`.

    CPU time of this process (not wall time: a busy machine's other work is not counted), the
    best of five rounds of enough calls to take 20 ms each.
    """
    peak = _peak(raw)
    start = time.process_time()
    load_json(raw)
    calls = max(1, int(0.02 / max(time.process_time() - start, 1e-6)))
    best = float("inf")
    for _ in range(5):
        start = time.process_time()
        for _ in range(calls):
            load_json(raw)
        best = min(best, (time.process_time() - start) / calls)
    return peak, best


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape=st.sampled_from(SHAPES), n=st.integers(2_000, 6_000), key_len=st.integers(16, 256))
def test_walk_is_linear_in_the_body_size(shape: Callable[[int, int], object], n: int, key_len: int) -> None:
    small = json.dumps(shape(n, key_len)).encode()
    large = json.dumps(shape(SCALE * n, key_len)).encode()
    size_ratio = len(large) / len(small)
    (small_peak, small_s), (large_peak, large_s) = _measure(small), _measure(large)
    memory_ratio = large_peak / small_peak
    time_ratio = large_s / max(small_s, 1e-6)
    assert memory_ratio < MEMORY_RATIO * size_ratio / SCALE, (shape.__name__, len(small), memory_ratio)
    assert time_ratio < TIME_RATIO * size_ratio / SCALE, (shape.__name__, len(small), time_ratio)


def test_the_issue_body_costs_a_few_times_its_size() -> None:
    raw = json.dumps({"k" * 24000: [0] * 24000}).encode()  # 96 KB
    peak = _peak(raw)
    assert peak < 100 * len(raw), peak  # before: about 580 MB (6000 × the body)


def test_the_refused_element_is_still_named() -> None:
    key = "k" * 5000
    raw = json.dumps({key: [0, 1, {"inner": [2, "ok"]}]}).replace('"ok"', '"\\ud800"').encode()
    try:
        load_json(raw)
    except RequestError as exc:
        message = str(exc)
    else:
        raise AssertionError("a lone surrogate was accepted")
    assert message.startswith("'" + "k" * 200 + "…' is not Unicode text"), message
    assert len(message) < 400, len(message)
    raw = b'{"a": [{"b": 1}, {"c": [0, NaN]}]}'
    try:
        load_json(raw)
    except RequestError as exc:
        assert str(exc) == "'a[1].c[1]' must be a finite number, got NaN.", str(exc)
    else:
        raise AssertionError("NaN was accepted")
