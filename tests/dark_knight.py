"""The paper's Correlation-Trap example (Dark Knight), as a tiny corpus for the unit tests.

Four reviews praise Heath Ledger's Joker (topically close to the question, not answering
it); one cast entry names Christian Bale in the lead; a director interview and a few
unrelated film passages fill the store. Written for this project after the paper's example.
"""

import json

from haystack import Document

QUESTION = "Who is the lead actor in The Dark Knight?"
CANDIDATES = ["Heath Ledger", "Christian Bale", "Christopher Nolan"]

COUNTERFACTUALS = {
    "original_answer_hint": "Christian Bale",
    "counterfactuals": [
        {"question": "Who played the villain in The Dark Knight?", "type": "role", "answer_hint": "Heath Ledger"},
        {"question": "Who directed The Dark Knight?", "type": "categorical", "answer_hint": "Christopher Nolan"},
        {"question": "Who is the lead actor in Inception?", "type": "entity", "answer_hint": "Leonardo DiCaprio"},
        {"question": "Who is the lead actor in The Dark Knight?", "type": "role", "answer_hint": "Christian Bale"},
        {"question": "Who was the lead actress in The Dark Knight?", "type": "role",
         "answer_hint": "Maggie Gyllenhaal"},
        {"question": "What is the weather in Paris?", "type": "scope", "answer_hint": "rain"},
    ],
}
COUNTERFACTUAL_REPLY = json.dumps(COUNTERFACTUALS)

REVIEWS = [
    "Review: Heath Ledger gives the performance of his career as the Joker in The Dark Knight; "
    "the actor played the villain with anarchic menace that dominates the film.",
    "Review: The Dark Knight belongs to its villain. Ledger's Joker is the most memorable "
    "performance, and the actor's mannerisms make every scene with the villain electric.",
    "Review: Critics agree the Joker of The Dark Knight is a landmark villain; Heath Ledger's "
    "actor craft earned a posthumous Oscar for the role of the villain.",
    "Review: Watching The Dark Knight again, the villain still steals the film. The Joker as "
    "played by Ledger is chaos incarnate, the actor disappearing into the villain.",
]
CAST = (
    "Cast of The Dark Knight (2008): lead actor Christian Bale stars as Bruce Wayne; the lead "
    "role of the film belongs to Bale, who returns as the protagonist."
)
INTERVIEW = (
    "Interview: director Christopher Nolan discusses directing The Dark Knight, his choices as a "
    "filmmaker, shooting in IMAX and writing the screenplay with his brother."
)
FILLER = [
    "Inception (2010) is a science fiction film; its lead actor Leonardo DiCaprio plays a thief of dreams.",
    "The Prestige is a film about rival magicians in London at the end of the nineteenth century.",
    "Paris weather in spring is mild with frequent rain showers and cool mornings for tourists.",
    "Gotham City is a fictional city in comic books published by DC Comics since the 1940s era.",
]


def documents() -> list[Document]:
    """The corpus, with stable ids and titles."""
    docs = [Document(id=f"review-{i}", content=t, meta={"title": f"Review {i}"}) for i, t in enumerate(REVIEWS)]
    docs.append(Document(id="cast", content=CAST, meta={"title": "The Dark Knight cast"}))
    docs.append(Document(id="interview", content=INTERVIEW, meta={"title": "Nolan interview"}))
    docs += [Document(id=f"filler-{i}", content=t, meta={"title": f"Filler {i}"}) for i, t in enumerate(FILLER)]
    return docs
