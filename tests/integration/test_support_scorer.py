"""The reader's support score on the embedded Qwen model: token alignment and the ordering the
causal test relies on (Dark Knight and Gladiator cases).

Run alone: `pytest -q -s tests/integration/test_support_scorer.py` (prints the measured margins
and costs; about a minute on 2 cores).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from haystack import Document

from haystack_cfrag.adapters import factories
from haystack_cfrag.support.backends import LlamaCppBackend
from haystack_cfrag.support.scorer import ReaderSupportScorer
from tests import dark_knight as dk

GLADIATOR_QUESTION = "Who is the lead actor in Gladiator?"
GLADIATOR_VILLAIN = "Who played the villain in Gladiator?"
GLADIATOR_REVIEWS = [
    "Review: Joaquin Phoenix is unforgettable as Commodus in Gladiator; the actor plays the "
    "villainous emperor with a sulking, dangerous menace that steals every scene.",
    "Review: Gladiator's villain is its best part. Phoenix's Commodus, jealous and cruel, is the "
    "performance critics remember, and the actor earned an Oscar nomination for the role.",
    "Review: Watching Gladiator again, the villain still dominates: Joaquin Phoenix as Commodus "
    "makes the emperor pathetic and terrifying at once.",
]
GLADIATOR_CAST = (
    "Cast of Gladiator (2000): lead actor Russell Crowe stars as Maximus, the general turned "
    "gladiator; the lead role of the film belongs to Crowe, who won the Oscar for Best Actor."
)

CASES = {
    "dark_knight": (
        dk.QUESTION,
        "Who played the villain in The Dark Knight?",
        "Christian Bale",
        [dk.CAST],
        dk.REVIEWS,
    ),
    "gladiator": (
        GLADIATOR_QUESTION,
        GLADIATOR_VILLAIN,
        "Russell Crowe",
        [GLADIATOR_CAST],
        GLADIATOR_REVIEWS,
    ),
}


@pytest.fixture(scope="module")
def generator():
    gen = factories.chat_generator(n_ctx=2048)  # the package's factory: LlamaCppLogprobsChatGenerator
    gen.warm_up()
    return gen


@pytest.fixture(scope="module")
def scorer(generator):
    s = ReaderSupportScorer(chat_generator=generator, erased_contrast=True)
    s.warm_up()
    return s


def _manual_logprobs(llm, prompt_ids, answer_ids):
    """By hand: evaluate the prompt, then each answer token alone; log-softmax of the raw logits."""
    llm.reset()
    llm.eval(prompt_ids[:-1])
    out = []
    for token, target in zip([prompt_ids[-1]] + answer_ids[:-1], answer_ids, strict=True):
        llm.eval([token])
        row = np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(llm.n_vocab(),)).astype(np.float64)
        out.append(row[target] - (row.max() + math.log(np.exp(row - row.max()).sum())))
    return out


def test_token_alignment_matches_a_hand_computed_case(scorer, generator):
    """log P("Heath Ledger" | cast prompt) (an unlikely answer: far-from-zero values) from the backend equals a
    token-by-token computation from the raw logits, in a second model instance; a batched logits_all pass agrees
    to llama.cpp's batch-size noise; and the value does not change when the prefix is reused."""
    from llama_cpp import Llama

    backend = scorer._backend
    assert isinstance(backend, LlamaCppBackend)
    prompt = scorer._prompt(dk.QUESTION, "[1] " + dk.CAST)
    prompt_ids, answer_ids = backend.encode(prompt, "Heath Ledger")
    assert len(answer_ids) >= 2
    assert backend.render(prompt).endswith("<|im_start|>assistant\n")  # scored as the assistant's reply
    got = backend.answer_logprobs(prompt, "Heath Ledger")
    assert min(got.token_logprobs) < -1.0

    path = generator._model.model_path
    fresh = Llama(
        model_path=path, n_ctx=1024, n_threads=generator.model_kwargs.get("n_threads"), verbose=False
    )
    manual = _manual_logprobs(fresh, prompt_ids, answer_ids)
    assert np.allclose(got.token_logprobs, manual, atol=1e-4), (got.token_logprobs, manual)

    batched = Llama(
        model_path=path,
        n_ctx=1024,
        n_threads=generator.model_kwargs.get("n_threads"),
        verbose=False,
        logits_all=True,
    )
    ids = prompt_ids + answer_ids
    batched.eval(ids)
    rows = batched.scores[len(prompt_ids) - 1 : len(ids) - 1].astype(np.float64)
    lse = rows.max(axis=1) + np.log(np.exp(rows - rows.max(axis=1, keepdims=True)).sum(axis=1))
    full = rows[np.arange(len(answer_ids)), answer_ids] - lse
    assert np.allclose(got.token_logprobs, full, atol=0.5), (got.token_logprobs, full.tolist())
    # an off-by-one (row i for token i) reads other numbers entirely
    shifted = batched.scores[len(prompt_ids) : len(ids)].astype(np.float64)
    wrong = shifted[np.arange(len(answer_ids)), answer_ids] - (
        shifted.max(axis=1) + np.log(np.exp(shifted - shifted.max(axis=1, keepdims=True)).sum(axis=1))
    )
    assert not np.allclose(got.token_logprobs, wrong, atol=0.5)

    backend.answer_logprobs(prompt, "Christian Bale")
    again = backend.answer_logprobs(prompt, "Heath Ledger")  # prefix reused this time
    assert again.tokens_reused == len(prompt_ids) - 1 and again.tokens_evaluated == len(answer_ids)
    assert again.token_logprobs == pytest.approx(got.token_logprobs, abs=1e-4)
    echo = batched.create_completion(
        batched.detokenize(ids, special=True).decode(), max_tokens=1, echo=True, logprobs=1, temperature=0.0
    )["choices"][0]["logprobs"]["token_logprobs"]
    print(
        f"\nalignment: ours {np.round(got.token_logprobs, 3).tolist()}, by hand {np.round(manual, 3).tolist()}, "
        f"one batch {np.round(full, 3).tolist()}, create_completion(echo=True) "
        f"{np.round(echo[len(prompt_ids) : len(ids)], 3).tolist()}"
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_cast_evidence_makes_the_lead_specific_to_the_question(scorer, case):
    """The ordering the method relies on: with the cast passage the lead's name is more specific
    to "who is the lead" (against "who played the villain") than with the reviews."""
    question, villain_question, lead, cast, reviews = CASES[case]
    rows = {}
    for name, texts in (("cast", cast), ("reviews", reviews)):
        docs = [Document(content=t) for t in texts]
        out = scorer.run(
            query=question, answers=[lead], documents=docs, counterfactual_queries=[villain_question]
        )
        trace = out["trace"]
        rows[name] = out
        print(
            f"\n{case} / {name}: support {out['support'][0]:.3f}, under the villain question "
            f"{out['counterfactual_support'][0][0]:.3f}, margin {out['margin'][0]:.3f}, erased "
            f"{out['erased_support'][0]:.3f}, pmi {out['pmi'][0]:.3f} | calls {trace['calls']}, tokens evaluated "
            f"{trace['tokens_evaluated']}, reused {trace['tokens_reused']}, "
            f"{[c['seconds'] for c in trace['per_call']]} s per call"
        )
    assert rows["cast"]["margin"][0] > rows["reviews"]["margin"][0]
    assert rows["cast"]["support"][0] > rows["reviews"]["support"][0]
    assert rows["cast"]["pmi"][0] > 0  # the cast list makes the lead more likely than no evidence
    assert rows["cast"]["trace"]["per_call"][1]["tokens_reused"] > 0  # q' reuses the evidence block


def test_transformers_backend_on_a_tiny_gpt2(tmp_path):
    """The transformers path through the package's factory (`hf:` spec): the answer's log-probs
    equal a forward pass by hand over the same ids, read one row earlier than each answer token."""
    import torch

    from haystack_cfrag.support.backends import TransformersBackend
    from tests.integration.tiny_models import tiny_chat_model

    gen = factories.chat_generator("hf:" + str(tiny_chat_model(tmp_path / "lm")), max_tokens=4)
    s = ReaderSupportScorer(chat_generator=gen)
    out = s.run(
        query="who is the lead actor ?",
        answers=["christian bale"],
        documents=[Document(content="christian bale")],
        counterfactual_queries=["who is the villain ?"],
    )
    backend = s._backend
    assert isinstance(backend, TransformersBackend) and out["trace"]["backend"] == "transformers"
    prompt = s._prompt("who is the lead actor ?", "[1] christian bale")
    text = backend.render(prompt) + "christian bale"
    ids = backend.tokenizer(text, add_special_tokens=False)["input_ids"]
    vocab = backend.tokenizer.get_vocab()
    assert ids[-2:] == [vocab["christian"], vocab["bale"]]
    with torch.no_grad():
        logits = backend.model(input_ids=torch.tensor([ids])).logits[0].double()
    lp = torch.log_softmax(logits, dim=-1)
    by_hand = [lp[len(ids) - 3, ids[-2]].item(), lp[len(ids) - 2, ids[-1]].item()]
    assert out["support"][0] == pytest.approx(sum(by_hand) / 2, abs=1e-5)
    assert out["margin"][0] == pytest.approx(out["support"][0] - out["counterfactual_support"][0][0])


def test_the_gates_reading_of_the_readers_own_reply_gives_margin_and_rank_from_the_same_logits(scorer, generator):
    """The gate's one scoring (issue 60): the answer the reader just wrote, read under its own prompt, is its first
    choice at the first token (rank 0), its top-1/top-2 gap is that row's, and the support is score_reply's."""
    from haystack.dataclasses import ChatMessage

    messages = [ChatMessage.from_user(f"Answer with a name only.\n[1] {dk.CAST}\nQuestion: {dk.QUESTION}")]
    reply = generator.run(messages)["replies"][0].text.strip()
    reading = scorer.read_reply(messages, reply)
    assert reading["rank"] == 0 and reading["margin"] > 0 and reading["min_margin"] <= reading["margin"]
    assert reading["support"] == pytest.approx(scorer.score_reply(messages, reply), abs=1e-3)
    usage = generator.run(messages)["replies"][0].meta["usage"]
    assert usage["prompt_tokens_details"]["cached_tokens"] >= usage["prompt_tokens"] - 2  # the same prompt: reused


def test_a_reply_read_under_the_drafts_prompt_reads_only_the_answer_after_the_draft(scorer, generator):
    """The duel's "support_reply" reading: a challenger drafted from one passage is scored under the very prompt its
    draft was read with (`SHORT_DRAFT_PROMPT`, "Answer:"), so the reader's kept state serves and only the answer's
    tokens (and the prefix's) are evaluated; a passage it has not read costs the whole prompt."""
    from haystack.dataclasses import ChatMessage

    from haystack_cfrag.cfrag.prompts import SHORT_DRAFT_PROMPT, render_plain_evidence

    drafted = SHORT_DRAFT_PROMPT.format(query=dk.QUESTION, evidence=render_plain_evidence([Document(content=dk.CAST)]))
    generator.run([ChatMessage.from_user(drafted)])
    after_draft = scorer.read_reply(drafted, " Christian Bale", "Answer:")
    unread = SHORT_DRAFT_PROMPT.format(query=dk.QUESTION, evidence=render_plain_evidence(
        [Document(content=GLADIATOR_CAST)]))
    cold = scorer.read_reply(unread, " Christian Bale", "Answer:")
    print(f"\ntokens evaluated: after the draft {after_draft['tokens_evaluated']}, unread {cold['tokens_evaluated']}")
    assert after_draft["tokens_evaluated"] <= 8 < cold["tokens_evaluated"]


def test_a_reply_read_as_the_reader_wrote_it_gives_the_scorings_numbers(scorer, generator):
    """`read_tokens`: the factory's reader keeps each written token's reading; where its reply is "Answer:" then the
    answer, the gate's reading from those reads is the scoring's, number for number, with nothing evaluated."""
    from haystack.dataclasses import ChatMessage

    from haystack_cfrag.adapters.token_reads import META_KEY
    from haystack_cfrag.cascade.math import answer_of
    from haystack_cfrag.cfrag.prompts import SHORT_DRAFT_PROMPT, render_plain_evidence
    from haystack_cfrag.common.replies import reply_text

    assert generator.read_tokens > 0
    read = 0
    for passages, question in ((dk.REVIEWS + [dk.CAST], dk.QUESTION), (GLADIATOR_REVIEWS + [GLADIATOR_CAST],
                                                                     GLADIATOR_QUESTION)):
        prompt = [ChatMessage.from_user(SHORT_DRAFT_PROMPT.format(
            query=question, evidence=render_plain_evidence([Document(content=p) for p in passages])))]
        reply = generator.run(prompt)["replies"][0]
        answer = reply_text("Answer:", answer_of(reply.text or "", "Answer:"))
        generated = scorer.read_generated(prompt, answer, "Answer:", reply.meta.get(META_KEY))
        scored = scorer.read_reply(prompt, answer, "Answer:")
        print(f"\n{answer!r}: from the reads {generated}, scored {scored}")
        if generated is not None:
            read += 1
            assert generated["tokens_evaluated"] == 0 < scored["tokens_evaluated"]
            assert {k: generated[k] for k in ("support", "margin", "min_margin", "rank")} == {
                k: scored[k] for k in ("support", "margin", "min_margin", "rank")}
    assert read  # the reader answers in its format here: at least one reply is read from its reads
