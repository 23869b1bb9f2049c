"""Build haystack_cfrag/data/demo_corpus.jsonl (run from the repository root, shared/ beside it).

Sources (see haystack_cfrag/data/README.md):
- the Dark Knight case: the gold and spurious documents of trap_dev.jsonl item dev-sc-01
  (written for this project after the paper's example) and a director interview written here;
- the Mauna Kea case (the README demo): the gold and spurious documents of trap_dev.jsonl item
  dev-sc-08, the trap item the default cf_rag won against standard RAG in every recorded run with the duel;
- HotpotQA distractor dev paragraphs (CC BY-SA 4.0): all 10 context paragraphs of the first
  40 questions of hotpotqa_distractor_dev_b.jsonl, de-duplicated by title.
"""

import json
import sys
from pathlib import Path

SHARED = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data")
OUT = Path("haystack_cfrag/data/demo_corpus.jsonl")

INTERVIEW = (
    "In an interview about The Dark Knight, director Christopher Nolan said he wanted the sequel to feel "
    "like a crime epic in the tradition of Michael Mann's Heat. Nolan shot several sequences on IMAX "
    "cameras, wrote the screenplay with his brother Jonathan Nolan from a story he developed with David "
    "S. Goyer, and filmed much of Gotham City in Chicago."
)


def main() -> None:
    rows = []
    trap = {json.loads(line)["id"]: json.loads(line) for line in (SHARED / "trap_dev.jsonl").open()}
    case = trap["dev-sc-01"]
    for i, doc in enumerate(case["gold_docs"] + case["spurious_docs"]):
        rows.append({"id": f"dark-knight-{i}", "title": doc["title"], "content": doc["content"],
                     "source": "trap_dev.jsonl dev-sc-01 (written for haystack-cfrag)"})
    rows.append({"id": "dark-knight-interview", "title": "Christopher Nolan on making The Dark Knight",
                 "content": INTERVIEW, "source": "written for haystack-cfrag"})
    case = trap["dev-sc-08"]
    for i, doc in enumerate(case["gold_docs"] + case["spurious_docs"]):
        rows.append({"id": f"mauna-kea-{i}", "title": doc["title"], "content": doc["content"],
                     "source": "trap_dev.jsonl dev-sc-08 (written for haystack-cfrag)"})
    seen = set()
    with (SHARED / "hotpotqa_distractor_dev_b.jsonl").open() as fh:
        for n, line in enumerate(fh):
            if n >= 40:
                break
            row = json.loads(line)
            for title, sentences in zip(row["context"]["title"], row["context"]["sentences"], strict=True):
                if title in seen:
                    continue
                seen.add(title)
                rows.append({"id": f"hotpotqa-{len(seen)}", "title": title, "content": "".join(sentences).strip(),
                             "source": "HotpotQA distractor dev (CC BY-SA 4.0)"})
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w") as out:
        for r in rows:
            out.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"wrote {len(rows)} passages to {OUT}")


if __name__ == "__main__":
    main()
