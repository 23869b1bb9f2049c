"""ReaderSupportScorer's component contract with a fake reader, and the backends' refusals."""

from __future__ import annotations

import asyncio
import copy
import json
import math
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest
import yaml
from haystack import Document, component, default_from_dict, default_to_dict
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.dataclasses import ChatMessage
from haystack.utils import Secret

from haystack_cfrag.adapters.llama_cpp_states import SCORER_PREFIX_STATES, prefix_reuse
from haystack_cfrag.pipelines.loading import pipeline_from_dict
from haystack_cfrag.support.backends import (
    AnswerLogprobs,
    NoPromptLogprobsError,
    OpenAICompatibleBackend,
    TransformersBackend,
    UnsupportedGeneratorError,
    backend_for,
    chat_messages,
)
from haystack_cfrag.support.scorer import SUPPORT_PROMPT, ReaderSupportScorer
from tests import dark_knight as dk

QUESTION = dk.QUESTION
VILLAIN = "Who played the villain in The Dark Knight?"


# ------------------------------------------------------------------ a fake reader
class FakeBackend:
    """Each answer word costs −0.5 when the evidence names it, −4 otherwise, and −1.5 more when
    the question asks for the villain and the word is not in a passage that says "villain"
    (a caricature of a reader whose evidence is question-specific). Prefix reuse is counted
    in characters, as llama.cpp counts tokens."""

    name = "fake"

    def __init__(self) -> None:
        self.prompts: list[tuple[str, str]] = []
        self.cached = ""

    def warm_up(self) -> None:
        pass

    def answer_logprobs(self, prompt: str, answer: str) -> AnswerLogprobs:
        self.prompts.append((prompt, answer))
        evidence, _, question = prompt.partition("Question:")
        values = []
        for word in answer.split():
            lp = -0.5 if word in evidence else -4.0
            if "villain" in question:
                lines = [line for line in evidence.splitlines() if word in line]
                lp -= 0.0 if any("villain" in line for line in lines) else 1.5
            values.append(lp)
        text = prompt + "\n" + answer
        reused = prefix_reuse(list(self.cached), list(prompt))
        self.cached = text
        return AnswerLogprobs(tuple(values), len(text) - 1 - reused, reused, 0.001)


@component
class FakeReader:
    """A chat generator that brings its own support backend (and answers nothing useful)."""

    def __init__(self, label: str = "fake") -> None:
        self.label = label
        self.backend = FakeBackend()
        self.closed = 0

    def support_backend(self) -> FakeBackend:
        return self.backend

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, label=self.label)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FakeReader:
        return default_from_dict(cls, data)

    def close(self) -> None:
        self.closed += 1

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage]) -> dict[str, Any]:
        return {"replies": [ChatMessage.from_assistant("?")]}


@component
class PlainGenerator:
    """A generator with no way to read answer log-probabilities."""

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage]) -> dict[str, Any]:
        return {"replies": [ChatMessage.from_assistant("?")]}


def cast() -> list[Document]:
    return [Document(id="cast", content=dk.CAST)]


def reviews() -> list[Document]:
    return [Document(id=f"r{i}", content=t) for i, t in enumerate(dk.REVIEWS)]


def scorer(**kwargs: Any) -> ReaderSupportScorer:
    return ReaderSupportScorer(chat_generator=FakeReader(), **kwargs)


# ------------------------------------------------------------------ outputs
def test_outputs_are_the_equations_over_the_backend():
    s = scorer(erased_contrast=True)
    out = s.run(
        query=QUESTION,
        answers=["Christian Bale", "Heath Ledger"],
        documents=cast(),
        counterfactual_queries=[VILLAIN, "Who directed The Dark Knight?"],
    )
    # Bale: named in the cast (−0.5 per word); under the villain question −1.5 more (no "villain" there)
    assert out["support"] == pytest.approx([-0.5, -4.0])
    assert np.allclose(out["counterfactual_support"], [[-2.0, -0.5], [-5.5, -4.0]])
    assert out["margin"] == pytest.approx([0.0, 0.0])
    assert out["erased_support"] == pytest.approx([-4.0, -4.0])
    assert out["pmi"] == pytest.approx([3.5, 0.0])


def test_margin_is_larger_with_question_specific_evidence():
    """The ordering the method relies on, through the component: the cast list makes "Christian
    Bale" specific to the lead question; with one review saying "villain" near Ledger, "Heath
    Ledger" is as likely for the villain question."""
    s = scorer()
    q = [VILLAIN]
    bale_cast = s.run(query=QUESTION, answers=["Christian Bale"], documents=cast(), counterfactual_queries=q)
    ledger_reviews = s.run(
        query=QUESTION, answers=["Heath Ledger"], documents=reviews(), counterfactual_queries=q
    )
    assert bale_cast["margin"][0] == pytest.approx(1.5)
    assert ledger_reviews["margin"][0] == pytest.approx(0.0)


def test_no_counterfactuals_give_no_margin_and_no_erased_outputs_by_default():
    out = scorer().run(query=QUESTION, answers=["Christian Bale"], documents=cast())
    assert out["margin"] == [None] and out["counterfactual_support"] == [[]]
    assert out["erased_support"] is None and out["pmi"] is None


def test_no_answers_make_no_call():
    s = scorer(erased_contrast=True)
    out = s.run(query=QUESTION, answers=[], documents=cast(), counterfactual_queries=[VILLAIN])
    assert out["support"] == [] and out["margin"] == [] and out["pmi"] == []
    assert out["trace"]["calls"] == 0 and s.chat_generator.backend.prompts == []


def test_call_order_reuses_the_prefix_and_the_trace_counts_it():
    s = scorer(erased_contrast=True)
    answers, cfs = ["Christian Bale", "Heath Ledger", "Christopher Nolan"], [VILLAIN, "Who directed it?"]
    out = s.run(query=QUESTION, answers=answers, documents=cast(), counterfactual_queries=cfs)
    prompts = s.chat_generator.backend.prompts
    assert len(prompts) == out["trace"]["calls"] == 3 * (1 + 2 + 1)
    # every answer under q, then under each q' in turn, then without evidence
    questions = [p.rsplit("Question: ", 1)[1].splitlines()[0] for p, _ in prompts]
    assert questions == [QUESTION] * 3 + [VILLAIN] * 3 + ["Who directed it?"] * 3 + [QUESTION] * 3
    assert [a for _, a in prompts] == answers * 4
    assert "(no evidence was retrieved)" in prompts[-1][0]
    # evidence first, question last: within one question only the answer is new
    per_call = out["trace"]["per_call"]
    assert [c["query"] for c in per_call] == ["q"] * 3 + ["q'0"] * 3 + ["q'1"] * 3 + ["erased"] * 3
    assert per_call[1]["tokens_reused"] == len(prompts[1][0]) - 1
    assert per_call[3]["tokens_reused"] >= prompts[0][0].index("Question:")  # the evidence block is kept
    trace = out["trace"]
    assert trace["tokens_evaluated"] == sum(c["tokens_evaluated"] for c in per_call)
    assert trace["tokens_reused"] == sum(c["tokens_reused"] for c in per_call) > trace["tokens_evaluated"]
    assert trace["backend"] == "fake" and trace["seconds"] >= 0


def test_scorings_count_into_the_questions_llm_usage_sync_async_and_options():
    from haystack_cfrag.common.timing import count_llm_usage

    s = scorer(erased_contrast=True)
    kwargs = dict(query=QUESTION, answers=["Christian Bale", "Heath Ledger"], documents=cast(),
                  counterfactual_queries=[VILLAIN])
    s.run(**kwargs)  # outside a counted block nothing is recorded, nothing fails
    with count_llm_usage() as usage:
        out = s.run(**kwargs)
        async_out = asyncio.run(s.run_async(**kwargs))
        s.option_support(QUESTION, ["Christian Bale", "Heath Ledger"], cast())
    options = 2 * 2  # two options, two cyclic orders
    assert usage.scorings == out["trace"]["calls"] + async_out["trace"]["calls"] + options == 6 + 6 + 4
    assert usage.scoring_tokens >= out["trace"]["tokens_evaluated"] + async_out["trace"]["tokens_evaluated"] > 0
    assert usage.calls == 0  # a scoring is not a chat call
    assert usage.as_dict()["scorings"] == 16


def test_prompt_layout_is_evidence_then_question():
    s = scorer()
    s.run(query=QUESTION, answers=["Christian Bale"], documents=[Document(content="x", meta={"title": "T"})])
    prompt = s.chat_generator.backend.prompts[0][0]
    assert prompt == SUPPORT_PROMPT.format(evidence="[1] (T) x", query=QUESTION)
    assert prompt.index("Evidence:") < prompt.index("Question:")


def test_custom_prompt_template_and_evidence_cut():
    s = scorer(prompt_template="E={evidence} Q={query}", max_evidence_chars=3)
    s.run(query="q?", answers=["a"], documents=[Document(content="abcdef")])
    assert s.chat_generator.backend.prompts[0][0] == "E=[1] abc … Q=q?"


def test_score_is_the_support_of_one_answer():
    s = scorer(erased_contrast=True)
    assert s.score(QUESTION, "Christian Bale", cast()) == pytest.approx(-0.5)
    assert len(s.chat_generator.backend.prompts) == 1  # one call: no erased contrast for a single score
    full = s.scores(QUESTION, ["Christian Bale"], cast(), [VILLAIN])
    assert full.margin == pytest.approx([1.5]) and full.as_outputs()["support"] == full.support


def test_option_support_cancels_position_bias_through_the_component():
    class LetterBackend(FakeBackend):
        """log P(letter) = 2 if it is A (position bias) + 1 if its option is "Christian Bale"."""

        def answer_logprobs(self, prompt, answer):
            self.prompts.append((prompt, answer))
            option = re.search(rf"^{answer}\. (.*)$", prompt, re.M).group(1)
            return AnswerLogprobs(
                ((2.0 if answer == "A" else 0.0) + (1.0 if option == "Christian Bale" else 0.0),), 1, 0, 0.0
            )

    gen = FakeReader()
    gen.backend = LetterBackend()
    s = ReaderSupportScorer(chat_generator=gen)
    scores = s.option_support(QUESTION, ["Heath Ledger", "Christian Bale", "Christopher Nolan"], cast())
    assert len(gen.backend.prompts) == 9  # 3 orders × 3 letters
    assert scores[1] - scores[0] == pytest.approx(1.0) and scores[0] == pytest.approx(scores[2])


# ------------------------------------------------------------------ the component contract
def test_to_dict_from_dict_round_trip():
    s = scorer(
        erased_contrast=True,
        max_evidence_chars=500,
        prompt_template="{evidence}|{query}",
        chat_template="{{x}}",
        prefix_states=0,
    )
    data = s.to_dict()
    json.dumps(data)
    again = ReaderSupportScorer.from_dict(copy.deepcopy(data))
    assert again.to_dict() == data
    assert isinstance(again.chat_generator, FakeReader) and again.erased_contrast is True
    assert again.prefix_states == 0 and scorer().prefix_states == SCORER_PREFIX_STATES
    assert data["init_parameters"]["chat_generator"]["type"].endswith("FakeReader")


@pytest.mark.parametrize("bad", [-1, 33, True, 1.0, "0"])
def test_prefix_states_out_of_range_is_refused_in_one_line(bad):
    with pytest.raises(ValueError, match="'prefix_states' must be an integer in \\[0, 32\\]"):
        scorer(prefix_states=bad)


def test_run_and_run_async_agree():
    kwargs = dict(
        query=QUESTION,
        answers=["Christian Bale", "Heath Ledger"],
        documents=reviews() + cast(),
        counterfactual_queries=[VILLAIN],
    )
    sync = scorer(erased_contrast=True).run(**copy.deepcopy(kwargs))
    async_ = asyncio.run(scorer(erased_contrast=True).run_async(**copy.deepcopy(kwargs)))
    for key in ("support", "counterfactual_support", "margin", "erased_support", "pmi"):
        assert sync[key] == async_[key], key
    assert sync["trace"]["calls"] == async_["trace"]["calls"]
    assert set(sync) == set(async_)


def test_inputs_are_not_mutated():
    docs, answers, cfs = reviews() + cast(), ["Christian Bale", " Heath Ledger "], [VILLAIN]
    before = (copy.deepcopy(docs), list(answers), list(cfs))
    scorer(erased_contrast=True).run(
        query=QUESTION, answers=answers, documents=docs, counterfactual_queries=cfs
    )
    assert (docs, answers, cfs) == before


def test_warm_up_and_close():
    s = scorer()
    s.warm_up()
    assert s._backend is s.chat_generator.backend
    s.close()
    assert s._backend is None and s.chat_generator.closed == 1
    assert s.score(QUESTION, "Christian Bale", cast()) == pytest.approx(-0.5)  # loads again lazily


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(query="", answers=["a"], documents=[]), "'query' must be a non-empty string"),
        (dict(query=3, answers=["a"], documents=[]), "'query' must be a non-empty string"),
        (dict(query="q", answers="a", documents=[]), "'answers' must be a list of non-empty strings"),
        (dict(query="q", answers=["a", " "], documents=[]), "'answers' must be a list of non-empty strings"),
        (dict(query="q", answers=["a"], documents=["text"]), "'documents' must be a list of documents"),
        (
            dict(query="q", answers=["a"], documents=[], counterfactual_queries="q2"),
            "'counterfactual_queries' must",
        ),
        (
            dict(query="q", answers=["a"], documents=[], counterfactual_queries=[""]),
            "'query' must be a non-empty",
        ),
    ],
)
def test_bad_inputs_raise_one_line_errors(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)) as info:
        scorer().run(**kwargs)
    assert "\n" not in str(info.value) and str(info.value).startswith("ReaderSupportScorer")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(erased_contrast=1), "'erased_contrast' must be true or false"),
        (dict(max_evidence_chars=0), "max_evidence_chars"),
        (dict(prompt_template="{query} only"), "lacks the placeholder {evidence}"),
        (dict(chat_template=" "), "'chat_template' must be"),
    ],
)
def test_bad_init_raises(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        scorer(**kwargs)


def test_unsupported_generator_is_refused_in_one_line():
    s = ReaderSupportScorer(chat_generator=PlainGenerator())
    with pytest.raises(
        UnsupportedGeneratorError, match="cannot read answer log-probabilities from a PlainGenerator"
    ) as info:
        s.run(query=QUESTION, answers=["a"], documents=[])
    assert "\n" not in str(info.value)


def test_openai_without_a_base_url_is_refused():
    gen = OpenAIChatGenerator(api_key=Secret.from_token("x"))
    with pytest.raises(UnsupportedGeneratorError, match="returns no prompt log-probabilities"):
        backend_for(gen)


def test_generators_map_to_backends():
    gen = OpenAIChatGenerator(api_key=Secret.from_token("k"), api_base_url="http://h:1/v1", model="m")
    backend = backend_for(gen)
    assert isinstance(backend, OpenAICompatibleBackend) and backend.api_key == "k" and backend.model == "m"


def test_the_llama_cpp_generator_maps_to_the_llama_backend():
    pytest.importorskip("haystack_integrations.components.generators.llama_cpp")  # not in the Haystack 2.x tests
    from haystack_cfrag.adapters.llama_cpp_logprobs import LlamaCppLogprobsChatGenerator
    from haystack_cfrag.support.backends import LlamaCppBackend

    gen = LlamaCppLogprobsChatGenerator(model="x.gguf")
    assert isinstance(backend_for(gen), LlamaCppBackend)
    assert backend_for(gen).prefix_states == SCORER_PREFIX_STATES
    assert backend_for(gen, prefix_states=0).prefix_states == 0


def test_the_scorer_hands_its_prefix_states_to_the_backend(monkeypatch):
    from haystack_cfrag.support import scorer as scorer_module

    asked = {}

    def fake_backend_for(generator, **kwargs):
        asked.update(kwargs)
        return FakeReader().backend

    monkeypatch.setattr(scorer_module, "backend_for", fake_backend_for)
    scorer(prefix_states=0).warm_up()  # a cascade's gate: one prompt a question, no earlier state kept
    assert asked["prefix_states"] == 0


# ------------------------------------------------------------------ OpenAI-compatible servers
class _Server:
    """A tiny local HTTP server: `vllm` echoes prompt log-probs; `llama_cpp` returns only the completion's."""

    def __init__(self, kind: str) -> None:
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def version_string(self):  # the "Server" header
                return "llama.cpp" if kind == "llama_cpp" else "uvicorn"

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, **body})
                text = body["prompt"]
                if kind == "vllm":
                    words = re.findall(r"\S+|\s+", text) + ["!"]  # tokens: words and spaces
                    offsets = np.cumsum([0] + [len(w) for w in words[:-1]]).tolist()
                    lps = [None] + [-0.1 * (k + 1) for k in range(len(words) - 1)]
                    logprobs = {"tokens": words, "token_logprobs": lps, "text_offset": offsets}
                    choice = {"text": text + "!", "logprobs": logprobs}
                else:  # llama.cpp's server: no echo, the completion's log-prob only
                    choice = {
                        "text": "!",
                        "logprobs": {"tokens": ["!"], "token_logprobs": [-0.2], "text_offset": [0]},
                    }
                payload = json.dumps({"choices": [choice], "usage": {"prompt_tokens": 7}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server(request):
    srv = _Server(request.param)
    yield srv
    srv.close()


@pytest.mark.parametrize("server", ["vllm"], indirect=True)
def test_openai_compatible_backend_reads_the_echoed_answer_tokens(server):
    gen = OpenAIChatGenerator(api_key=Secret.from_token("k"), api_base_url=server.url, model="served")
    s = ReaderSupportScorer(chat_generator=gen)
    out = s.run(query="Who?", answers=["Christian Bale"], documents=[Document(content="Bale.")])
    request = server.requests[0]
    assert request["path"] == "/v1/completions" and request["echo"] is True and request["logprobs"] == 1
    assert request["model"] == "served" and request["prompt"].endswith(
        "<|im_start|>assistant\nChristian Bale"
    )
    # tokens of the prompt: words and spaces; the answer is the last three ("Christian", " ", "Bale")
    n = len(re.findall(r"\S+|\s+", request["prompt"]))
    expected = [-0.1 * k for k in (n - 3, n - 2, n - 1)]
    assert out["support"] == pytest.approx([sum(expected) / 3])
    assert s._backend.verified and out["trace"]["tokens_evaluated"] == 7
    s.close()


@pytest.mark.parametrize("server", ["llama_cpp"], indirect=True)
def test_server_without_prompt_logprobs_is_refused_in_one_line(server):
    gen = OpenAIChatGenerator(api_key=Secret.from_token("k"), api_base_url=server.url, model="qwen")
    s = ReaderSupportScorer(chat_generator=gen)
    with pytest.raises(NoPromptLogprobsError, match="returned no prompt log-probabilities") as info:
        s.run(query="Who?", answers=["Christian Bale"], documents=[])
    message = str(info.value)
    assert "\n" not in message and server.url in message and "server: llama.cpp" in message
    assert len(server.requests) == 1  # refused on the first reply
    s.close()


# ------------------------------------------------------------------ transformers (a fake causal LM)
class _CharTokenizer:
    """One token per character (codes mod 50); a chat template that wraps the user turn."""

    def __init__(self, fast: bool) -> None:
        self.is_fast = fast

    def apply_chat_template(self, messages, tokenize, add_generation_prompt, chat_template=None):
        return f"<u>{messages[0]['content']}</u><a>"

    def __call__(self, text, add_special_tokens=False, return_offsets_mapping=False):
        out = {"input_ids": [ord(c) % 50 for c in text]}
        if return_offsets_mapping:
            out["offset_mapping"] = [(k, k + 1) for k in range(len(text))]
        return out


def _next_code_model():
    """A model that predicts token (id + 1) mod 50 after each token, with logit 10 (0 elsewhere)."""
    torch = pytest.importorskip("torch")  # the Haystack 2.x test environment has no torch

    class _NextCodeModel(torch.nn.Module):
        device = "cpu"

        def forward(self, input_ids):
            logits = torch.zeros(*input_ids.shape, 50)
            logits.scatter_(-1, ((input_ids + 1) % 50).unsqueeze(-1), 10.0)
            return type("Out", (), {"logits": logits})()

    return _NextCodeModel()


@pytest.mark.parametrize("fast", [True, False])
def test_transformers_backend_aligns_the_answer_tokens(fast):
    backend = TransformersBackend(model=_next_code_model(), tokenizer=_CharTokenizer(fast))
    hit = 10 - math.log(math.exp(10) + 49)  # the predicted next code
    miss = -math.log(math.exp(10) + 49)  # any other
    # the prompt ends with ">" (code 62 → 12); "?" is 63 → 13: predicted; "@" = 64 → 14 follows "?": predicted
    result = backend.answer_logprobs("q", "?@")
    assert result.token_logprobs == pytest.approx((hit, hit))
    result = backend.answer_logprobs("q", "@?")  # "@" does not follow ">", "?" does not follow "@"
    assert result.token_logprobs == pytest.approx((miss, miss))
    assert result.tokens_reused == 0 and result.tokens_evaluated == len("<u>q</u><a>@?")


def test_runs_in_a_pipeline_and_survives_yaml():
    from haystack import Pipeline

    pipe = Pipeline()
    pipe.add_component("support", scorer(erased_contrast=True))
    again = pipeline_from_dict(yaml.safe_load(pipe.dumps()), allowed_modules=["tests"])  # Haystack 2.x and 3
    inputs = {
        "query": QUESTION,
        "answers": ["Christian Bale"],
        "documents": cast(),
        "counterfactual_queries": [VILLAIN],
    }
    out = again.run({"support": inputs})["support"]
    assert out["margin"] == pytest.approx([1.5]) and out["pmi"] == pytest.approx([3.5])
    assert isinstance(again.get_component("support").chat_generator, FakeReader)


# ------------------------------------------------------------------ a reply to the prompt the reader answered
def test_score_reply_reads_the_answer_as_the_reply_to_those_messages_after_its_prefix():
    from haystack_cfrag.testing import MockChatGenerator

    s = ReaderSupportScorer(chat_generator=MockChatGenerator())
    messages = [ChatMessage.from_system("Be brief."), ChatMessage.from_user("[1] Christian Bale plays Batman.")]
    assert s.score_reply(messages, " Christian Bale", "Answer:") == pytest.approx(-0.5)
    assert s.score_reply(messages, " Heath Ledger", "Answer:") == pytest.approx(-4.0)
    assert s.score_reply(messages, " Heath", "Answer: Heath") == pytest.approx(-0.5)  # the prefix is read, not scored


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (([], "a"), "'messages' must be a non-empty list of ChatMessage"),
        ((["hi"], "a"), "'messages' must be a non-empty list of ChatMessage"),
        (([ChatMessage.from_user("q")], " "), "'answer' must be a non-empty string"),
        (([ChatMessage.from_user("q")], "a", None), "'reply_prefix' must be a string"),
    ],
)
def test_score_reply_refuses_bad_input_in_one_line(args, message):
    with pytest.raises(ValueError, match=message):
        scorer().score_reply(*args)


@pytest.mark.parametrize("prompt", [[], [{"role": "user"}], [{"role": "user", "content": 3}], 7])
def test_a_prompt_is_a_string_or_role_content_messages(prompt):
    assert chat_messages("hi") == [{"role": "user", "content": "hi"}]
    with pytest.raises(ValueError, match="a prompt is a string or a non-empty list"):
        chat_messages(prompt)


@pytest.mark.parametrize("server", ["vllm"], indirect=True)
def test_openai_compatible_backend_scores_only_the_answer_after_the_reply_prefix(server):
    gen = OpenAIChatGenerator(api_key=Secret.from_token("k"), api_base_url=server.url, model="served")
    s = ReaderSupportScorer(chat_generator=gen)
    value = s.score_reply([ChatMessage.from_user("Who?")], " Bale", "Answer:")
    prompt = server.requests[0]["prompt"]
    assert prompt.endswith("<|im_start|>user\nWho?<|im_end|>\n<|im_start|>assistant\nAnswer: Bale")
    n = len(re.findall(r"\S+|\s+", prompt))  # the answer is the last two tokens (" ", "Bale")
    assert value == pytest.approx(-0.1 * ((n - 2) + (n - 1)) / 2)
    s.close()


def test_transformers_backend_reads_the_reply_prefix_as_context():
    backend = TransformersBackend(model=_next_code_model(), tokenizer=_CharTokenizer(True))
    hit = 10 - math.log(math.exp(10) + 49)
    result = backend.answer_logprobs([{"role": "user", "content": "q"}], "@", reply_prefix="?")
    assert result.token_logprobs == pytest.approx((hit,))  # "@" follows the prefix "?", one token scored
    assert result.tokens_evaluated == len("<u>q</u><a>?@")
