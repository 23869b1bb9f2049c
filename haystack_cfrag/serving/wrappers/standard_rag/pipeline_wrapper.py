"""Hayhooks wrapper of haystack_cfrag/pipelines/standard_rag.yml (see haystack_cfrag.serving.wrapper and docs/serving.md)."""

from haystack_cfrag.serving.wrapper import CFRAGPipelineWrapper


class PipelineWrapper(CFRAGPipelineWrapper):
    pipeline_name = "standard_rag"
    request_parameters = ()  # one retrieval, one generation: N, K, M and lambda do not apply
    description = (
        "Answer a question with standard RAG (top-k retrieval, one generation): the baseline of CF-RAG.\n\n"
        "Returns the answer and the documents it was given (no trace: there is no arbitration)."
    )
