"""Test and load-run helpers shipped with the package (no models, no network).

`MockChatGenerator` stands in for a real chat model when serving CF-RAG for tests and load
runs (`cfrag serve --mock`, `CFRAG_GENERATOR=mock`): it answers every CF-RAG prompt in the
format the components parse, and can inject failures and latency deterministically.
"""

from haystack_cfrag.testing.mock_chat_generator import MockChatGenerator

__all__ = ["MockChatGenerator"]
