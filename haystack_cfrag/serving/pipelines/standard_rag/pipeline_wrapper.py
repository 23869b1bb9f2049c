"""Hayhooks wrapper of pipelines/standard_rag.yml (see haystack_cfrag.serving.wrapper and docs/serving.md)."""

from haystack_cfrag.serving.wrapper import CFRAGPipelineWrapper


class PipelineWrapper(CFRAGPipelineWrapper):
    pipeline_name = "standard_rag"
