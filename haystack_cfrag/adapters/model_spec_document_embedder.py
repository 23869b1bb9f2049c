"""SentenceTransformersDocumentEmbedder that understands this package's model specs (see model_spec_text_embedder)."""

from __future__ import annotations

from typing import Any

from haystack import component
from haystack.lazy_imports import LazyImport

from haystack_cfrag.adapters.model_spec_text_embedder import warm_up_with_spec
from haystack_cfrag.models import EMBEDDED_EMBEDDER

with LazyImport("Run 'pip install sentence-transformers-haystack' (or `make setup`).") as st_import:
    from haystack_integrations.components.embedders.sentence_transformers import (
        SentenceTransformersDocumentEmbedder,
    )

if st_import.is_successful():

    @component
    class ModelSpecDocumentEmbedder(SentenceTransformersDocumentEmbedder):
        """
        `SentenceTransformersDocumentEmbedder` whose `model` may be a spec such as `embedded:all-MiniLM-L6-v2`.

        ### Usage example
        ```python
        from haystack import Document
        from haystack_cfrag.adapters.model_spec_document_embedder import ModelSpecDocumentEmbedder

        embedder = ModelSpecDocumentEmbedder(model="embedded:all-MiniLM-L6-v2", progress_bar=False)
        docs = embedder.run(documents=[Document(content="Heat (1995)")])["documents"]
        print(len(docs[0].embedding), embedder.to_dict()["init_parameters"]["model"])  # 384 embedded:all-MiniLM-L6-v2
        ```
        """

        def __init__(self, *, model: str = EMBEDDED_EMBEDDER, **kwargs: Any) -> None:
            SentenceTransformersDocumentEmbedder.__init__(self, model=model, **kwargs)

        def warm_up(self) -> None:
            """Resolve the model spec and load the model (once)."""
            warm_up_with_spec(self, SentenceTransformersDocumentEmbedder)

else:  # pragma: no cover - exercised only without the optional dependency

    class ModelSpecDocumentEmbedder:  # type: ignore[no-redef]
        """Placeholder that explains the missing dependency."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            st_import.check()
