"""PopQA's namesake questions for `cfrag eval`: each question names its subject as its Wikipedia title does.

PopQA asks about long-tail entities whose names many share ("What is John Finlay's occupation?"), and
its `s_wiki_title` says which one is meant ("John Finlay (Canadian politician)"). This script writes that
title's parenthetical into the question ("In what city was John Finlay (Canadian politician) born?"),
the namesake trap's question ("John Smith (the 1950s painter)"), and keeps the row's CRAG passages as
they are (`cfrag eval`'s popqa reading: the internal knowledge cut to ~100 words, the web strips).

Kept: rows whose title has a parenthetical that the question's subject matches, whose property is not
`occupation` (there the descriptor often is the answer: "(politician)"), and where some passage states an
answer (`common.text.mention`, a whole-phrase mention: otherwise no method can win). Counted beside them, not a filter:
how many have a passage that names the subject without the descriptor's words (another namesake's shape),
and how many descriptors the namesake reading reads (`common.qualifiers.question_descriptor`; capitalised
parentheticals such as "(Arizona)" name, they do not describe).

Writes `runs/data/popqa_namesakes.jsonl` (not committed: it is shared/'s data rewritten) in the popqa
format, with the rewritten `question` and the original in `popqa_question`.

    python benchmarks/data/popqa_namesakes.py ../shared/data/popqa_longtail_crag_knowledge_first700.jsonl
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

from haystack_cfrag.common.qualifiers import described, question_descriptor
from haystack_cfrag.common.text import mention
from haystack_cfrag.evaluation.datasets import parse_row

OUT = Path("runs/data/popqa_namesakes.jsonl")
SKIPPED_PROPS = ("occupation",)
_TITLE = re.compile(r"^(?P<name>.+?) \((?P<descriptor>[^()]+)\)$")


def namesake_question(question: str, title: str) -> str | None:
    """The question with the title's parenthetical after its subject; None when the title has none or the
    question does not name the title's subject.

    >>> namesake_question("In what city was John Finlay born?", "John Finlay (Canadian politician)")
    'In what city was John Finlay (Canadian politician) born?'
    >>> namesake_question("What genre is Scream?", "Scream"), namesake_question("Who?", "A (b)")
    (None, None)
    """
    m = _TITLE.match(title.strip())
    if not m or m["name"] not in question:
        return None
    name = m["name"]
    at = question.index(name) + len(name)
    if question[at:at + 2] == "'s":
        return f"{question[:at]} ({m['descriptor']})'s{question[at + 2:]}"
    return f"{question[:at]} ({m['descriptor']}){question[at:]}"


def main(path: str) -> None:
    rows = [json.loads(line) for line in Path(path).open(encoding="utf-8") if line.strip()]
    kept, why = [], Counter()
    other_namesake = reads = 0
    for n, row in enumerate(rows, start=1):
        if row.get("prop") in SKIPPED_PROPS:
            why["occupation"] += 1
            continue
        question = namesake_question(row["question"], row.get("s_wiki_title") or "")
        if question is None:
            why["no parenthetical naming the question's subject"] += 1
            continue
        new = {**row, "question": question, "popqa_question": row["question"]}
        item = parse_row(new, "popqa", n)
        if not any(mention(a, p.content) == 1.0 for p in item.passages for a in item.answers):
            why["no passage states an answer"] += 1
            continue
        kept.append(new)
        words = question_descriptor(question)
        if words:
            reads += 1
            name = _TITLE.match(row["s_wiki_title"])["name"]
            other_namesake += any(name in p.content and described(words, p.content) == 0.0 for p in item.passages)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w", encoding="utf-8") as fh:
        for row in kept:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{OUT}: {len(kept)} of {len(rows)} rows; dropped: {dict(why)}")
    print(f"descriptor read by the namesake reading: {reads}; of those, a passage names the subject without "
          f"the descriptor's words: {other_namesake}; by property: {dict(Counter(r['prop'] for r in kept))}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
