"""The CausalRAG package's lazy exports (its examples run in tests/unit/docs/test_examples_run.py)."""

import pytest

import haystack_cfrag.causal_rag as causal_rag


def test_lazy_exports():
    from haystack_cfrag.causal_rag.components import CausalGraphBuilder

    assert causal_rag.CausalGraphBuilder is CausalGraphBuilder
    with pytest.raises(AttributeError):
        causal_rag.Nope  # noqa: B018
