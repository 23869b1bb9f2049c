"""A runtime's models: the reader, the embedders, the scorer and the auxiliary model, each loaded once and lent
to every pipeline it builds.

    >>> from haystack_cfrag.testing import MockChatGenerator
    >>> from haystack_cfrag.testing.fakes import HashingTextEmbedder
    >>> parts = ModelParts(chat_generator=MockChatGenerator(), text_embedder=HashingTextEmbedder())
    >>> parts.aux_llm is None, parts.sequential, parts.document_embedder is None   # handed in: no second model
    (True, False, True)
"""

from __future__ import annotations

import threading
from typing import Any

from haystack_cfrag import models
from haystack_cfrag.adapters import factories, llama_cpp_states
from haystack_cfrag.common import interrupts
from haystack_cfrag.pipelines.loading import component_key, share_node_models

AUTO = "auto"
"""`aux_llm=AUTO`: the small embedded model beside a local reader, else the reader (see `ModelParts`)."""
AUX_N_CTX = 1024
"""The auxiliary model's context: its prompts are a question and a few lines (a small KV cache)."""


class ModelParts:
    """The models every pipeline of a runtime shares (see `Runtime` for the parameters); `aux_llm` `AUTO`: the
    small embedded model beside a local llama.cpp reader, else the reader itself."""

    def __init__(self, *, llm: str = models.EMBEDDED_LLM, embedder: str = models.EMBEDDED_EMBEDDER,
                 scorer: str | None = None, device: str | None = None, max_tokens: int = 256, logprobs: bool = False,
                 chat_generator: Any | None = None, text_embedder: Any | None = None,
                 document_embedder: Any | None = None, aux_llm: str | None = AUTO,
                 prefix_states: int | None = None) -> None:
        self.prefix_states = prefix_states
        self.generator = chat_generator or factories.chat_generator(
            llm, max_tokens=max_tokens, logprobs=logprobs, device=device, prefix_states=prefix_states)
        self.text_embedder = text_embedder or factories.text_embedder(embedder, device=device)
        self.document_embedder = document_embedder
        """The text embedder's model for documents (in batches): built from `embedder` when the text embedder is."""
        if document_embedder is None and text_embedder is None:
            self.document_embedder = factories.document_embedder(embedder, device=device)
        self.scorer = factories.scorer(scorer, device=device) if scorer else None
        # llama.cpp and local transformers models are not thread-safe: drafts run in turn
        self.sequential = chat_generator is None and not llm.startswith("openai:")
        local = chat_generator is None and not llm.startswith(("openai:", "hf:"))
        self.aux_llm = (models.EMBEDDED_SMALL_LLM if local else None) if aux_llm == AUTO else aux_llm
        self.aux: Any | None = None
        """The auxiliary generator, built on its first need (`auxiliary`)."""
        self._aux_lock = threading.Lock()
        self.pool: dict[str, Any] = {
            component_key(c): c for c in (self.generator, self.text_embedder, self.scorer) if c is not None
        }
        self.owners: dict[str, Any] = {}
        """Configuration -> the holder whose loaded model every pipeline borrows (`share_node_models`)."""
        self._warm = False

    def auxiliary(self) -> Any:
        """The generator of a file's auxiliary calls (`aux_llm`), one instance for every pipeline (loaded on first
        call, not at warm-up: a cascade's escalation may never come)."""
        with self._aux_lock:
            if self.aux is None:
                aux = factories.chat_generator(self.aux_llm, n_ctx=AUX_N_CTX, prefix_states=self.prefix_states)
                self.aux = aux.defer_load() if callable(getattr(aux, "defer_load", None)) else aux
            return self.aux

    def warm_up(self) -> None:
        """Load the models once (a Ctrl-C during the load takes effect after it)."""
        if not self._warm:
            interrupts.warm_up(*self.pool.values())
            for comp in self.pool.values():  # the pipelines' reader nodes borrow the model loaded here
                share_node_models(comp, self.owners)
            self._warm = True

    def forget_prompts(self) -> None:
        """Empty the loaded llama.cpp models' prompt caches and kept states: the next call evaluates its whole
        prompt (a timing of one pipeline that starts where another left the reader would credit it with the other's
        prompt)."""
        holders = [self.generator, self.aux, *self.owners.values()]
        for llm in {id(m): m for h in holders if (m := getattr(h, "_model", None)) is not None}.values():
            if callable(getattr(llm, "reset", None)):
                llm.reset()
            llama_cpp_states.forget(llm)


__all__ = ["AUTO", "AUX_N_CTX", "ModelParts"]
