"""Dates a text states, read by `common.qualifiers.passage_periods`: the yearless day and month."""

import pytest

from haystack_cfrag.common.qualifiers import Period, passage_periods


def month(year: int, m: int) -> Period:
    """Month `m` (1-12) of `year` as a period."""
    return Period(year + (m - 1) / 12, year + m / 12)


@pytest.mark.parametrize(("text", "expected"), [
    # the year of the date before; the next year when the month comes earlier
    ("Launched on 9 August 1938 and commissioned on 24 October.", [month(1938, 8), month(1938, 10)]),
    ("Appointed on 23 September 2008, sacked on 15 February.", [month(2008, 9), month(2009, 2)]),
    # a bare year before gives its year; month-day order and ordinals read the same
    ("The 2018 season: on August 21st the coach was fired.", [Period(2018, 2019), month(2018, 8)]),
    ("In 1940, on the 3rd of May, she sailed.", [Period(1940, 1941), month(1940, 5)]),
    # none before: the year of the date after (the previous year when the month comes later)
    ("She left on 6 August and returned on 14 September 1941.", [month(1941, 8), month(1941, 9)]),
    ("Sailed on 20 December; arrived in February 1942.", [month(1941, 12), month(1942, 2)]),
    # a yearless end or start of a range extends the range
    ("- 20 April 1940 – 25 November: Ernst Bauer", [Period(1940 + 3 / 12, 1940 + 11 / 12)]),
    ("- 6 August – 14 September 1941: Heinrich Schuch", [Period(1941 + 7 / 12, 1941 + 9 / 12)]),
    # a dated day is read once; a lower-case "may" is a verb; no year anywhere dates nothing
    ("On 24 October 1938 she was commissioned.", [month(1938, 10)]),
    ("In 1990 he may 5 times have won.", [Period(1990, 1991)]),
    ("Commissioned on 24 October with Liebe in command.", []),
])
def test_a_day_and_month_without_a_year_are_dated_by_the_text_around_them(text, expected):
    def rounded(periods):
        return [(round(p.start, 9), round(p.end, 9)) for p in periods]

    assert rounded(passage_periods(text)) == rounded(expected)
