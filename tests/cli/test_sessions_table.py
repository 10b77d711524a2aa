"""``onegc sessions`` at any width (issue 50): at 80 columns it cut ids to ``2026…r1-e04e``, no
longer an id any command takes, and its end column still wrapped; contention had no mark."""

from __future__ import annotations

from onegc_tui.cli.sessions_table import COLUMNS, plain_sessions
from onegc_tui.store import Store
from tests.homes import build_crowd, build_numbers_home


def test_whole_ids_and_no_line_wider_than_the_terminal(tmp_path):
    home = build_crowd(build_numbers_home(tmp_path / "home"))
    store = Store.open(home)
    try:
        rows = store.sessions()
    finally:
        store.close()
    for width in (80, 100, 120):
        lines = plain_sessions(rows, width)
        assert all(len(line) <= width for line in lines), [line for line in lines if len(line) > width]
        table = lines[:len(rows) + 1]  # the header and one line per session: nothing wrapped into another line
        assert [line.split()[0] for line in table[1:]] == [r["session_id"] for r in rows]  # whole ids
        assert table[0].split()[:3] == ["session", "state", "left"]
    at_80 = plain_sessions(rows, 80)
    assert any(line.startswith("not shown at 80 columns:") for line in at_80)
    piped = plain_sessions(rows, None)
    assert piped[0].split() == [w for name in COLUMNS for w in name.split()]  # a pipe: every column
    assert not any(line.startswith("not shown") for line in piped)


def test_a_contended_session_is_marked_and_the_mark_explained():
    row = {"session_id": "20260901-101500-t6-claude-code-r1-5c2e", "task": "t6_etth1", "agent": "claude-code",
           "state": "ended", "end_reason": "budget_exhausted", "score": 0.3818, "best_live": 0.6533, "contended": 1,
           "conditions": "shared the host with 1 other session(s)", "n_checkpoints": 5}
    lines = plain_sessions([row, {**row, "session_id": "clean", "contended": 0}], 80)
    assert "exhausted §" in lines[1] and "§" not in lines[2]
    assert any(line.startswith("§: ran contended") for line in lines)
    wide = plain_sessions([row], 120)
    assert "0.3818 test" in wide[1] and "0.6533" in wide[1] and "best val" in wide[0]  # each figure with its split
