"""The status line of `cfrag ask`/`compare`: told each stage and LLM call as it starts, silent off a terminal."""

from __future__ import annotations

import io

from haystack_cfrag.cli.progress import StatusLine
from haystack_cfrag.common.timing import timed_stages
from tests.unit.cfrag.test_llm_spans import build


def test_progress_hears_every_stage_and_llm_call_in_order():
    pipe, data = build(timeout_s=None)
    heard: list[str] = []
    with timed_stages(progress=heard.append) as timer:
        out = pipe.run(data)
    assert out["duel"]["answer"]
    components = [m for m in heard if ":" not in m]
    assert set(components) == {"expander", "drafter", "ranker", "duel"} and components[-1] == "duel"
    assert "expander: counterfactuals" in heard
    # the baseline (index 4, drafted first) and the four subsets' drafts, each named while the drafter runs
    drafts = [m for m in heard if m.startswith("drafter: draft ")]
    assert sorted(drafts) == [f"drafter: draft {i}" for i in range(5)]
    assert heard.index("drafter") < min(heard.index(m) for m in drafts) < heard.index("ranker") < heard.index("duel")
    assert len(timer.llm_calls) == len([m for m in heard if ": " in m])


def test_a_failing_progress_callback_never_breaks_the_run():
    def broken(message: str) -> None:
        raise RuntimeError("terminal closed")

    pipe, data = build(timeout_s=None)
    with timed_stages(progress=broken):
        assert pipe.run(data)["duel"]["answer"]


def test_status_line_rewrites_one_terminal_line_and_is_silent_elsewhere():
    stream = io.StringIO()
    status = StatusLine(stream, label="cf_rag", force=True)
    status("drafter: draft 1")
    status("ranker")
    status.done()
    text = stream.getvalue()
    assert "\r\033[K[cf_rag] drafter: draft 1 (" in text and "\r\033[K[cf_rag] ranker (" in text
    assert text.endswith("\r\033[K") and "\n" not in text

    quiet = io.StringIO()
    silent = StatusLine(quiet)  # a StringIO is not a terminal
    silent("drafter")
    silent.done()
    assert quiet.getvalue() == ""
