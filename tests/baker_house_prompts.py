"""Two questions over the same eight passages (a page's periods), for timing and testing the reader's kept prompt
states: tests/integration/test_prefix_states.py and benchmarks/kept_states_cost.py."""

from __future__ import annotations

from haystack.dataclasses import ChatMessage

PASSAGES = "\n".join(
    f"[{i}] Newton D. Baker House, Washington: from {1900 + 7 * i} to {1907 + 7 * i} the house was the home of "
    f"resident number {i}, a lawyer who kept a garden of roses and a library of {100 * i} books about rivers."
    for i in range(1, 9)
)
FIRST, SECOND = "Who lived in the house from 1914 to 1921?", "Who lived there from 1928 to 1935?"


def ask(question: str) -> list[ChatMessage]:
    """The reader's messages for `question` over the passages."""
    return [ChatMessage.from_system("Answer with a short answer only."),
            ChatMessage.from_user(f"Passages:\n{PASSAGES}\n\nQuestion: {question}\nAnswer:")]
