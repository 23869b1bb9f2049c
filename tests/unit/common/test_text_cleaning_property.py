"""`clean_query` on hostile text (issue #23): linear time for any string up to the body limit, never an exception.

NFKC sorts each run of combining marks by class, in time quadratic in the run's length; before
the fix one letter and 30,000 + 30,000 marks of two classes in reverse order took seconds, and
a question at the 1 MiB body limit minutes. The fix caps every run at 30 non-starters before NFKC
(`stream_safe`, UAX #15), so what is checked here is that cause, counted, not timed: every
string `clean_query` hands to the normaliser has no run longer than 30 non-starters, at the body
limit too. The seconds (hostile text against plain ASCII of the same normalised length) are
printed by `benchmarks/bench_text_cleaning.py`, not asserted: a timing ratio fails on a loaded
machine.
"""

import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from haystack_cfrag.common import text as text_module
from haystack_cfrag.common.text import MAX_NON_STARTERS, _non_starter_table, clean_query, stream_safe
from haystack_cfrag.serving.middleware import MAX_BODY_BYTES

# Characters an attacker reaches for: combining marks of different classes (230 above, 220 below,
# 1 overlay, 202 attached below), marks that decompose into two (U+0344, Tibetan U+0F73/U+0F75),
# letters that decompose with trailing marks (U+1E09, U+01D5, U+1FC1), zero-width and bidi
# format characters, controls, lone surrogates, full-width and compatibility forms (U+FDFA → 18),
# Hangul jamo, CGJ, unassigned and private-use code points.
HOSTILE = ["\u0301", "\u0316", "\u0334", "\u0327", "\u0344", "\u0f73", "\u0f75", "\u0f71", "\u0f72", "\u1e09",
           "\u01d5", "\u1fc1", "\u200b", "\u200d", "\u202e", "\u2066", "\ufeff", "\x00", "\x1b", "\ud800",
           "\udfff", "\uff21", "\ufdfa", "\u1100", "\u1161", "\u11a8", "\u034f", "\u0378", "\ue000", "a", " "]


def longest_non_starter_run(text: str) -> int:
    """The longest run of non-starters in `text`'s compatibility decomposition (UAX #15's count)."""
    info, _ = _non_starter_table()
    run = longest = 0
    for ch in text:
        lead, trail, whole = info.get(ch, (0, 0, False))
        longest = max(longest, run + lead)
        run = run + lead if whole else trail
    return longest


def normalised_inputs(text: str) -> tuple[str, list[str]]:
    """`clean_query(text)` and every string it handed to `unicodedata.normalize`."""
    _non_starter_table()  # built once, before the spy (it normalises every decomposable character)
    seen: list[str] = []

    class Spy:
        def __getattr__(self, name):
            return getattr(unicodedata, name)

        @staticmethod
        def normalize(form, value):
            seen.append(value)
            return unicodedata.normalize(form, value)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(text_module, "unicodedata", Spy())
        cleaned = clean_query(text)
    return cleaned, seen


def _hostile_string(unit: list[str], length: int, lead: str) -> str:
    """`unit` repeated to `length` characters after `lead`: long runs are what hurt, so they are built, not drawn."""
    body = "".join(unit)
    return (lead + body * (length // max(1, len(body)) + 1))[:length]


hostile_units = st.lists(st.sampled_from(HOSTILE), min_size=1, max_size=6)
_short, _long = st.integers(1, 20_000), st.integers(20_000, MAX_BODY_BYTES // 2)  # ≤ 2 bytes a character
lengths = st.one_of(_short, _short, _short, _long)  # a quarter of the strings up to the body limit


@pytest.mark.parametrize("unit", [["\u0301"] * 1 + ["\u0316"], ["\u0f73", "\u0f75"], ["\u0344", "\u0316"], ["\ufdfa"],
                                  ["\u200b"], ["\ud800", "\u0301"]], ids=["issue", "tibetan", "two-mark", "fdfa",
                                                                         "zero-width", "surrogate"])
def test_hostile_text_at_the_body_limit_reaches_the_normaliser_in_runs_of_at_most_30(unit):
    """The case of the issue (one letter, then marks of classes 230 and 220 in two long runs) and others, at
    the 1 MiB body limit (two UTF-8 bytes a character): before, NFKC sorted runs of 500,000 marks (minutes)."""
    n = MAX_BODY_BYTES // 2
    text = "a" + "".join(ch * (n // len(unit)) for ch in unit) if unit[0] == "\u0301" else _hostile_string(unit, n, "a")
    _, seen = normalised_inputs(text)
    assert seen and all(longest_non_starter_run(value) <= MAX_NON_STARTERS for value in seen)
    if unit[0] == "\u0301":
        assert longest_non_starter_run(text) > 100_000  # what NFKC would have sorted in one run


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_units, lengths, st.sampled_from(["", "a", "\u1fc1", "\u0f73", "Who is "]))
def test_clean_query_normalises_only_capped_runs_and_never_raises_on_hostile_text(unit, length, lead):
    text = _hostile_string(unit, length, lead)
    cleaned, seen = normalised_inputs(text)  # never raises
    assert all(longest_non_starter_run(value) <= MAX_NON_STARTERS for value in seen), (unit, length)
    assert not any(unicodedata.category(ch).startswith("C") for ch in cleaned)


@settings(max_examples=200, deadline=None)
@given(st.text(st.sampled_from(HOSTILE), max_size=400) | st.text(max_size=400))
def test_clean_query_is_idempotent_and_stream_safe_on_hostile_text(text):
    cleaned = clean_query(text)
    assert clean_query(cleaned) == cleaned
    assert stream_safe(cleaned) == cleaned  # no run of more than 30 non-starters is left


@settings(max_examples=100, deadline=None)
@given(hostile_units, st.integers(1, 3_000))
def test_stream_safe_caps_every_run_of_non_starters_at_30(unit, length):
    assert longest_non_starter_run(stream_safe(_hostile_string(unit, length, "a"))) <= MAX_NON_STARTERS


def test_stream_safe_leaves_ordinary_text_alone_and_every_mark_lies_in_planes_0_to_2():
    for text in ("Who is the lead actor?", "Qui est l’acteur principal ?", "主演は誰", "Ｔｈｅ Ｄａｒｋ",
                 "ḉ ǖ " + "e" + "\u0301" * 30, "\u0f73" * 15):
        assert stream_safe(text) == text
    assert stream_safe("a" + "\u0301" * 31) == "a" + "\u0301" * 30 + "\u034f\u0301"
    beyond = [cp for cp in range(0x30000, 0x110000)
              if unicodedata.combining(chr(cp)) or unicodedata.decomposition(chr(cp))]
    assert beyond == []  # the table's scan of planes 0-2 sees every non-starter of this Python's Unicode
