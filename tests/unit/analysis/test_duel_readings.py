"""benchmarks/analysis/duel_readings.py: the recorded duels with a right answer, each reading's pick, the table."""

from tests.analysis_tools import load_tool

tool = load_tool("duel_readings")


def cf_record(qid, baseline, candidates, duel, em, system="cf_rag"):
    """A `cf_rag` record: `candidates` [(index, answer, em)], `duel` [(index, passage id)]."""
    return {"system": system, "qid": qid, "question": f"{qid}?", "answer": candidates[0][1], "em": em,
            "override": {"baseline_draft": baseline,
                         "duel": {"candidates": [i for i, _ in duel], "passages": [p for _, p in duel]}},
            "candidates": [{"index": i, "answer": a, "em": e} for i, a, e in candidates]}


RECORDS = [
    cf_record("perth", 2, [(2, "Sydney", 0.0), (0, "Perth", 1.0)], [(2, "p-syd"), (0, "p-per")], 0.0),
    cf_record("both-wrong", 1, [(1, "Cairo", 0.0), (0, "Lagos", 0.0)], [(1, "a"), (0, "b")], 0.0),
    cf_record("kept", 0, [(0, "Casey Affleck", 1.0), (1, "Heath Ledger", 0.0)], [(0, "c"), (1, "d")], 1.0),
    {"system": "cf_rag", "qid": "no-duel", "override": {}, "candidates": []},
    cf_record("other", 2, [(2, "x", 0.0), (0, "y", 1.0)], [(2, "e"), (0, "f")], 0.0, system="standard_rag"),
]


def test_only_the_duels_a_reading_can_change_are_read():
    found = tool.duels(RECORDS, "cf_rag")
    assert [d["qid"] for d in found] == ["perth", "kept"]   # no right candidate, no duel, another system: left out
    perth = found[0]
    assert perth["baseline"] == 2 and [(c["answer"], c["passage"], c["em"]) for c in perth["candidates"]] == [
        ("Sydney", "p-syd", 0.0), ("Perth", "p-per", 1.0)]


def test_each_reading_picks_its_best_score_and_the_baseline_on_a_tie():
    perth, kept = tool.duels(RECORDS, "cf_rag")
    assert tool.pick(perth, [-0.8, -0.2]) == 1 and tool.pick(perth, [-0.5, -0.5]) == 0  # the baseline is first here
    assert tool.pick(kept, [-0.1, -0.1]) == 0
    perth["scores"] = {"support": [-0.8, -0.2], "pmi": [0.5, 0.1], "joint": [-1.0, -2.0], "options": [-0.1, -0.9]}
    kept["scores"] = {"support": [-0.1, -0.9], "pmi": [0.1, 0.4], "joint": [-1.0, -2.0], "options": [-0.1, -0.9]}
    for d in (perth, kept):
        d["seconds"] = 10.0
    table = tool.report([perth, kept])
    rows = {line.split("|")[1].strip(): line for line in table.splitlines() if line.startswith("| ")}
    assert "2 duels with a right candidate; the recorded reading is right on 1." in table
    assert rows["support"].startswith("| support | 2 | 1 | 0 | perth |")
    assert rows["pmi"].startswith("| pmi | 0 | 0 | 1 |") and rows["pmi"].rstrip().endswith("| kept |")
