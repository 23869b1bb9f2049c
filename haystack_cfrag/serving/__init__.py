"""Serving CF-RAG over HTTP with Hayhooks (REST, OpenAI-compatible chat, MCP).

- `service`: the process-wide `CFRAGService` (models and store from `CFRAG_*` environment
  variables, one pipeline per file, request validation, degraded answers).
- `wrapper`: `CFRAGPipelineWrapper`, the Hayhooks `BasePipelineWrapper` behind
  `/<pipeline>/run`, `/v1/chat/completions` and the MCP tool.
- `deploy`: writes a deploy directory for `cfrag serve` (a wrapper folder per served pipeline
  of `haystack_cfrag.registry`, and the shipped YAML files
  made deployable as Hayhooks YAML pipelines).

See docs/serving.md.
"""
