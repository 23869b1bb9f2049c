"""The transformers backend: log P(answer | prompt) from a causal LM in one forward pass (no prefix reuse)."""

from __future__ import annotations

import time
from typing import Any

from haystack.lazy_imports import LazyImport

from haystack_cfrag.support.backend_common import COMPONENT, AnswerLogprobs, Prompt, chat_messages
from haystack_cfrag.support.math import answer_token_span, shifted_token_logprobs

with LazyImport("Run 'pip install torch' for the transformers backend.") as torch_import:
    import torch

class TransformersBackend:
    """log P(answer | prompt) from a transformers causal LM in one forward pass (the answer's tokens picked by
    offsets; a slow tokenizer tokenizes prompt and answer apart). No prefix is reused."""

    name = "transformers"

    def __init__(
        self, *, generator: Any | None = None, model: Any | None = None, tokenizer: Any | None = None
    ) -> None:
        """:param generator: a HuggingFaceLocalChatGenerator/TransformersChatGenerator; or
        :param model: a causal LM and :param tokenizer: its tokenizer."""
        if generator is None and (model is None or tokenizer is None):
            raise ValueError(
                f"{COMPONENT}: TransformersBackend needs a generator, or a model and its tokenizer."
            )
        self.generator = generator
        self.model = model
        self.tokenizer = tokenizer

    def warm_up(self) -> None:
        """Warm up the generator and keep its pipeline's model and tokenizer."""
        if self.model is None:
            if getattr(self.generator, "pipeline", None) is None:
                self.generator.warm_up()
            self.model = self.generator.pipeline.model
            self.tokenizer = self.generator.pipeline.tokenizer

    def render(self, prompt: Prompt) -> str:
        """The chat prompt text of `prompt` (a user turn or messages) with the assistant turn opened."""
        self.warm_up()
        template = getattr(self.generator, "chat_template", None)
        return self.tokenizer.apply_chat_template(chat_messages(prompt), tokenize=False,
                                                  add_generation_prompt=True, chat_template=template)

    def encode(self, prompt: Prompt, answer: str, reply_prefix: str = "") -> tuple[list[int], tuple[int, int]]:
        """(token ids of prompt + reply prefix + answer, the answer's token span)."""
        rendered = self.render(prompt) + reply_prefix
        text = rendered + answer
        if getattr(self.tokenizer, "is_fast", False):
            enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
            span = answer_token_span([tuple(o) for o in enc["offset_mapping"]], len(rendered), len(text))
            return list(enc["input_ids"]), span
        head = list(self.tokenizer(rendered, add_special_tokens=False)["input_ids"])
        tail = list(self.tokenizer(answer, add_special_tokens=False)["input_ids"])
        return head + tail, (len(head), len(head) + len(tail))

    def answer_logprobs(self, prompt: Prompt, answer: str, reply_prefix: str = "") -> AnswerLogprobs:
        """Score `answer` with one forward pass over prompt + answer."""
        torch_import.check()
        self.warm_up()
        start = time.perf_counter()
        ids, (i, j) = self.encode(prompt, answer, reply_prefix)
        if i < 1 or j <= i:
            raise ValueError(f"{COMPONENT}: the answer {answer!r} has no tokens after the prompt.")
        device = getattr(self.model, "device", "cpu")
        with torch.no_grad():
            logits = self.model(input_ids=torch.tensor([ids], device=device)).logits[0, :j]
        values = shifted_token_logprobs(logits.float().cpu().numpy(), ids[:j])[i - 1 : j - 1]
        return AnswerLogprobs(token_logprobs=tuple(float(v) for v in values), tokens_evaluated=len(ids),
                              tokens_reused=0, seconds=time.perf_counter() - start)


__all__ = ["TransformersBackend"]
