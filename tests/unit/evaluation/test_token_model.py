"""The token model: a cost a noisy machine cannot move (tokens priced at each model's measured rates)."""

import pytest

from haystack_cfrag.common.timing import LLMUsage
from haystack_cfrag.evaluation.costs import cost_summary, overhead
from haystack_cfrag.evaluation.token_model import RATES, READER, SMALL, by_component, token_seconds


def test_a_call_on_the_small_model_is_priced_at_its_own_rates():
    reader = {"by_component": {"expander": {"prompt_tokens": 120, "completion_tokens": 50, "model": READER}}}
    small = {"by_component": {"expander": {"prompt_tokens": 120, "completion_tokens": 50, "model": SMALL}}}
    assert token_seconds(small)["all"] < token_seconds(reader)["all"]
    assert token_seconds(reader)["all"] == pytest.approx(120 / RATES[READER][0] + 50 / RATES[READER][1])


def test_a_reused_prefix_is_not_evaluated_again_but_counts_in_the_all_reading():
    llm = {"by_component": {"drafter": {"prompt_tokens": 400, "cached_tokens": 100, "completion_tokens": 5,
                                        "model": READER}}}
    seconds = token_seconds(llm)
    assert seconds["all"] - seconds["evaluated"] == pytest.approx(100 / RATES[READER][0])


def test_records_before_components_were_counted_are_priced_at_the_readers_rates():
    assert token_seconds({"prompt_tokens": 62, "completion_tokens": 0, "scoring_tokens": 62})["all"] == pytest.approx(
        2 * 62 / RATES[READER][0])
    assert token_seconds(None) == {"all": 0.0, "evaluated": 0.0}


def test_usage_counts_each_component_and_its_model():
    usage = LLMUsage()

    class Reply:
        meta = {"usage": {"prompt_tokens": 10, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 4}}}

    usage.add_call(0.1, [Reply()], model=SMALL)
    entry = usage.as_dict()["by_component"][""]
    assert (entry["calls"], entry["prompt_tokens"], entry["cached_tokens"], entry["model"]) == (1, 10, 4, SMALL)
    assert usage.as_dict()["cached_tokens"] == 4


def test_the_cost_summary_gives_both_ratios_and_the_components():
    base = {"seconds": 1.0, "llm": {"by_component": {"generator": {"prompt_tokens": 620, "model": READER}}}}
    more = {"seconds": 3.0, "llm": {"by_component": {
        "generator": {"prompt_tokens": 620, "model": READER},
        "drafter": {"prompt_tokens": 620, "cached_tokens": 310, "model": READER}}}}
    b, m = cost_summary([base]), cost_summary([more])
    b["timed_on"] = m["timed_on"] = {"a": 1.0}
    ratios = overhead(m, b)
    assert ratios["overhead_vs_baseline"] == pytest.approx(3.0)
    assert ratios["token_overhead_vs_baseline"] == pytest.approx({"all": 2.0, "evaluated": 1.5})
    assert set(by_component([more])) == {"generator", "drafter"}
