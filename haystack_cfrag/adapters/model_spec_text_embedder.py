"""SentenceTransformersTextEmbedder that understands this package's model specs: resolved when the model loads,
kept as the spec by `to_dict` (portable); any other value passed on unchanged."""

from __future__ import annotations

from typing import Any

from haystack import component
from haystack.lazy_imports import LazyImport

from haystack_cfrag.models import EMBEDDED_EMBEDDER, resolve_model


def warm_up_with_spec(embedder: Any, parent: type) -> None:
    """`parent.warm_up(embedder)` with `embedder.model` resolved from a spec for the load, kept as the spec."""
    if embedder.embedding_backend is not None:
        return
    spec = embedder.model
    embedder.model = resolve_model(spec)
    try:
        parent.warm_up(embedder)
    finally:
        embedder.model = spec


with LazyImport("Run 'pip install sentence-transformers-haystack' (or `make setup`).") as st_import:
    from haystack_integrations.components.embedders.sentence_transformers import SentenceTransformersTextEmbedder

if st_import.is_successful():

    @component
    class ModelSpecTextEmbedder(SentenceTransformersTextEmbedder):
        """
        `SentenceTransformersTextEmbedder` whose `model` may be a spec such as `embedded:all-MiniLM-L6-v2`.

        ### Usage example
        ```python
        from haystack_cfrag.adapters.model_spec_text_embedder import ModelSpecTextEmbedder

        embedder = ModelSpecTextEmbedder(model="embedded:all-MiniLM-L6-v2", progress_bar=False)
        print(len(embedder.run(text="Who directed Heat?")["embedding"]))   # 384, loaded on first run
        print(embedder.to_dict()["init_parameters"]["model"])              # embedded:all-MiniLM-L6-v2
        ```
        """

        def __init__(self, *, model: str = EMBEDDED_EMBEDDER, **kwargs: Any) -> None:
            SentenceTransformersTextEmbedder.__init__(self, model=model, **kwargs)

        def warm_up(self) -> None:
            """Resolve the model spec and load the model (once)."""
            warm_up_with_spec(self, SentenceTransformersTextEmbedder)

else:  # pragma: no cover - exercised only without the optional dependency

    class ModelSpecTextEmbedder:  # type: ignore[no-redef]
        """Placeholder that explains the missing dependency."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            st_import.check()
