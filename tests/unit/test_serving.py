"""Serving without a server: configuration, validation, the service and the Hayhooks wrapper with fakes."""

import pytest
import yaml
from haystack.document_stores.in_memory import InMemoryDocumentStore

from haystack_cfrag.cli_serve import server_env
from haystack_cfrag.serving.deploy import deployable_yaml, write_deploy_dir
from haystack_cfrag.serving.service import (
    CFRAGService,
    PipelineFailedError,
    RequestError,
    ServingConfig,
    question_from_messages,
    validate_params,
    validate_question,
)
from haystack_cfrag.testing import MockChatGenerator
from tests import dark_knight as dk
from tests.fakes import FailingChatGenerator, HashingDocumentEmbedder, HashingTextEmbedder


# ---------------------------------------------------------------- validation
@pytest.mark.parametrize(("value", "message"), [("", "empty"), ("  \n", "empty"), (None, "string"), (3, "string"),
                                                  ("x" * 2001, "longer than 2000")])
def test_bad_questions_are_refused_with_a_readable_reason(value, message):
    with pytest.raises(RequestError, match=message):
        validate_question(value)


def test_question_is_stripped():
    assert validate_question("  Who?  ") == "Who?"


@pytest.mark.parametrize(
    ("params", "message"),
    [({"n_counterfactuals": 11}, r"'n_counterfactuals' must be in \[0, 10\]"), ({"n_clusters": 0}, "'n_clusters'"),
     ({"n_subsets": 21}, "'n_subsets'"), ({"causal_weight": 1.01}, "'causal_weight'"),
     ({"causal_weight": float("nan")}, "'causal_weight'"), ({"n_clusters": 2.5}, "integer"),
     ({"n_clusters": True}, "number"), ({"n_clusters": "3"}, "number"), ({"top_k": 3}, "Unknown parameter")],
)
def test_bad_parameters_are_refused_naming_the_parameter(params, message):
    with pytest.raises(RequestError, match=message):
        validate_params(params)


def test_good_parameters_are_normalised_and_none_dropped():
    assert validate_params({"n_counterfactuals": 0, "n_clusters": 3.0, "n_subsets": None, "causal_weight": 1}) == {
        "n_counterfactuals": 0, "n_clusters": 3, "causal_weight": 1.0}


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
                                     "CFRAG_MOCK_DELAY_S": "0.2", "CFRAG_LLM": "openai:http://h/v1", "CFRAG_STORE": "s.json"})
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
    assert data["inputs"]["query"] and data["outputs"]["answer"] == "ranker.answer"
    assert "embedded:" not in text and "LlamaCpp" not in text
    assert data["components"]["drafter"]["init_parameters"]["chat_generator"]["type"].endswith("MockChatGenerator")
    store = data["components"]["retriever"]["init_parameters"]["retriever"]["init_parameters"]["document_store"]
    assert store["init_parameters"]["index"] == "shared"


def test_deploy_dir_holds_wrapper_folders_and_yaml_files(tmp_path):
    config = ServingConfig(generator="mock", embedder="my-org/my-embedder")
    target = write_deploy_dir(tmp_path / "d", config, wrappers=["cf_rag", "standard_rag"], yaml_pipelines=["cf_rag"])
    assert sorted(p.name for p in target.iterdir()) == ["cf_rag", "cf_rag_yaml.yml", "standard_rag"]
    assert "pipeline_name = \"standard_rag\"" in (target / "standard_rag" / "pipeline_wrapper.py").read_text()
    with pytest.raises(ValueError, match="Unknown pipeline"):
        write_deploy_dir(tmp_path / "e", config, wrappers=["nope"])


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
    assert out["answer"] and not out["degraded"] and out["warnings"] == []
    assert len(out["trace"]["drafts"]) == 2 and out["trace"]["weights"]
    assert out["alternatives"][0]["answer"] == out["answer"] and out["alternatives"][0]["psi"] is not None
    assert out["answer"] in {d["title"] for d in out["documents"]} | {a["answer"] for a in out["alternatives"]}


def test_run_time_parameters_change_the_run_not_the_pipeline(mock_service):
    pipe = mock_service.pipeline("cf_rag")
    out = mock_service.answer("cf_rag", dk.QUESTION, {"n_counterfactuals": 0, "n_subsets": 1})
    assert out["trace"]["counterfactuals"] == [] and len(out["trace"]["drafts"]) == 1 and not out["degraded"]
    assert mock_service.pipeline("cf_rag") is pipe


def test_standard_rag_is_served_too(mock_service):
    out = mock_service.answer("standard_rag", dk.QUESTION)
    assert out["answer"] and out["trace"] is None and out["alternatives"] == []


def test_unknown_pipeline_and_bad_input_are_request_errors(mock_service):
    with pytest.raises(RequestError, match="Unknown pipeline"):
        mock_service.answer("nope", dk.QUESTION)
    with pytest.raises(RequestError, match="'n_clusters'"):
        mock_service.answer("cf_rag", dk.QUESTION, {"n_clusters": 50})


def test_failing_model_gives_a_degraded_answer_in_cf_rag_and_an_error_in_standard_rag():
    svc = service(FailingChatGenerator())
    out = svc.answer("cf_rag", dk.QUESTION)
    assert out["degraded"] and out["answer"] == "" and out["trace"]["decision"] == "all_drafts_failed"
    assert any("drafts failed" in w for w in out["warnings"])
    with pytest.raises(PipelineFailedError, match="standard_rag"):
        svc.answer("standard_rag", dk.QUESTION)


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
    for kwargs in ({"question": " "}, {"question": 3}, {"question": "q?", "causal_weight": 2.0}):
        with pytest.raises(HTTPException) as err:
            w.run_api(**kwargs)
        assert err.value.status_code == 422 and "'" in err.value.detail
    with pytest.raises(HTTPException) as err:
        wrapper(service(FailingChatGenerator()), "standard_rag").run_api(question=dk.QUESTION)
    assert err.value.status_code == 503 and "failed" in err.value.detail


def test_wrapper_chat_completion_plain_and_streamed(mock_service):
    HTTPException = pytest.importorskip("fastapi").HTTPException  # the serve extra

    w = wrapper(mock_service)
    messages = [{"role": "user", "content": dk.QUESTION}]
    text = w.run_chat_completion("cf_rag", messages, {})
    assert text == mock_service.answer("cf_rag", dk.QUESTION)["answer"]
    chunks = list(w.run_chat_completion("cf_rag", messages, {"stream": True}))
    assert "".join(c.content for c in chunks) == text
    with pytest.raises(HTTPException) as err:
        w.run_chat_completion("cf_rag", messages, {"n_subsets": 0})
    assert err.value.status_code == 422
    failing = wrapper(service(FailingChatGenerator()))
    assert "could not find an answer" in failing.run_chat_completion("cf_rag", messages, {})
