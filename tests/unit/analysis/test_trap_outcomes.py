"""benchmarks/analysis/trap_outcomes.py: the rows `--dated-gold` leaves out (a secondary view of TimeQA)."""

from tests.analysis_tools import load_tool

tool = load_tool("trap_outcomes")


def row(question, gold, axis="temporal"):
    return {"question": question, "gold_docs": [{"content": g} for g in gold], "axis": axis}


def test_a_row_whose_gold_paragraph_dates_no_part_of_the_period_is_left_out():
    rows = {
        "dated": row("Who owned the villa from 1964 to 1965?", ["- 1964-1965 - Jacqueline Kennedy"]),
        "edge": row("Which registry from 1948 to 1958?", ["Sold to Argentina in 1958."]),   # an edge year dates it
        "elsewhere": row("Who owned the villa from 1964 to 1965?", ["In 1976 Yolande Fox bought it."]),
        "hemma": row("Emma of Altdorf had what baby in 828?", ["She favoured her son Carloman."]),  # no date at all
        "namesake": row("Which Herschel discovered Uranus?", ["William Herschel found it."], axis="entity"),
    }
    assert tool.undated_gold(rows) == ["elsewhere", "hemma"]
