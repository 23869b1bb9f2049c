"""Serving CF-RAG over HTTP with Hayhooks (REST, OpenAI-compatible chat, MCP; docs/serving.md): the process-wide
`service`, the Hayhooks `wrapper`, the `deploy` directory, the guarded `app` and its `middleware`, `requests`.
"""
