"""Hayhooks wrapper of haystack_cfrag/pipelines/cf_rag_fast.yml (see haystack_cfrag.serving.wrapper and docs/serving.md)."""

from haystack_cfrag.serving.wrapper import CFRAGPipelineWrapper


class PipelineWrapper(CFRAGPipelineWrapper):
    pipeline_name = "cf_rag_fast"
