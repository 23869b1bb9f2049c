"""The question's qualifier (its period, its namesake's descriptor) and the passages that meet it: pure, no Haystack.

A time-qualified question ("Who owned the villa from 1964 to 1965?") is decided by the passage
that dates its answer to that period; the passages about the page's other periods share its
words and outvote it. The period is the factor the paper intervenes on; these functions find it
in the question and in each passage, so that a draft and the duel can read the passage that
dates an answer to the question's period rather than the most similar one. A question about one of
several namesakes qualifies the name instead ("Where was John Smith (the 1950s painter) born?"): its
parenthetical's lowercase words are the descriptor ("painter", `question_descriptor`), its decade or
century a period (`question_period` reads "the 1950s" and "19th-century" in a question, not in passages,
where so broad a span would date everything); `qualifying` scores a passage on both.

Times are fractional years: "Dec 2014" is 2014 + 11/12, a bare year covers the whole year. The first
and last year of a period longer than two years are its edges: the year one holder left and the next
came ("sold to Argentina in 1958" for a question about 1948 to 1958). A date that meets the period only
at its edges dates it half as well (`EDGE_WEIGHT`), so the passage of the neighbouring period does not
date it as well as one dated inside it; a text that states both edges (the handovers that began and
ended it) frames the period and dates it wholly (`frames`). A day and month without a year ("commissioned
on 24 October") takes the year of the date before it in the same text (the next year when its month comes
earlier), or of the date after it when none comes before; a text with no year dates nothing. The gate and the duel
read one thing more for each answer they check: a clause that states the answer beginning in the period's first year
("moving into a reconstructed Anaheim Stadium in 1980" for 1980 to 1994) dates that answer wholly (`begins`),
though the year is an edge.

    >>> q = question_period("Who lived in the house from 1964 to 1965?")
    >>> q
    Period(start=1964.0, end=1966.0)
    >>> passage_periods("- 1964-1965 - Jacqueline Kennedy, Caroline Kennedy")
    [Period(start=1964.0, end=1966.0)]
    >>> dating(q, "In 1976, Yolande Fox bought the home; she lived there until her death in 2016.")
    0.0
    >>> dating(q, "- 1965-1976 - Michael Whitney Straight")
    0.5
    >>> dating(q, "- 1964-1965 - Jacqueline Kennedy")
    1.0
    >>> warrior = question_period("Which nation's registry was the carrier on from 1948 to 1958?")
    >>> dating(warrior, "Warrior was sold to Argentina in 1958."), dating(warrior, "She sailed to Korea in 1952.")
    (0.5, 1.0)
    >>> dating_scores("Who lived there from Mar 2016 to 2018?", ["He moved in 2017.", "In 1990 ..."])
    [1.0, 0.0]
    >>> dating_scores("Who is the lead actor in The Dark Knight?", ["..."]) is None
    True
    >>> qualifying_scores("Where was John Smith (the 1950s painter) born?",
    ...                   ["John Smith (1921-1987) was a painter.", "John Smith (1948-2010) was a politician."])
    [1.0, 0.5]
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from haystack_cfrag.common.text import mention

__all__ = ["EDGE_WEIGHT", "Period", "Qualifier", "answer_dating", "begins", "dated_elsewhere", "described", "dating",
           "dating_scores", "edge_only", "frames", "passage_periods", "period_overlap", "qualifying",
           "qualifying_scores", "question_descriptor", "question_period", "question_qualifier"]

_MONTH_NAMES = "january february march april may june july august september october november december".split()
_MONTHS = {m[:3]: i for i, m in enumerate(_MONTH_NAMES)}
_MONTH = r"(?:(?P<{g}m>jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+(?:\d{{1,2}},?\s+)?)?"
_YEAR = r"(?P<{g}y>1[0-9]{{3}}|20[0-9]{{2}})"


def _date(g: str) -> str:
    return _MONTH.format(g=g) + _YEAR.format(g=g)


_DASH = r"\s*(?:-|–|—|to|until|till|through|and)\s*"
_RANGE = re.compile(r"\b" + _date("a") + r"(?:" + _DASH + r"(?:" + _date("b") + r"|(?P<present>present|now)))?\b",
                    re.IGNORECASE)
_MONTH_NAME = "|".join([m.capitalize() for m in _MONTH_NAMES] + [m[:3].capitalize() for m in _MONTH_NAMES] + ["Sept"])
_DAY = r"[0-3]?[0-9](?:st|nd|rd|th)?"
_YEARLESS = re.compile(  # "24 October", "October 24th", "6th of August"; capitalised, so "may" is not May
    rf"\b(?:{_DAY}\s+(?:of\s+)?(?P<dm>{_MONTH_NAME})|(?P<md>{_MONTH_NAME})\.?\s+{_DAY})\b"
    r"(?!,?\s*(?:of\s+)?(?:1[0-9]{3}|20[0-9]{2}))")
_SPAN = re.compile(r"\bfor\s+(?P<n>\d{1,3})\s+years?\b", re.IGNORECASE)
_ERA = re.compile(r"\b(?:(?P<c>[1-9]|1[0-9]|2[01])(?:st|nd|rd|th)[\s-]+century|(?P<d>1[0-9]{2}0|20[0-9]0)'?s)\b",
                  re.IGNORECASE)  # "the 19th century", "19th-century", "the 1950s" (a question's, not a passage's)
_PAREN = re.compile(r"\(([^()]{1,80})\)")
_WORD = re.compile(r"[^\W\d_]+")
_PARTICLES = frozenset("the a an of and or in on at for from to by with as also known formerly née nee born died "
                       "later then was is".split())
"""Words of a parenthetical that describe no namesake: "(née Carter)", "(born 1950)" (its year is the period)."""
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(-])|\n+")
_CLAUSE = re.compile(r"[;:]|\s(?:and|but|before|after|while|whereas|until|till|when|then)\s", re.IGNORECASE)
_ENDING = re.compile(  # a clause with one of these may state the answer ending, or a past state: `begins` skips it
    r"\b(?:left|leav\w*|resign\w*|retir\w*|died|dies|death|end\w*|sold|sell\w*|depart\w*|replac\w*|succeed\w*|"
    r"dissolv\w*|clos\w*|demolish\w*|lost|los\w*|former\w*|previous\w*|until|till|through|prior|earlier|out|"
    r"quit|fired|dismiss\w*|ousted|abandon\w*|vacat\w*|expir\w*|finish\w*|last|final\w*|ceas\w*|stopp?\w*|"
    r"abolish\w*|from|defeat\w*|merg\w*|relegat\w*|divorc\w*|remained|still|continu\w*|since|originally|"
    r"first)\b", re.IGNORECASE)
_RANGE_END = re.compile(r"(?:-|–|—|\bto|\buntil|\btill|\bthrough)\s*(?:[0-3]?[0-9](?:st|nd|rd|th)?\s+)?$",
                        re.IGNORECASE)  # what comes before the last date of a range: "(1 March 1996 – 30 November 2004"
PRESENT = 2026.0
"""The year an open range ("1998–present") runs to."""
EDGE_WEIGHT = 0.5
"""How well a date that meets a period longer than two years only in its first or last year dates it, against
one inside (`dating`): a handover year belongs as much to the holder before as to the one after. Chosen, not
fitted: TimeQA's temporal outvotes (docs/results.md#cf-rag)."""


class Period(NamedTuple):
    """A half-open span of fractional years [start, end)."""

    start: float
    end: float


def _point(month: str | None, year: str, *, end: bool) -> float:
    """A date as a fractional year; its end is the end of its month (or of its year when no month is given)."""
    y = float(year)
    if month:
        m = _MONTHS[month.lower()[:3]]
        return y + (m + 1) / 12 if end else y + m / 12
    return y + 1 if end else y


def passage_periods(text: str) -> list[Period]:
    """Every date or date range a text states, in order: "1964-1965", "from Dec 2014 to May 2016", "In 1976",
    and a day and month whose year a nearby date gives ("launched on 9 August 1938 and commissioned on 24 October").

    >>> passage_periods("from Dec 2014 to May 2016; and in 1998–present")
    [Period(start=2014.9166666666667, end=2016.4166666666667), Period(start=1998.0, end=2026.0)]
    >>> passage_periods("Launched on 9 August 1938, commissioned on 24 October, sunk on 5 May.")[1:]
    [Period(start=1938.75, end=1938.8333333333333), Period(start=1939.3333333333333, end=1939.4166666666667)]
    >>> passage_periods("- 20 April 1940 – 25 November: Ernst Bauer")
    [Period(start=1940.25, end=1940.9166666666667)]
    >>> passage_periods("She left on 6 August and returned on 14 September 1941."), passage_periods("On 24 October.")
    ([Period(start=1941.5833333333333, end=1941.6666666666667), Period(start=1941.6666666666667, end=1941.75)], [])
    """
    dated = []
    for m in _RANGE.finditer(text):
        start = _point(m["am"], m["ay"], end=False)
        if m["by"]:
            end, last = _point(m["bm"], m["by"], end=True), (m["by"], m["bm"])
        elif m["present"]:
            end, last = PRESENT, None
        else:
            end, last = _point(m["am"], m["ay"], end=True), (m["ay"], m["am"])
        period = Period(start, end) if end > start else Period(end - 1, start + 1)
        dated.append(_Stated(m.start(), m.end(), period, (m["ay"], m["am"]), last))
    out = {d.at: d.period for d in dated}
    for m in _YEARLESS.finditer(text) if dated else ():
        if any(d.at <= m.start() < d.stop for d in dated):
            continue
        month = m["dm"] or m["md"]
        before = [d for d in dated if d.stop <= m.start() and d.last]
        after = [d for d in dated if d.at >= m.end()]
        if before and re.fullmatch(_DASH, text[before[-1].stop:m.start()]):  # "20 April 1940 – 25 November"
            at, year = before[-1].at, _year_near(month, *before[-1].last, after=True)
            out[at] = Period(out[at].start, max(out[at].end, _point(month, year, end=True)))
        elif after and re.fullmatch(_DASH + rf"(?:{_DAY}\s+)?", text[m.end():after[0].at]):  # "6 August – 14 Sep 1941"
            at, year = after[0].at, _year_near(month, *after[0].first, after=False)
            out[at] = Period(min(out[at].start, _point(month, year, end=False)), out[at].end)
        elif before or after:
            year = (_year_near(month, *before[-1].last, after=True) if before
                    else _year_near(month, *after[0].first, after=False))
            out[m.start()] = Period(_point(month, year, end=False), _point(month, year, end=True))
    return [out[at] for at in sorted(out)]


class _Stated(NamedTuple):
    """A date or range as a text states it: where (`at`, `stop`), the period, and its first and last (year, month);
    `last` is None for an open range ("1998–present")."""

    at: int
    stop: int
    period: Period
    first: tuple[str, str | None]
    last: tuple[str, str | None] | None


def _year_near(month: str, year: str, near: str | None, *, after: bool) -> str:
    """The year of a yearless `month` that comes after (or before) a date in `year` (in month `near`, if given):
    the same year, or the next (previous) one when the month comes earlier (later) than `near`."""
    m, n = _MONTHS[month.lower()[:3]], None if near is None else _MONTHS[near.lower()[:3]]
    if n is not None and (m < n if after else m > n):
        return str(int(year) + (1 if after else -1))
    return year


def question_period(question: str) -> Period | None:
    """The period a question asks about: from its earliest to its latest date; None when it states none.

    "for 14 years beginning in 1974" runs to 1988.

    >>> question_period("Who owned the villa for 14 years beginning in 1974?")
    Period(start=1974.0, end=1988.0)
    >>> question_period("Who is the lead actor in The Dark Knight?") is None
    True

    A decade or a century in a question is a period too (the namesake's era):

    >>> question_period("Where was John Smith (the 1950s painter) born?"), question_period("a 19th-century poet")
    (Period(start=1950.0, end=1960.0), Period(start=1800.0, end=1900.0))
    """
    periods = passage_periods(question) + [_era(m) for m in _ERA.finditer(question)]
    if not periods:
        return None
    start, end = min(p.start for p in periods), max(p.end for p in periods)
    span = _SPAN.search(question)
    if span and len(periods) == 1:
        end = max(end, start + int(span["n"]))
    return Period(start, end)


def _era(m: re.Match[str]) -> Period:
    """The span of an `_ERA` match: its decade, or its century."""
    if m["d"]:
        return Period(float(m["d"]), float(m["d"]) + 10)
    start = (int(m["c"]) - 1) * 100.0
    return Period(start, start + 100)


def question_descriptor(question: str) -> tuple[str, ...]:
    """The words that tell one namesake from another: the lowercase words of the question's parentheticals, less
    particles and dates; () when it has none. A parenthetical of capitalised words names, it does not describe.

    >>> question_descriptor("Where was John Smith (the 1950s painter) born?")
    ('painter',)
    >>> question_descriptor("Mary Raine (née Carter) had what family name?"), question_descriptor("USS Slater (DE-766)")
    ((), ())
    >>> question_descriptor("Which club did Tom Jones (footballer, born 1950) join?")
    ('footballer',)
    """
    words = [w for m in _PAREN.finditer(question) for w in _WORD.findall(m[1])
             if w.islower() and len(w) > 2 and w not in _PARTICLES]
    return tuple(dict.fromkeys(words))


def _stem(word: str) -> str:
    """A word as `described` compares it: lowercase, a plural's "s" dropped ("painters" is "painter")."""
    w = word.lower()
    return w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w


def described(words: Sequence[str], text: str) -> float:
    """The share of the descriptor's `words` that a text states (a plural for a singular); 0 for no words.

    >>> described(("painter",), "He was one of the painters of the 1950s."), described(("painter",), "A politician.")
    (1.0, 0.0)
    """
    if not words:
        return 0.0
    stated = {_stem(w) for w in _WORD.findall(text)}
    return sum(_stem(w) in stated for w in words) / len(words)


class Qualifier(NamedTuple):
    """What a question qualifies its answer by: a period, a namesake's descriptor words, or both."""

    period: Period | None
    words: tuple[str, ...]


def question_qualifier(question: str) -> Qualifier | None:
    """The question's period and descriptor; None when it states neither. A period stated outside the
    parentheticals decides alone: there the parenthetical names the page, the period qualifies the answer.

    >>> question_qualifier("Who lived in the house from 1964 to 1965?")
    Qualifier(period=Period(start=1964.0, end=1966.0), words=())
    >>> question_qualifier("Where was John Smith (the 1950s painter) born?")
    Qualifier(period=Period(start=1950.0, end=1960.0), words=('painter',))
    >>> question_qualifier("Who played Black Tiger (professional wrestling) from 1982 to 1990?")
    Qualifier(period=Period(start=1982.0, end=1991.0), words=())
    >>> question_qualifier("Who is the lead actor in The Dark Knight?") is None
    True
    """
    period, words = question_period(question), question_descriptor(question)
    if words and question_period(_PAREN.sub(" ", question)) is not None:
        words = ()
    return None if period is None and not words else Qualifier(period, words)


def qualifying(qualifier: Qualifier, text: str) -> float:
    """How well a text meets the question's qualifier, in [0, 1]: its `dating` of the period, its `described`
    share of the descriptor, the mean of the two when the question states both."""
    parts = ([dating(qualifier.period, text)] if qualifier.period is not None else []) + (
        [described(qualifier.words, text)] if qualifier.words else [])
    return sum(parts) / len(parts) if parts else 0.0


def period_overlap(a: Period, b: Period) -> float:
    """The share of the shorter period that the other covers, in [0, 1] (the overlap coefficient).

    >>> period_overlap(Period(1964, 1966), Period(1965, 1977))
    0.5
    """
    inter = min(a.end, b.end) - max(a.start, b.start)
    shorter = min(a.end - a.start, b.end - b.start)
    return max(0.0, inter) / shorter if shorter > 0 else 0.0


def edge_only(period: Period, date: Period) -> bool:
    """Whether `date` meets a period longer than two years only in its first or last year (its edges).

    >>> p = Period(1948.0, 1959.0)
    >>> edge_only(p, Period(1958.0, 1959.0)), edge_only(p, Period(1946.0, 1949.0)), edge_only(p, Period(1950.0, 1951.0))
    (True, True, False)
    >>> edge_only(Period(1964.0, 1966.0), Period(1965.0, 1966.0))   # two years: no inside to prefer
    False
    """
    if period.end - period.start <= 2 or period_overlap(period, date) == 0.0:
        return False
    return min(date.end, period.end - 1) - max(date.start, period.start + 1) <= 0


def dating(period: Period, text: str) -> float:
    """How well a text dates something to `period`: the best overlap of any date it states (0 when none), a date
    that meets the period only at its edges weighted by `EDGE_WEIGHT`; a text that states both edges, the year the
    period began and the year it ended, frames it and dates it wholly (`frames`).

    >>> p = question_period("Where was the WUPJ's headquarters from 1959 to 1973?")
    >>> dating(p, "It moved its headquarters to New York in 1959 and to Jerusalem in 1973.")
    1.0
    >>> dating(p, "It moved its headquarters to Jerusalem in 1973."), dating(p, "It was incorporated in 1971.")
    (0.5, 1.0)
    """
    dates = passage_periods(text)
    best = max((period_overlap(period, p) * (EDGE_WEIGHT if edge_only(period, p) else 1.0) for p in dates),
               default=0.0)
    return 1.0 if best < 1.0 and frames(period, dates) else best


def frames(period: Period, dates: Sequence[Period]) -> bool:
    """Whether `dates` meet a period longer than two years at both edges: one in its first year, one in its last
    (the handovers that bound it: "moved to New York in 1959 and to Jerusalem in 1973" for 1959 to 1973).

    >>> p = Period(1959.0, 1974.0)
    >>> frames(p, [Period(1959.0, 1960.0), Period(1973.0, 1974.0)]), frames(p, [Period(1973.0, 1974.0)])
    (True, False)
    """
    edges = [d for d in dates if edge_only(period, d)]
    return any(d.start < period.start + 1 for d in edges) and any(d.end > period.end - 1 for d in edges)


def begins(period: Period, answer: str, text: str) -> bool:
    """Whether a clause of the text states `answer` beginning in the first year (or month) of a period longer than
    two years: it names the answer, every date it states falls there, none ends a range, and no word of an ending
    or of a past state ("left", "sold", "until", "from", "former" …) is in it. Such a date is the period's edge
    (`dating` weighs it half), yet it dates this answer: the holder that came then, not the one that left.

    >>> p = question_period("Which stadium did the Rams play in from 1980 to 1994?")
    >>> text = ("The club played their home games at the Los Angeles Memorial Coliseum before moving into a "
    ...         "reconstructed Anaheim Stadium in Orange County, California in 1980.")
    >>> begins(p, "Anaheim Stadium", text), begins(p, "Los Angeles Memorial Coliseum", text)
    (True, False)
    >>> begins(p, "Anaheim Stadium", "The Rams played at Anaheim Stadium until 1980.")
    False
    >>> begins(question_period("Who coached the team from 2004 to 2007?"), "Yuri Puntus",
    ...        "- Yuri Puntus (1 March 1996 – 30 November 2004)")
    False
    """
    if period.end - period.start <= 2:
        return False
    for sentence in _SENTENCE.split(text):
        for clause in _CLAUSE.split(sentence):
            if mention(answer, clause) != 1.0 or _ENDING.search(clause):
                continue
            if any(_RANGE_END.search(clause[:m.start()]) for m in _RANGE.finditer(clause)):
                continue
            dates = passage_periods(clause)
            if dates and all(_in_first(period, d) for d in dates):
                return True
    return False


def _in_first(period: Period, date: Period) -> bool:
    """Whether `date` falls in the period's first year (its first month, where the question gives one)."""
    if period.start == int(period.start):
        return period.start <= date.start and date.end <= period.start + 1
    return abs(date.start - period.start) < 1e-6 and date.end - date.start < 1 / 12 + 1e-6   # one month at most


def answer_dating(qualifier: Qualifier, answer: str, text: str) -> float:
    """How well a text dates `answer` to the question's qualifier: its `qualifying`, and 1.0 where the question
    states a period alone and the text states the answer beginning in its first year (`begins`).

    >>> q = question_qualifier("Who directed the museum from 1979 to 2010?")
    >>> text = "In 1979, Ernst Aichner became museum director and expanded the collections."
    >>> qualifying(q, text), answer_dating(q, "Ernst Aichner", text)
    (0.5, 1.0)
    """
    score = qualifying(qualifier, text)
    if score < 1.0 and qualifier.period is not None and not qualifier.words and begins(qualifier.period, answer, text):
        return 1.0
    return score


def dated_elsewhere(period: Period, text: str) -> bool:
    """Whether a text states dates and none of them overlaps `period`: it dates what it says to another time.

    >>> p = Period(1903.0, 1913.0)
    >>> dated_elsewhere(p, "In 1923, the Yankees moved to Yankee Stadium."), dated_elsewhere(p, "Hilltop Park, uptown")
    (True, False)
    """
    periods = passage_periods(text)
    return bool(periods) and all(period_overlap(period, q) == 0.0 for q in periods)


def dating_scores(question: str, texts: Sequence[str]) -> list[float] | None:
    """Each text's `dating` of the question's period; None when the question states no period."""
    period = question_period(question)
    if period is None:
        return None
    return [dating(period, t) for t in texts]


def qualifying_scores(question: str, texts: Sequence[str]) -> list[float] | None:
    """Each text's `qualifying` of the question's qualifier; None when the question states none (for a question
    that states a period and no descriptor, `dating_scores`)."""
    qualifier = question_qualifier(question)
    if qualifier is None:
        return None
    return [qualifying(qualifier, t) for t in texts]
