"""Serving without a server: configuration, validation, the service and the Hayhooks wrapper with fakes."""

import pytest
import yaml
from haystack.document_stores.in_memory import InMemoryDocumentStore

from haystack_cfrag.cli.serve import server_env
from haystack_cfrag.registry import REGISTRY
from haystack_cfrag.serving.deploy import MARKER, DeployDirError, deployable_yaml, write_deploy_dir, yaml_deploy_name
from haystack_cfrag.serving.requests import (
    RequestError,
    check_chat_request,
    check_params,
    check_question,
    check_run_request,
    load_json,
    question_from_messages,
)
from haystack_cfrag.serving.service import CFRAGService, PipelineFailedError, ServingConfig
from haystack_cfrag.testing import MockChatGenerator
from tests import dark_knight as dk
from tests.fakes import FailingChatGenerator, HashingDocumentEmbedder, HashingTextEmbedder

CF = REGISTRY["cf_rag"].request_table  # CF-RAG's request parameters (each pipeline has its family's)


# ---------------------------------------------------------------- validation
@pytest.mark.parametrize(("value", "message"), [("", "empty"), ("  \n", "empty"), (None, "string"), (3, "string"),
                                                  ("\x01\x02\u200e\u202e\x1b", "control characters"),
                                                  ("x" * 2001, "longer than 2000")])
def test_bad_questions_are_refused_with_a_readable_reason(value, message):
    with pytest.raises(RequestError, match=message):
        check_question(value)


def test_question_is_cleaned():
    assert check_question("  Who\x1b[31m is \u202eBatman?\u200b  ") == "Who [31m is Batman?"


@pytest.mark.parametrize(
    ("params", "message"),
    [({"n_counterfactuals": 11}, r"'n_counterfactuals' must be an integer in \[0, 10\]"),
     ({"n_clusters": 0}, "'n_clusters'"),
     ({"n_subsets": 21}, "'n_subsets'"), ({"causal_weight": 1.01}, "'causal_weight'"),
     ({"causal_weight": float("nan")}, "'causal_weight' must be a finite number"),
     ({"n_counterfactuals": float("inf")}, "finite"), ({"n_clusters": 2.5}, "integer"),
     ({"n_clusters": True}, "'n_clusters'"), ({"n_clusters": "3"}, "string"), ({"causal_weight": "0.5"}, "string"),
     ({"top_k": 3}, "Unknown field.*'top_k'")],
)
def test_bad_parameters_are_refused_naming_the_parameter(params, message):
    with pytest.raises(RequestError, match=message):
        check_params(params, CF)


def test_good_parameters_are_normalised_and_none_dropped():
    values = {"n_counterfactuals": 0, "n_clusters": 3.0, "n_subsets": None, "causal_weight": 1}
    assert check_params(values, CF) == {
        "n_counterfactuals": 0, "n_clusters": 3, "causal_weight": 1.0}


@pytest.mark.parametrize(("body", "message"), [
    ({"question": "q?", "bogus": 1, "n_subsets": 2}, "Unknown field.*'bogus'"),
    ({"n_subsets": 2}, "'question' is required"),
    (["q?"], "must be a JSON object"),
])
def test_run_bodies_refuse_unknown_fields_and_missing_questions(body, message):
    with pytest.raises(RequestError, match=message):
        check_run_request(body, CF)
    assert check_run_request({"question": " q? ", "n_subsets": 2}, CF) == ("q?", {"n_subsets": 2})
    with pytest.raises(RequestError, match="Unknown field.*'n_subsets'"):
        check_run_request({"question": "q?", "n_subsets": 2}, parameters=())


def test_chat_bodies_accept_openai_fields_and_refuse_others():
    body = {"model": "cf_rag", "messages": [{"role": "user", "content": "q?"}], "temperature": 0.2, "stream": False,
            "n_subsets": 2}
    assert check_chat_request(body, body["messages"], CF) == ("q?", {"n_subsets": 2})
    with pytest.raises(RequestError, match="Unknown field.*'causal_wieght'"):
        check_chat_request({**body, "causal_wieght": 0.3}, body["messages"], CF)
    with pytest.raises(RequestError, match="'n_subsets' must be"):
        check_chat_request({**body, "n_subsets": "2"}, body["messages"], CF)


@pytest.mark.parametrize(("raw", "message"), [
    (b'{"question": "q?", "causal_weight": NaN}', "'causal_weight' must be a finite number, got NaN"),
    (b'{"question": "q?", "n_subsets": -Infinity}', "'n_subsets' must be a finite number"),
    (b'{"question": "q?", "causal_weight": 1e309}', "'causal_weight' must be a finite number, got 1e309"),
    (b'{"messages": [{"content": [1, NaN]}]}', "'messages\\[0\\].content\\[1\\]' must be a finite"),
    (b'{"question": ', "not valid JSON"),
    (b"\xff\xfe", "not valid JSON"),
    (b"[" * 100_000, "nested too deeply"),
])
def test_strict_json_refuses_non_finite_numbers_by_field(raw, message):
    with pytest.raises(RequestError, match=message):
        load_json(raw)
    assert load_json(b'{"a": [1, 2.5, "NaN"]}') == {"a": [1, 2.5, "NaN"]}


def test_question_from_messages_takes_the_last_user_message():
    messages = [{"role": "user", "content": "first?"}, {"role": "assistant", "content": "a"},
                {"role": "user", "content": [{"type": "text", "text": "second?"}]}]
    assert question_from_messages(messages) == "second?"
    for bad in ([], None, [{"role": "system", "content": "x"}], [{"role": "user", "content": " "}]):
        with pytest.raises(RequestError):
            question_from_messages(bad)


# ---------------------------------------------------------------- configuration
def test_config_from_env():
    config = ServingConfig.from_env({"CFRAG_GENERATOR": "mock", "CFRAG_MOCK_FAILURE_RATE": "0.1",
                                     "CFRAG_MOCK_DELAY_S": "0.2", "CFRAG_LLM": "openai:http://h/v1",
                                     "CFRAG_STORE": "s.json"})
    assert (config.generator, config.mock_failure_rate, config.mock_delay_s, config.llm, config.store) == (
        "mock", 0.1, 0.2, "openai:http://h/v1", "s.json")
    assert config.mock_generator().to_dict()["init_parameters"]["failure_rate"] == 0.1
    with pytest.raises(ValueError, match="CFRAG_GENERATOR"):
        ServingConfig.from_env({"CFRAG_GENERATOR": "gpt"})
    with pytest.raises(ValueError, match="CFRAG_MOCK_FAILURE_RATE"):
        ServingConfig.from_env({"CFRAG_MOCK_FAILURE_RATE": "lots"})


def test_server_env_extends_the_allowlist_for_the_served_process_only():
    env = server_env({"HAYSTACK_DESERIALIZATION_ALLOWLIST": "mypkg"}, mock=True, mock_failure_rate=0.1)
    assert env["HAYSTACK_DESERIALIZATION_ALLOWLIST"] == "mypkg,haystack_cfrag"
    assert env["HAYHOOKS_STARTUP_DEPLOY_STRATEGY"] == "sequential"
    assert env["CFRAG_GENERATOR"] == "mock" and env["CFRAG_MOCK_FAILURE_RATE"] == "0.1"
    assert server_env({})["HAYSTACK_DESERIALIZATION_ALLOWLIST"] == "haystack_cfrag"


def test_deployable_yaml_keeps_inputs_outputs_and_uses_the_mock_and_the_shared_index():
    config = ServingConfig(generator="mock", embedder="my-org/my-embedder", store_index="shared")
    text = deployable_yaml("cf_rag_fast", config)
    data = yaml.safe_load(text)
    assert data["inputs"]["query"] and data["outputs"]["answer"] == "duel.answer"
    assert "embedded:" not in text and "LlamaCpp" not in text
    assert data["components"]["drafter"]["init_parameters"]["chat_generator"]["type"].endswith("MockChatGenerator")
    store = data["components"]["retriever"]["init_parameters"]["retriever"]["init_parameters"]["document_store"]
    assert store["init_parameters"]["index"] == "shared"
    # the parts are swapped by the runtime's rule (sockets, declared types), not by class name: the graph's
    # node store keeps its own index (the graph's nodes, not passages)
    causal = yaml.safe_load(deployable_yaml("causal_rag", config))["components"]
    assert causal["retriever"]["init_parameters"]["document_store"]["init_parameters"]["index"] == "shared"
    nodes = causal["graph_retriever"]["init_parameters"]["node_retriever"]["init_parameters"]
    assert nodes["document_store"]["init_parameters"]["index"] == "cfrag_graph_nodes"
    assert causal["summarizer"]["init_parameters"]["chat_generator"]["type"].endswith("MockChatGenerator")


def test_deploy_dir_holds_wrapper_folders_and_yaml_files(tmp_path):
    config = ServingConfig(generator="mock", embedder="my-org/my-embedder")
    target = write_deploy_dir(tmp_path / "d", config, wrappers=["cf_rag", "standard_rag"], yaml_pipelines=["cf_rag"])
    assert sorted(p.name for p in target.iterdir()) == [MARKER, "cf_rag", "cf_rag_yaml.yml", "standard_rag"]
    assert "pipeline_name = \"standard_rag\"" in (target / "standard_rag" / "pipeline_wrapper.py").read_text()
    with pytest.raises(ValueError, match="Unknown pipeline"):
        write_deploy_dir(tmp_path / "e", config, wrappers=["nope"])


USER_YAML = """
components:
  prompt:
    type: haystack.components.builders.chat_prompt_builder.ChatPromptBuilder
    init_parameters: {template: [{role: user, content: [{text: "{{ query }}"}]}]}
connections: []
inputs: {query: [prompt.query]}
outputs: {prompt: prompt.prompt}
"""


def test_a_yaml_file_of_the_users_is_deployed_under_its_stem(tmp_path):
    mine = tmp_path / "my-rag.yml"
    mine.write_text(USER_YAML)
    target = write_deploy_dir(tmp_path / "d", ServingConfig(generator="mock"), wrappers=["cf_rag"],
                              yaml_pipelines=[str(mine), "cf_rag_fast"])
    assert sorted(p.name for p in target.iterdir()) == [MARKER, "cf_rag", "cf_rag_fast_yaml.yml", "my-rag_yaml.yml"]
    assert yaml.safe_load((target / "my-rag_yaml.yml").read_text()) == yaml.safe_load(USER_YAML)
    assert mine.read_text() == USER_YAML  # the user's file is read, never changed


@pytest.mark.parametrize(("name", "text", "message"), [
    ("notes.txt", USER_YAML, "neither a served pipeline"),
    ("missing.yml", None, "neither a served pipeline"),
    ("my rag.yml", USER_YAML, "letters, digits"),
    ("broken.yml", "components: [unclosed", "not a readable YAML"),
    ("list.yml", "- a\n- b\n", "no 'components' mapping"),
    ("bare.yml", USER_YAML.split("inputs:")[0], "'inputs' and 'outputs'"),
    ("evil.yml", USER_YAML.replace("haystack.components.builders.chat_prompt_builder", "os"), "allow"),
])
def test_a_yaml_file_that_cannot_be_served_is_refused_in_one_line(tmp_path, name, text, message):
    path = tmp_path / name
    if text is not None:
        path.write_text(text)
    with pytest.raises(ValueError, match=message) as info:
        yaml_deploy_name(str(path))
    assert "\n" not in str(info.value)
    assert not (tmp_path / "d").exists()


def test_a_deploy_dir_it_made_is_rewritten_and_only_what_it_wrote_is_replaced(tmp_path):
    config = ServingConfig(generator="mock")
    target = write_deploy_dir(tmp_path / "d", config, wrappers=["cf_rag", "standard_rag"])
    write_deploy_dir(target, config, wrappers=["cf_rag_fast"])
    assert sorted(p.name for p in target.iterdir()) == [MARKER, "cf_rag_fast"]
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    (target / "cf_rag_fast").rename(tmp_path / "moved")
    (target / "cf_rag_fast").symlink_to(outside)  # a link where a folder it wrote was: removed, never followed
    write_deploy_dir(target, config, wrappers=["cf_rag"])
    assert (outside / "keep.txt").read_text() == "mine"


@pytest.mark.parametrize("case", ["user files", "a file", "a bad marker", "files beside the marker"])
def test_a_deploy_dir_it_did_not_make_is_refused_and_left_alone(tmp_path, case):
    target = tmp_path / "d"
    if case == "a file":
        target.write_text("notes")
    else:
        target.mkdir()
        (target / "notes.txt").write_text("mine")
        if case == "a bad marker":
            (target / MARKER).write_text("{not json")
        elif case == "files beside the marker":
            (target / MARKER).write_text('{"written": ["cf_rag"]}')
    before = sorted(p.name for p in tmp_path.rglob("*"))
    with pytest.raises(DeployDirError, match="d"):
        write_deploy_dir(target, ServingConfig(generator="mock"), wrappers=["cf_rag"])
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


# ---------------------------------------------------------------- the service with fakes
def dark_knight_store():
    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    store.write_documents(HashingDocumentEmbedder().run(dk.documents())["documents"])
    return store


def service(generator=None):
    return CFRAGService(ServingConfig(generator="mock"), store=dark_knight_store(),
                        chat_generator=generator or MockChatGenerator(), text_embedder=HashingTextEmbedder(),
                        allowed_modules=["tests"])


@pytest.fixture(scope="module")
def mock_service():
    return service()


def test_answer_has_answer_alternatives_and_trace(mock_service):
    out = mock_service.answer("cf_rag", dk.QUESTION, {"n_subsets": 2, "causal_weight": 0.5})
    assert out["answer"] and out["question"] == dk.QUESTION and isinstance(out["warnings"], list)
    assert out["trace"]["drafts"] and out["trace"]["weights"]
    assert out["alternatives"][0]["answer"] == out["answer"] and out["alternatives"][0]["psi"] is not None
    assert out["answer"] in {d["title"] for d in out["documents"]} | {a["answer"] for a in out["alternatives"]}


def test_run_time_parameters_change_the_run_not_the_pipeline(mock_service):
    pipe = mock_service.pipeline("cf_rag")
    low = mock_service.answer("cf_rag", dk.QUESTION, {"n_counterfactuals": 0, "causal_weight": 0.1})
    high = mock_service.answer("cf_rag", dk.QUESTION, {"n_counterfactuals": 1, "causal_weight": 0.9})
    assert low["trace"]["counterfactuals"] == [] and low["trace"]["weights"] != high["trace"]["weights"]
    assert mock_service.pipeline("cf_rag") is pipe


def test_standard_rag_is_served_too(mock_service):
    out = mock_service.answer("standard_rag", dk.QUESTION)
    assert out["answer"] and out["trace"] is None and out["alternatives"] == []


def test_unknown_pipeline_and_bad_input_are_request_errors(mock_service):
    with pytest.raises(RequestError, match="Unknown pipeline"):
        mock_service.answer("nope", dk.QUESTION)
    with pytest.raises(RequestError, match="'n_clusters'"):
        mock_service.answer("cf_rag", dk.QUESTION, {"n_clusters": 50})
    with pytest.raises(RequestError, match="control characters"):
        mock_service.answer("cf_rag", "\x00\x07\u202e")


def test_a_failing_model_is_a_pipeline_failure_with_its_reason_in_one_line():
    svc = service(FailingChatGenerator())
    for name in ("cf_rag", "standard_rag"):  # cf_rag degrades call by call, but with every call failed it fails too
        with pytest.raises(PipelineFailedError, match=f"'{name}' failed: .*") as err:
            svc.answer(name, dk.QUESTION)
        assert "\n" not in str(err.value)


# ---------------------------------------------------------------- the Hayhooks wrapper
def wrapper(svc, name="cf_rag"):
    pytest.importorskip("hayhooks")
    from haystack_cfrag.serving.wrapper import CFRAGPipelineWrapper

    w = CFRAGPipelineWrapper()
    w.pipeline_name, w.service = name, svc
    return w


def test_wrapper_run_api_and_http_errors(mock_service):
    HTTPException = pytest.importorskip("fastapi").HTTPException  # the serve extra

    w = wrapper(mock_service)
    assert w.run_api(question=dk.QUESTION, n_subsets=2)["answer"]
    for kwargs, field in (({"question": " "}, "question"), ({"question": 3}, "question"), ({}, "question"),
                          ({"question": "q?", "causal_weight": 2.0}, "causal_weight"),
                          ({"question": "q?", "bogus": 1}, "bogus")):  # MCP passes arguments as they come
        with pytest.raises(HTTPException) as err:
            w.run_api(**kwargs)
        assert err.value.status_code == 422 and f"'{field}'" in err.value.detail
    with pytest.raises(HTTPException) as err:
        wrapper(service(FailingChatGenerator()), "standard_rag").run_api(question=dk.QUESTION)
    assert err.value.status_code == 503 and "failed" in err.value.detail


def test_run_api_signature_is_the_parameter_table():
    pytest.importorskip("hayhooks")
    import inspect

    from haystack_cfrag.cfrag.parameters import REQUEST_PARAMETERS
    from haystack_cfrag.serving.wrapper import CFRAGPipelineWrapper

    class StandardLike(CFRAGPipelineWrapper):
        request_parameters = ()

    assert list(inspect.signature(CFRAGPipelineWrapper().run_api).parameters) == ["question", *REQUEST_PARAMETERS]
    assert list(inspect.signature(StandardLike().run_api).parameters) == ["question"]
    assert ":param n_clusters: K, evidence clusters: an integer in [1, 20]" in CFRAGPipelineWrapper.run_api.__doc__


def test_answers_report_the_tokens_of_their_own_request(mock_service):
    from haystack_cfrag.runtime.runtime import generators_of

    pipe = mock_service.pipeline("cf_rag")
    mocks = {id(g): g for _, comp in pipe.walk() for g in generators_of(comp)}.values()
    for params in ({"n_counterfactuals": 0}, {"n_counterfactuals": 2, "n_subsets": 3}):
        before = sum(m.calls for m in mocks)
        usage = mock_service.answer("cf_rag", dk.QUESTION, params)["usage"]
        assert usage["llm_calls"] == sum(m.calls for m in mocks) - before > 0  # this request's calls, no more
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] > 0


def test_usage_names_the_support_scorings_only_when_there_were_some():
    from haystack_cfrag.serving.service import _usage_report

    usage = {"calls": 2, "prompt_tokens": 900, "completion_tokens": 12, "reported": 2, "scorings": 14}
    assert _usage_report(usage) == {"prompt_tokens": 900, "completion_tokens": 12, "total_tokens": 912,
                                    "llm_calls": 2, "support_scorings": 14}
    assert "support_scorings" not in _usage_report({**usage, "scorings": 0})
    assert _usage_report({**usage, "reported": 0}) is None


def test_wrapper_chat_completion_plain_and_streamed(mock_service):
    HTTPException = pytest.importorskip("fastapi").HTTPException  # the serve extra

    w = wrapper(mock_service)
    messages = [{"role": "user", "content": dk.QUESTION}]
    body = {"model": "cf_rag", "messages": messages}
    reply = w.run_chat_completion("cf_rag", messages, body)
    text = reply.choices[0].message.content
    assert text.startswith(mock_service.answer("cf_rag", dk.QUESTION)["answer"])
    assert reply.usage["total_tokens"] > 0
    chunks = list(w.run_chat_completion("cf_rag", messages, {**body, "stream": True,
                                                              "stream_options": {"include_usage": True}}))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == text
    assert chunks[-2].choices[0].finish_reason == "stop" and chunks[-1].usage["total_tokens"] > 0
    with pytest.raises(HTTPException) as err:
        w.run_chat_completion("cf_rag", messages, {**body, "n_subsets": 0})
    assert err.value.status_code == 422
    with pytest.raises(HTTPException) as err:
        wrapper(service(FailingChatGenerator())).run_chat_completion("cf_rag", messages, body)
    assert err.value.status_code == 503


def test_reply_text_says_when_there_is_no_answer_and_why_an_answer_is_degraded():
    pytest.importorskip("hayhooks")
    from haystack_cfrag.serving.wrapper import NO_ANSWER, reply_text

    assert reply_text({"answer": "", "degraded": False, "warnings": []}) == NO_ANSWER
    assert reply_text({"answer": "Bale", "degraded": True, "warnings": ["1 of 3 drafts failed"]}).endswith(
        "(degraded: 1 of 3 drafts failed)")
