"""`prompt_template` per component: serialised, checked for its placeholders, sent as written;
None sends exactly the built-in prompts of `haystack_cfrag.cfrag.prompts`."""

from __future__ import annotations

from copy import deepcopy
from typing import Any

import pytest
from haystack import Document, component, default_from_dict, default_to_dict
from haystack.dataclasses import ChatMessage, GeneratedAnswer

from haystack_cfrag.cfrag.components.arbitration_duel import ArbitrationDuel
from haystack_cfrag.cfrag.components.causal_arbitration_ranker import CausalArbitrationRanker
from haystack_cfrag.cfrag.components.counterfactual_query_expander import CounterfactualQueryExpander
from haystack_cfrag.cfrag.components.counterfactual_rag import CounterfactualRAG
from haystack_cfrag.cfrag.components.parallel_draft_generator import ParallelDraftGenerator
from haystack_cfrag.cfrag.dataclasses import Draft
from haystack_cfrag.cfrag.prompts import (
    COUNTERFACTUAL_LINES_PROMPT,
    COUNTERFACTUAL_PROMPT,
    DRAFT_PROMPT,
    SHORT_DRAFT_PROMPT,
    SYNTHESIS_PROMPT,
    render_drafts,
    render_evidence,
    render_plain_evidence,
)
from tests import dark_knight as dk
from tests.fakes import HashingDocumentEmbedder, HashingTextEmbedder, KeywordReader


@component
class PromptRecorder:
    """Replies `reply` to every call and records the prompt it was sent."""

    def __init__(self, reply: str = "Answer: Christian Bale") -> None:
        self.reply = reply
        self.prompts: list[str] = []

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage]) -> dict[str, Any]:
        self.prompts.append(messages[-1].text or "")
        return {"replies": [ChatMessage.from_assistant(self.reply)]}

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, reply=self.reply)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PromptRecorder:
        return default_from_dict(cls, data)


CF_REPLY = "Who played the villain in The Dark Knight?\nWho directed The Dark Knight?"
CF_TEMPLATE = "List {n_candidates} questions near «{query}» whose answers differ, one per line."
DRAFT_TEMPLATE = "Passages:\n{evidence}\nQ: {query}\nAnswer: <short>"
SYNTHESIS_TEMPLATE = "Pick one of these for «{query}»:\n{drafts}\nAnswer:"
DUEL_TEMPLATE = "Read:\n{evidence}Which answers «{query}»? Answer:"


def round_trip(comp: Any) -> Any:
    data = comp.to_dict()
    again = type(comp).from_dict(deepcopy(data))
    assert again.to_dict() == data
    return again


def docs() -> dict[str, Document]:
    return {d.id: d for d in HashingDocumentEmbedder().run(dk.documents())["documents"]}


# ---------------------------------------------------------------- overrides: kept, serialised, sent
def test_expander_override_round_trips_and_is_sent():
    expander = CounterfactualQueryExpander(chat_generator=PromptRecorder(reply=CF_REPLY), n_counterfactuals=2,
                                           prompt_style="lines", similarity_threshold=0.1,
                                           prompt_template=CF_TEMPLATE)
    again = round_trip(expander)
    assert again.prompt_template == CF_TEMPLATE
    out = again.run(query=dk.QUESTION)
    assert again.chat_generator.prompts == [CF_TEMPLATE.format(n_candidates=2, query=dk.QUESTION)]
    assert len(out["counterfactuals"]) == 2          # the reply is still read as prompt_style says


def test_drafter_override_round_trips_is_sent_and_leaves_the_baseline_standard_rags():
    d = docs()
    drafter = ParallelDraftGenerator(chat_generator=PromptRecorder(), prompt_template=DRAFT_TEMPLATE, max_workers=1)
    again = round_trip(drafter)
    assert again.prompt_template == DRAFT_TEMPLATE
    top = [d["review-0"], d["cast"]]
    drafts = again.run(query=dk.QUESTION, subsets=[[d["cast"]]], baseline_documents=top)["drafts"]
    assert [x.answer for x in drafts] == ["Christian Bale", "Christian Bale"]
    baseline, challenger = again.chat_generator.prompts
    assert baseline == SHORT_DRAFT_PROMPT.format(query=dk.QUESTION, evidence=render_plain_evidence(top))
    assert challenger == DRAFT_TEMPLATE.format(query=dk.QUESTION, evidence=render_evidence([d["cast"]], 2000))


def test_ranker_overrides_round_trip_and_are_sent():
    d = docs()
    ranker = CausalArbitrationRanker(synthesizer=PromptRecorder(), text_embedder=HashingTextEmbedder(),
                                     prompt_template=SYNTHESIS_TEMPLATE)
    again = round_trip(ranker)
    duel = round_trip(ArbitrationDuel(chat_generator=PromptRecorder(), prompt_template=DUEL_TEMPLATE))
    assert (again.prompt_template, duel.prompt_template) == (SYNTHESIS_TEMPLATE, DUEL_TEMPLATE)
    drafts = [Draft(index=0, answer="Christian Bale", documents=[d["cast"]]),
              Draft(index=1, answer="Heath Ledger", documents=[d["review-0"]])]
    out = again.run(query=dk.QUESTION, drafts=drafts)
    assert out["trace"]["decision"] == "synthesis"
    sent = again.synthesizer.prompts[0]
    assert sent.startswith(f"Pick one of these for «{dk.QUESTION}»:\n1. Answer: ") and sent.endswith("\nAnswer:")

    out, reader = duel_case(prompt_template=DUEL_TEMPLATE)
    shown = [d[i] for i in out["trace"]["override"]["duel"]["passages"]]
    assert reader.prompts == [DUEL_TEMPLATE.format(query=dk.QUESTION, evidence=render_plain_evidence(order))
                              for order in (shown, shown[::-1])]   # the duel, then its confirming reading


def test_counterfactual_rag_passes_its_templates_to_its_components_and_round_trips():
    templates = {"counterfactual_prompt_template": CF_TEMPLATE, "draft_prompt_template": DRAFT_TEMPLATE,
                 "synthesis_prompt_template": SYNTHESIS_TEMPLATE, "duel_prompt_template": DUEL_TEMPLATE}
    rag = CounterfactualRAG(chat_generator=PromptRecorder(), text_embedder=HashingTextEmbedder(), n_counterfactuals=3,
                            **templates)
    again = round_trip(rag)
    assert {key: again.to_dict()["init_parameters"][key] for key in templates} == templates
    expander, drafter, ranker, duel = (again.pipeline.get_component(n)
                                       for n in ("expander", "drafter", "ranker", "duel"))
    assert (expander.prompt_template, drafter.prompt_template) == (CF_TEMPLATE, DRAFT_TEMPLATE)
    assert (ranker.prompt_template, duel.prompt_template) == (SYNTHESIS_TEMPLATE, DUEL_TEMPLATE)
    cast = docs()["cast"]
    again.run(query=dk.QUESTION, documents=[cast])
    sent = again.chat_generator.prompts
    assert sent[0] == CF_TEMPLATE.format(n_candidates=3, query=dk.QUESTION)
    assert DRAFT_TEMPLATE.format(query=dk.QUESTION, evidence=render_plain_evidence([cast])) in sent
    # None (the default) keeps the built-in prompts; a bad template is refused by its component
    default = CounterfactualRAG(chat_generator=PromptRecorder())
    assert all(default.to_dict()["init_parameters"][key] is None for key in templates)
    assert default.pipeline.get_component("drafter").prompt_template is None
    with pytest.raises(ValueError, match="ParallelDraftGenerator: 'prompt_template' lacks the placeholder"):
        CounterfactualRAG(chat_generator=PromptRecorder(), draft_prompt_template="Answer {query} in one word.")


# ---------------------------------------------------------------- checked at init
@pytest.mark.parametrize(
    ("build", "template", "missing"),
    [
        (lambda t: CounterfactualQueryExpander(chat_generator=PromptRecorder(), prompt_template=t),
         "Questions near {query}, one per line.", "n_candidates"),
        (lambda t: ParallelDraftGenerator(chat_generator=PromptRecorder(), prompt_template=t),
         "Answer {query} in one word.", "evidence"),
        (lambda t: CausalArbitrationRanker(prompt_template=t), "Pick the best draft:\n{drafts}", "query"),
        (lambda t: ArbitrationDuel(chat_generator=PromptRecorder(), prompt_template=t), "Read {evidence}", "query"),
    ],
    ids=["expander", "drafter", "ranker-synthesis", "duel"],
)
def test_a_missing_placeholder_is_rejected_in_one_line_naming_it_and_the_component(build, template, missing):
    with pytest.raises(ValueError) as err:
        build(template)
    message = str(err.value)
    assert "\n" not in message and f"{{{missing}}}" in message
    assert message.split(":")[0] in ("CounterfactualQueryExpander", "ParallelDraftGenerator",
                                     "CausalArbitrationRanker", "ArbitrationDuel")


def test_unknown_placeholders_and_stray_braces_are_rejected():
    for bad in ("{query} {n_candidates} as {format}", '{query} {n_candidates} {"question": "..."}',
                "{query} {n_candidates} }", "{query.__class__} {n_candidates}"):
        with pytest.raises(ValueError, match="CounterfactualQueryExpander: 'prompt_template'"):
            CounterfactualQueryExpander(chat_generator=PromptRecorder(), prompt_template=bad)
    with pytest.raises(ValueError, match="non-empty string"):
        ParallelDraftGenerator(chat_generator=PromptRecorder(), prompt_template="")
    # literal braces written doubled are fine, as in the built-in JSON prompt
    CounterfactualQueryExpander(chat_generator=PromptRecorder(),
                                prompt_template='{query}: give {n_candidates} as {{"counterfactuals": [...]}}')


# ---------------------------------------------------------------- None: today's prompts, byte for byte
@pytest.mark.parametrize(("style", "template", "asked"), [("json", COUNTERFACTUAL_PROMPT, 4),
                                                           ("lines", COUNTERFACTUAL_LINES_PROMPT, 2)])
def test_default_expander_prompt_is_the_built_in_one(style, template, asked):
    gen = PromptRecorder(reply="")
    CounterfactualQueryExpander(chat_generator=gen, n_counterfactuals=2, prompt_style=style).run(query=dk.QUESTION)
    assert gen.prompts == [template.format(query=dk.QUESTION, n_candidates=asked)]


@pytest.mark.parametrize("prompt", ["app_g", "short"])
def test_default_draft_prompts_are_the_built_in_ones(prompt):
    d = docs()
    subset, top = [d["cast"], d["review-1"]], [d["review-0"], d["cast"]]
    gen = PromptRecorder()
    ParallelDraftGenerator(chat_generator=gen, prompt=prompt, max_workers=1, max_evidence_chars=40).run(
        query=dk.QUESTION, subsets=[subset], baseline_documents=top)
    challenger = (DRAFT_PROMPT.format(query=dk.QUESTION, evidence=render_evidence(subset, 40)) if prompt == "app_g"
                  else SHORT_DRAFT_PROMPT.format(query=dk.QUESTION, evidence=render_plain_evidence(subset)))
    assert gen.prompts == [SHORT_DRAFT_PROMPT.format(query=dk.QUESTION, evidence=render_plain_evidence(top)),
                           challenger]


def test_default_synthesis_and_duel_prompts_are_the_built_in_ones():
    d = docs()
    synth = PromptRecorder()
    drafts = [Draft(index=0, answer="Christian Bale", rationale="cast list", documents=[d["cast"]]),
              Draft(index=1, answer="Heath Ledger", rationale="reviews", documents=[d["review-0"]])]
    trace = CausalArbitrationRanker(synthesizer=synth, text_embedder=HashingTextEmbedder()).run(
        query=dk.QUESTION, drafts=drafts)["trace"]
    assert trace["decision"] == "synthesis"
    by_index = {e["index"]: e for e in trace["drafts"]}
    lines = render_drafts([(by_index[i]["answer"], by_index[i]["rationale"], by_index[i]["psi"])
                           for i in trace["ranking"][:3]])
    assert synth.prompts == [SYNTHESIS_PROMPT.format(query=dk.QUESTION, drafts=lines)]

    out, reader = duel_case()
    shown = [d[i] for i in out["trace"]["override"]["duel"]["passages"]]
    assert reader.prompts == [SHORT_DRAFT_PROMPT.format(query=dk.QUESTION, evidence=render_plain_evidence(order))
                              for order in (shown, shown[::-1])]


def duel_case(**duel_kwargs: Any) -> tuple[dict[str, Any], KeywordReader]:
    """The Dark Knight duel of test_default_mechanisms: a trap baseline, a decisive challenger."""
    d = docs()
    reviews = [d[f"review-{i}"] for i in range(4)]
    reader = KeywordReader(candidates=dk.CANDIDATES)
    ranker = CausalArbitrationRanker(text_embedder=HashingTextEmbedder(), evidence="mentions", override_margin=1.0)
    drafts = [Draft(index=0, answer="Christian Bale", documents=[d["cast"]]),
              Draft(index=1, answer="Heath Ledger", documents=reviews)]
    base = GeneratedAnswer(data="Heath Ledger", query=dk.QUESTION, documents=reviews + [d["cast"]], meta={})
    queries = [dk.QUESTION, "Who played the villain in The Dark Knight?", "Who directed The Dark Knight?"]
    ruling = ranker.run(query=dk.QUESTION, drafts=drafts, answers=[base], queries=queries)["ruling"]
    out = ArbitrationDuel(chat_generator=reader, **duel_kwargs).run(ruling=ruling)
    assert out["trace"]["decision"] in ("override", "baseline") and "duel" in out["trace"]["override"]
    return out, reader
