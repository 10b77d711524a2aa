"""A record cut past its caps (issue 38 part 3) is said in every view: the sessions row and the
detail's note, the transcript pane's line, the plain display's line."""

from __future__ import annotations

from onegc_tui.views.sessions_view import TRUNCATED_MARK, session_cells, truncation_note
from onegc_tui.views.transcript_view import event_line, event_words
from runner.wire.events import Truncated


def test_a_cut_record_is_marked_in_the_row_and_said_in_the_note():
    row = {"session_id": "s1", "state": "ended", "end_reason": "completed", "truncated": 5_200_000,
           "truncated_bytes": 1_370_000_000}
    assert session_cells(row)["session"] == f"{TRUNCATED_MARK} s1"
    assert truncation_note(row) == ("record cut: 5,200,000 lines of the agent's output (1.4 GB) left out past "
                                    "the session's caps")
    whole = {**row, "truncated": 0}
    assert session_cells(whole)["session"] == "s1" and truncation_note(whole) is None


def test_a_truncated_event_reads_the_same_in_the_pane_and_the_plain_display():
    e = Truncated(session_id="s1", seq=9, ts=1.7e9, stream="stdout", dropped=1200, dropped_bytes=600_000,
                  limit_bytes=1 << 20, final=True)
    said = event_words(e)  # one wording (views/transcript_view.py): --plain's label and words, the pane's mark and words
    assert said is not None and said.line == ("record cap reached: 1,200 more stdout lines not copied to "
                                              "agent.stdout.jsonl (600,000 bytes) (the last count, at the session's end)")
    line = event_line(e)
    assert line is not None and line.endswith(f"✂ {said.words}")
