"""benchmarks/data/popqa_namesakes.py: PopQA's questions with their subject's Wikipedia descriptor written in."""

import importlib.util
import json
from pathlib import Path

_PATH = Path(__file__).resolve().parents[3] / "benchmarks" / "data" / "popqa_namesakes.py"
_SPEC = importlib.util.spec_from_file_location("popqa_namesakes", _PATH)
tool = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(tool)


def test_the_titles_parenthetical_follows_the_subject_possessive_included():
    assert tool.namesake_question("What genre is Scream?", "Scream (band)") == "What genre is Scream (band)?"
    assert (tool.namesake_question("Who was the father of Red Rum?", "Red Rum (horse)")
            == "Who was the father of Red Rum (horse)?")
    assert (tool.namesake_question("What is Jim Brown's genre?", "Jim Brown (singer)")
            == "What is Jim Brown (singer)'s genre?")


def test_no_question_where_the_title_has_no_parenthetical_or_names_another_subject():
    assert tool.namesake_question("What genre is Scream?", "Scream") is None
    assert tool.namesake_question("What genre is Shout?", "Scream (band)") is None


def test_kept_rows_are_namesake_questions_with_an_answer_stated(tmp_path, monkeypatch, capsys):
    def row(question, title, prop, passage, answers, web=""):
        return {"question": question, "s_wiki_title": title, "prop": prop, "answers": answers,
                "crag_internal_knowledge": passage, "crag_web_knowledge": web}

    rows = [
        row("In what city was John Finlay born?", "John Finlay (Canadian politician)", "place of birth",
            "John Finlay, a Canadian politician, was born in Dummer.", ["Dummer"],
            web="Poets: John Finlay (1782-1810) was a Scottish poet."),        # another namesake's passage
        row("What is John Finlay's occupation?", "John Finlay (Canadian politician)", "occupation",
            "John Finlay was a Canadian politician.", ["politician"]),            # the descriptor is the answer
        row("In what city was Ann Lee born?", "Ann Lee (singer)", "place of birth",
            "Ann Lee was born somewhere.", ["Leeds"]),                            # no passage states it
        row("What genre is Scream?", "Scream", "genre", "Scream is a rock band.", ["rock"]),  # no descriptor
    ]
    src = tmp_path / "popqa.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    monkeypatch.setattr(tool, "OUT", tmp_path / "out.jsonl")
    tool.main(str(src))
    kept = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["question"] for r in kept] == ["In what city was John Finlay (Canadian politician) born?"]
    assert kept[0]["popqa_question"] == "In what city was John Finlay born?"
    out = capsys.readouterr().out
    assert "1 of 4 rows" in out and "a passage names the subject without the descriptor's words: 1" in out
