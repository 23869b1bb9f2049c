"""Shared set-up of the examples: the embedded models and the demo store (no keys, no hub).

Replace these three objects with your own store, embedder and generator.
"""

from haystack_cfrag.adapters import factories
from haystack_cfrag.stores import open_model_store

QUESTION = "Who is the lead actor in The Dark Knight?"


def demo_components():
    """(store, text_embedder, chat_generator) on the embedded defaults, warmed up."""
    store = open_model_store()
    text_embedder = factories.text_embedder()
    generator = factories.chat_generator(max_tokens=160)
    text_embedder.warm_up()
    generator.warm_up()
    return store, text_embedder, generator
