"""Prompt and decode rates of the embedded GGUF models on this machine: the numbers the token model prices with.

    .venv/bin/python benchmarks/token_rates.py            # both embedded models, 3 repeats, on an idle machine

For each model: a 400-token prompt evaluated from an empty cache (prompt tokens/s); 32 single-token steps of
`Llama.eval` (the model alone); and 48 tokens generated through the Haystack generator after a short prompt (decoded
tokens/s as a pipeline gets them: sampling over the 151,936-token vocabulary included, which costs about as much
as the small model's step). The median of the repeats; one JSON line per model.
`haystack_cfrag/evaluation/token_model.py` keeps the prompt and generation figures (RATES).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from haystack_cfrag import models
from haystack_cfrag.adapters import factories

TEXT = ("Mount Everest is Earth's highest mountain above sea level, located in the Mahalangur Himal "
        "sub-range of the Himalayas. ") * 40


def rates(spec: str, repeats: int, prompt_tokens: int = 400, steps: int = 32) -> dict[str, float]:
    gen = factories.chat_generator(spec, n_ctx=2048)
    gen.warm_up()
    llm = gen._model  # noqa: SLF001  (the loaded llama_cpp.Llama)
    tokens = llm.tokenize(TEXT.encode("utf-8"), add_bos=True)[:prompt_tokens]
    prompt, decode, generate = [], [], []
    for _ in range(repeats):
        llm.reset()
        start = time.perf_counter()
        llm.eval(tokens)
        prompt.append(len(tokens) / (time.perf_counter() - start))
        start = time.perf_counter()
        for t in tokens[1 : steps + 1]:
            llm.eval([t])
        decode.append(steps / (time.perf_counter() - start))
        generate.append(_generated_rate(gen))
    return {"model": spec, "prompt_tokens_per_s": round(statistics.median(prompt), 1),
            "eval_steps_per_s": round(statistics.median(decode), 1),
            "generated_tokens_per_s": round(statistics.median(generate), 1), "repeats": repeats}


def _generated_rate(gen, tokens: int = 48) -> float:
    """Decoded tokens/s of a generation: (time of a 48-token reply − time of its prompt alone) / its tokens."""
    from haystack.dataclasses import ChatMessage  # noqa: PLC0415

    question = [ChatMessage.from_user("Write the numbers from 1 to 200 in words, separated by commas.")]
    gen._model.reset()  # noqa: SLF001
    start = time.perf_counter()
    gen.run(question, generation_kwargs={"max_tokens": 1})
    first = time.perf_counter() - start
    gen._model.reset()  # noqa: SLF001
    start = time.perf_counter()
    reply = gen.run(question, generation_kwargs={"max_tokens": tokens})["replies"][0]
    total = time.perf_counter() - start
    made = (reply.meta.get("usage") or {}).get("completion_tokens") or tokens
    return (made - 1) / max(1e-6, total - first)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--models", default=f"{models.EMBEDDED_LLM},{models.EMBEDDED_SMALL_LLM}")
    args = parser.parse_args()
    for spec in args.models.split(","):
        print(json.dumps(rates(spec, args.repeats)), flush=True)


if __name__ == "__main__":
    main()
