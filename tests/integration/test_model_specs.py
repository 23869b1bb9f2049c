"""The model specs other than the embedded defaults: a cross-encoder scorer and a transformers generator.

Tiny random models built locally stand in for hub models (these machines reach no hub).
"""

from haystack import Document
from haystack.dataclasses import ChatMessage

from haystack_cfrag import CausalArbitrationRanker, Draft
from haystack_cfrag.adapters import factories
from tests.integration.tiny_models import tiny_chat_model, tiny_cross_encoder

QUESTION = "Who is the lead actor in The Dark Knight?"


def test_cross_encoder_scorer_feeds_the_ranker(tmp_path):
    scorer = factories.scorer(str(tiny_cross_encoder(tmp_path / "ce")))
    scorer.warm_up()
    docs = [Document(id="cast", content="christian bale is the lead actor"),
            Document(id="review", content="heath ledger is the joker villain")]
    ranker = CausalArbitrationRanker(scorer=scorer, text_embedder=factories.text_embedder())
    ranker.warm_up()
    out = ranker.run(query=QUESTION, drafts=[Draft(index=0, answer="christian bale", documents=docs[:1]),
                                             Draft(index=1, answer="heath ledger", documents=docs[1:])],
                     queries=[QUESTION, "Who played the villain in The Dark Knight?"])
    trace = out["trace"]
    assert trace["scorer"] == "cross-encoder"
    for d in trace["drafts"]:
        for e in d["evidence"]:
            assert 0.0 <= e["relevance"] <= 1.0 and e["max_counterfactual_relevance"] is not None


def test_transformers_chat_generator_from_a_local_folder(tmp_path):
    gen = factories.chat_generator(f"hf:{tiny_chat_model(tmp_path / 'lm')}", max_tokens=4)
    gen.warm_up()
    reply = gen.run(messages=[ChatMessage.from_user("who is the lead actor ?")])["replies"][0]
    assert isinstance(reply.text, str)  # random weights: any text, but the whole path ran
