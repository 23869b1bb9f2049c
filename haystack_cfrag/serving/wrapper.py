"""The Hayhooks pipeline wrapper of CF-RAG: `/<pipeline>/run`, `/v1/chat/completions` and an MCP tool.

Each folder of `haystack_cfrag/serving/pipelines/` holds a `pipeline_wrapper.py` that subclasses
`CFRAGPipelineWrapper` and names its pipeline file. All wrappers of a process share one
`CFRAGService` (models loaded once). Hayhooks builds the request model of `/run` from the
signature of `run_api`: wrong types and out-of-range values are refused with 422 before the
pipeline runs; `run_api` checks again (MCP tool calls skip the HTTP model) and maps a pipeline
failure to 503 with the reason, so bad input never becomes a 500.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Annotated, Any

from fastapi import HTTPException
from hayhooks import BasePipelineWrapper
from haystack.dataclasses import StreamingChunk
from pydantic import AfterValidator, Field

from haystack_cfrag.serving.service import (
    MAX_QUESTION_CHARS,
    PipelineFailedError,
    RequestError,
    get_service,
    question_from_messages,
    validate_question,
)


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("the question is empty")
    return value


Question = Annotated[str, Field(min_length=1, max_length=MAX_QUESTION_CHARS), AfterValidator(_not_blank)]
NCounterfactuals = Annotated[int | None, Field(ge=0, le=10, strict=True)]
NClusters = Annotated[int | None, Field(ge=1, le=20, strict=True)]
NSubsets = Annotated[int | None, Field(ge=1, le=20, strict=True)]
CausalWeight = Annotated[float | None, Field(ge=0.0, le=1.0)]

CHAT_PARAMETERS = ("n_counterfactuals", "n_clusters", "n_subsets", "causal_weight")


class CFRAGPipelineWrapper(BasePipelineWrapper):
    """Serves one shipped pipeline file (`pipeline_name`) through the shared CF-RAG service."""

    pipeline_name = "cf_rag"

    def setup(self) -> None:
        """Load the models and store (once per process) and build this pipeline."""
        self.service = get_service()
        self.pipeline = self.service.pipeline(self.pipeline_name)

    def run_api(
        self,
        question: Question,
        n_counterfactuals: NCounterfactuals = None,
        n_clusters: NClusters = None,
        n_subsets: NSubsets = None,
        causal_weight: CausalWeight = None,
    ) -> dict:
        """
        Answer a question with Counterfactual RAG: robust to related but non-decisive evidence.

        Writes counterfactual questions, retrieves evidence for all of them, drafts one answer per
        evidence stratum and picks the draft whose evidence is coherent and causally decisive.

        :param question: the question (1 to 2000 characters, not blank).
        :param n_counterfactuals: N, counterfactual questions (0-10); default: the pipeline file's.
        :param n_clusters: K, evidence clusters (1-20).
        :param n_subsets: M, evidence subsets, one draft each (1-20).
        :param causal_weight: lambda, weight of the causal score in the ranking (0-1).
        :returns: the answer, whether it is degraded, the ranked alternatives and the trace.
        """
        params = {
            "n_counterfactuals": n_counterfactuals,
            "n_clusters": n_clusters,
            "n_subsets": n_subsets,
            "causal_weight": causal_weight,
        }
        return self._answer(question, params)

    def run_chat_completion(self, model: str, messages: list[dict], body: dict) -> str | Generator:
        """OpenAI-compatible chat: the last user message is the question, the reply is the answer.

        CF-RAG's answer is chosen by arbitration after every draft is written, so there is no token
        stream to forward: with `stream: true` the answer arrives as one chunk. Body keys
        `n_counterfactuals`, `n_clusters`, `n_subsets` and `causal_weight` are accepted.
        """
        try:
            question = question_from_messages(messages)
        except RequestError as exc:
            raise HTTPException(status_code=422, detail=str(exc)) from exc
        params = {k: body.get(k) for k in CHAT_PARAMETERS if body.get(k) is not None}
        result = self._answer(question, params)
        text = result["answer"] or "I could not find an answer in the documents."
        if result["degraded"]:
            text += "\n\n(degraded: " + "; ".join(result["warnings"]) + ")"
        if body.get("stream"):
            return _one_chunk(text)
        return text

    def _answer(self, question: Any, params: dict[str, Any]) -> dict[str, Any]:
        try:
            validate_question(question)
            return self.service.answer(self.pipeline_name, question, params)
        except RequestError as exc:
            raise HTTPException(status_code=422, detail=str(exc)) from exc
        except PipelineFailedError as exc:
            raise HTTPException(status_code=503, detail=str(exc)) from exc


def _one_chunk(text: str) -> Generator:
    yield StreamingChunk(content=text)
