"""ArbitrationDuel on its own: serialisation, the pass-through, the ruling it reads left as it was, and the
one-line refusal of a file written for the single-component ranker."""

import copy
import dataclasses

import pytest
import yaml
from haystack.dataclasses import GeneratedAnswer

from haystack_cfrag.cfrag.components.arbitration_duel import ArbitrationDuel
from haystack_cfrag.cfrag.components.causal_arbitration_ranker import CausalArbitrationRanker
from haystack_cfrag.cfrag.dataclasses import Draft
from haystack_cfrag.cfrag.settings import RankerSettings
from tests import dark_knight as dk
from tests.fakes import HashingDocumentEmbedder, HashingTextEmbedder, KeywordReader


def ruling():
    """The Dark Knight case where volume favours the trap baseline: the ranker proposes a duel."""
    docs = {d.id: d for d in HashingDocumentEmbedder().run(dk.documents())["documents"]}
    reviews = [docs[f"review-{i}"] for i in range(4)]
    drafts = [Draft(index=0, answer="Christian Bale", documents=[docs["cast"]]),
              Draft(index=1, answer="Heath Ledger", documents=reviews)]
    base = GeneratedAnswer(data="Heath Ledger", query=dk.QUESTION, documents=reviews + [docs["cast"]], meta={})
    ranker = CausalArbitrationRanker(text_embedder=HashingTextEmbedder(), evidence="mentions", override_margin=1.0)
    return ranker.run(query=dk.QUESTION, drafts=drafts, answers=[base],
                      queries=[dk.QUESTION, "Who played the villain in The Dark Knight?"])


def test_the_duel_settles_what_the_ranker_left_to_the_margin_rule_and_leaves_the_ruling_as_it_was():
    out = ruling()
    assert out["ruling"].open_duel and out["answer"] == "Heath Ledger" and out["trace"]["decision"] == "baseline"
    assert "duel" not in out["trace"]["override"]             # the ranker alone: as without a duel
    before = copy.deepcopy(out["ruling"].outputs["trace"])
    settled = ArbitrationDuel(chat_generator=KeywordReader(candidates=dk.CANDIDATES)).run(ruling=out["ruling"])
    assert settled["answer"] == "Christian Bale" and settled["trace"]["decision"] == "override"
    assert out["ruling"].outputs["trace"] == before
    off = ArbitrationDuel(enabled=False).run(ruling=out["ruling"])
    assert (off["answer"], off["trace"]) == (out["answer"], out["trace"])


def test_round_trip_and_checks():
    duel = ArbitrationDuel(chat_generator=KeywordReader(candidates=dk.CANDIDATES), reading="support", confirm=True)
    again = ArbitrationDuel.from_dict(duel.to_dict())
    assert (again.enabled, again.reading, again.confirm, again.prompt_template) == (True, "support", True, None)
    assert again.chat_generator.candidates == dk.CANDIDATES
    with pytest.raises(ValueError, match="'enabled' must be true or false"):
        ArbitrationDuel(enabled="yes")


def test_the_rankers_settings_are_one_frozen_dataclass():
    ranker = CausalArbitrationRanker(causal_weight=0.2, coherence_weights=[0.3, 0.7])
    assert ranker.settings == RankerSettings(causal_weight=0.2, coherence_weights=(0.3, 0.7))
    with pytest.raises(dataclasses.FrozenInstanceError):
        ranker.settings.causal_weight = 0.5
    assert CausalArbitrationRanker.from_dict(ranker.to_dict()).settings == ranker.settings


def test_a_file_for_the_single_component_ranker_is_refused_in_one_line_naming_the_change():
    old = yaml.safe_load("""
type: haystack_cfrag.cfrag.components.causal_arbitration_ranker.CausalArbitrationRanker
init_parameters: {override_margin: 1.0, duel: true, duel_confirm: false}
""")
    with pytest.raises(ValueError) as err:
        CausalArbitrationRanker.from_dict(old)
    message = str(err.value)
    assert "\n" not in message and "duel, duel_confirm moved to ArbitrationDuel" in message
    assert "ranker.ruling" in message and "duel.ruling" in message
