"""Test and load-run helpers shipped with the package (no models, no network): `MockChatGenerator` stands in for
the chat model (`cfrag serve --mock`), with deterministic failures and latency."""

from haystack_cfrag.testing.mock_chat_generator import MockChatGenerator

__all__ = ["MockChatGenerator"]
