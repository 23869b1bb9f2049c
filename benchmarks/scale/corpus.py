"""The scale run's corpus: every paragraph of the shared samples, then a seeded synthetic extension.

    python benchmarks/scale/corpus.py ../shared/data OUT_DIR --total 100000 --chunk 10000

Real part (in this order, duplicates by text dropped): the demo corpus, each HotpotQA context
paragraph (title + sentences), each PopQA item's knowledge text cut into 120-word passages, and
each Correlation-Trap document. Synthetic part, up to `--total`: passage i takes 2-4 sentences
drawn (random.Random(i)) from 3 real paragraphs chosen at random, in that order, titled
"synthetic i". It keeps the real passages' length, vocabulary and entity names, so it repeats real
entities more than new text would: the graph's node count grows slower with it than with a real
corpus of that size (the report says so). Written as chunk files `part-000.jsonl`, … of `--chunk`
passages (the first chunk also split as `part-000a` = its first 1,000), so that a run indexes
chunk by chunk and reports each.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path

SENTENCE = re.compile(r"(?<=[.!?])\s+")


def real_passages(data: Path, demo: Path) -> list[dict]:
    out: list[dict] = []
    seen: set[str] = set()

    def add(title: str, text: str) -> None:
        text = " ".join(text.split())
        if len(text.split()) >= 8 and text not in seen:
            seen.add(text)
            out.append({"title": title, "content": text})

    for line in demo.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        add(row.get("title", ""), row["content"])
    for name in sorted(data.glob("hotpotqa_*.jsonl")):
        for line in name.read_text(encoding="utf-8").splitlines():
            ctx = json.loads(line)["context"]
            for title, sentences in zip(ctx["title"], ctx["sentences"], strict=True):
                add(title, "".join(sentences))
    for name in sorted(data.glob("popqa_*.jsonl")):
        for line in name.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            words = (row.get("crag_internal_knowledge") or "").split()
            for start in range(0, len(words), 120):
                add(row.get("s_wiki_title", ""), " ".join(words[start:start + 120]))
    for name in sorted(data.glob("trap_dev*.jsonl")):
        for line in name.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            for doc in row.get("gold_docs", []) + row.get("spurious_docs", []):
                add(doc.get("title", ""), doc.get("content", ""))
    return out


def synthetic(real: list[dict], i: int) -> dict:
    rng = random.Random(i)
    sentences: list[str] = []
    for doc in rng.sample(real, 3):
        parts = [s for s in SENTENCE.split(doc["content"]) if s]
        start = rng.randrange(len(parts))
        sentences.extend(parts[start:start + rng.randint(1, 2)])
    return {"title": f"synthetic {i}", "content": " ".join(sentences[:4])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--total", type=int, default=100_000)
    parser.add_argument("--chunk", type=int, default=10_000)
    parser.add_argument("--demo", type=Path,
                        default=Path(__file__).parents[2] / "haystack_cfrag/data/demo_corpus.jsonl")
    args = parser.parse_args()
    real = real_passages(args.data, args.demo)
    passages = list(real[: args.total])
    i = 0
    while len(passages) < args.total:
        passages.append(synthetic(real, i))
        i += 1
    args.out.mkdir(parents=True, exist_ok=True)
    for n, start in enumerate(range(0, len(passages), args.chunk)):
        rows = passages[start:start + args.chunk]
        if n == 0:
            for part, chunk in (("a", rows[:1000]), ("b", rows[1000:])):
                (args.out / f"part-000{part}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in chunk),
                                                                encoding="utf-8")
            continue
        (args.out / f"part-{n:03d}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    words = sum(len(p["content"].split()) for p in passages) / len(passages)
    print(json.dumps({"real": len(real), "synthetic": i, "total": len(passages), "mean_words": round(words, 1)}))


if __name__ == "__main__":
    main()
