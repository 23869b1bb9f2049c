"""CF-RAG's cheaper challengers (issue 61): a subset whose every passage states the baseline's answer is not drafted."""

import asyncio

import pytest
from haystack import Document
from haystack.dataclasses import ChatMessage

from haystack_cfrag.cfrag.components.parallel_draft_generator import SKIPPED, ParallelDraftGenerator
from tests.fakes import KeywordReader

BASELINE = [Document(content="Mount Everest is 8,849 m above sea level."),
            Document(content="Mauna Kea is the tallest from base to summit.")]
SUBSETS = [[Document(content="Mount Everest has two base camps."), Document(content="Mount Everest was named in 1865.")],
           [Document(content="Mauna Kea is the tallest from base to summit.")]]
REPLY = [ChatMessage.from_assistant("Answer: Mount Everest")]


class CountingReader(KeywordReader):
    """A KeywordReader that keeps the prompts it was sent."""

    def __init__(self, candidates, counterfactual_reply=""):
        super().__init__(candidates=candidates, counterfactual_reply=counterfactual_reply)
        self.prompts = []

    def run(self, messages, generation_kwargs=None):
        self.prompts.append(messages[-1].text)
        return super().run(messages, generation_kwargs)


def drafter(**kwargs):
    reader = CountingReader(candidates=["Mount Everest", "Mauna Kea"])
    return ParallelDraftGenerator(chat_generator=reader, max_workers=1, prompt="short", **kwargs), reader


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_subset_that_states_only_the_baselines_answer_costs_no_call(asynchronous):
    gen, reader = drafter(skip_redundant=True)
    kwargs = {"query": "Tallest mountain from base to summit?", "subsets": SUBSETS, "baseline_documents": BASELINE,
              "baseline_replies": REPLY}
    out = asyncio.run(gen.run_async(**kwargs)) if asynchronous else gen.run(**kwargs)
    drafts = {d.index: d for d in out["drafts"]}
    assert drafts[0].parsed_by == SKIPPED and drafts[0].answer == "Mount Everest"
    assert drafts[1].parsed_by != SKIPPED and drafts[1].answer == "Mauna Kea"
    assert out["drafts"][0].index == 2 and out["drafts"][0].meta["cfrag_source"] == "baseline"
    assert reader.prompts and not any("two base camps" in p for p in reader.prompts)  # only Mauna Kea's subset read


def test_off_by_default_every_subset_is_drafted_and_the_setting_round_trips():
    gen, reader = drafter()
    gen.run(query="Tallest mountain from base to summit?", subsets=SUBSETS, baseline_documents=BASELINE,
            baseline_replies=REPLY)
    assert any("two base camps" in p for p in reader.prompts)
    on, _ = drafter(skip_redundant=True)
    assert ParallelDraftGenerator.from_dict(on.to_dict()).skip_redundant is True
    with pytest.raises(ValueError, match="skip_redundant"):
        drafter(skip_redundant="yes")
