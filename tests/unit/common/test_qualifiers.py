"""Dates a text states, read by `common.qualifiers.passage_periods` (the yearless day and month), and a question's
qualifier: its period, a decade or century, a namesake's descriptor (`question_qualifier`, `qualifying`)."""

import pytest

from haystack_cfrag.common.qualifiers import (
    Period,
    Qualifier,
    dating_scores,
    passage_periods,
    qualifying_scores,
    question_descriptor,
    question_period,
    question_qualifier,
)


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


# ------------------------------------------------------------------ a namesake's qualifier


@pytest.mark.parametrize(("question", "words"), [
    ("Where was John Smith (the 1950s painter) born?", ("painter",)),
    ("Which club did Tom Jones (footballer, born 1950) join?", ("footballer",)),
    ("Where did Matthew McKay (American football) go to college?", ("football",)),
    # a parenthetical that names rather than describes: no descriptor (TimeQA's own questions)
    ("Mary Raine (née Carter) had, from Dec 1943 to Dec 1944, what family name?", ()),
    ("From Feb 1944 to Mar 1951, in what country was the USS Slater (DE-766) registered?", ()),
    ("Love (Indianapolis) was exhibited where from 1970 to 1971?", ()),
    ("Who was CEO of DIPLOCAT (The Public Diplomacy Council of Catalonia) from Feb 2013 to Oct 2017?", ()),
    ("Which Bruegel painted The Hunters in the Snow (1565)?", ()),
    ("Who is the lead actor in The Dark Knight?", ()),
])
def test_a_namesakes_descriptor_is_the_lowercase_words_of_the_questions_parenthetical(question, words):
    assert question_descriptor(question) == words


@pytest.mark.parametrize(("question", "period"), [
    ("Where was John Smith (the 1950s painter) born?", Period(1950, 1960)),
    ("Which 18th-century canal was longer?", Period(1700, 1800)),
    ("Who was the 1st century bishop?", Period(0, 100)),
    ("Which park from 1903 to 1912?", Period(1903, 1913)),
    ("Who had 1950 votes?", Period(1950, 1951)),     # a bare year stays a year (as before)
])
def test_a_questions_decade_or_century_is_its_period(question, period):
    assert question_period(question) == period


def test_a_decade_in_a_passage_dates_nothing_so_broad_a_span_would_date_every_question():
    assert passage_periods("He painted mostly in the 1950s and the 19th century.") == []


def test_a_passage_qualifies_by_its_date_and_by_the_descriptor_the_mean_where_the_question_states_both():
    painter = "John Smith (1921 - 1987) was an English painter of harbours."
    politician = "John Smith (1938 - 1994) was a Scottish Labour politician, leader of the party."
    footballer = "John Smith (born 1990) is a footballer who plays as a striker."
    texts = [painter, politician, footballer]
    assert qualifying_scores("Where was John Smith (the 1950s painter) born?", texts) == [1.0, 0.5, 0.0]
    assert qualifying_scores("Where was John Smith (painter) born?", texts) == [1.0, 0.0, 0.0]
    assert question_qualifier("Where was John Smith born?") is None
    assert qualifying_scores("Where was John Smith born?", texts) is None


def test_for_a_period_alone_qualifying_is_dating():
    question = "Who lived in the house from 1964 to 1965?"
    texts = ["- 1964-1965 - Jacqueline Kennedy", "- 1965-1976 - Michael Whitney Straight", "In 1976, Yolande Fox"]
    assert question_qualifier(question) == Qualifier(Period(1964, 1966), ())
    assert qualifying_scores(question, texts) == dating_scores(question, texts) == [1.0, 0.5, 0.0]


@pytest.mark.parametrize(("question", "qualifier"), [
    ("Where was John Smith (the 1950s painter) born?", Qualifier(Period(1950, 1960), ("painter",))),
    ("Where was John Smith (painter) born?", Qualifier(None, ("painter",))),
    # a period outside the parenthetical decides alone: the parenthetical names the page (TimeQA's Black Tiger)
    ("Who had a successful run at Black Tiger (professional wrestling) from 2005 to Apr 2009?",
     Qualifier(Period(2005, 2009 + 4 / 12), ())),
    ("Which club did Tom Jones (footballer) join in 1975?", Qualifier(Period(1975, 1976), ())),
])
def test_the_questions_qualifier_a_period_outside_the_parenthetical_deciding_alone(question, qualifier):
    assert question_qualifier(question) == qualifier
