"""One formatter per quantity: the same time span reads the same in the monitor, --plain and
'onegc sessions'; only the sessions table coarsens it."""

from __future__ import annotations

from onegc_tui.views.format import COARSE_FROM_S, arrow, clock
from onegc_tui.views.sessions_view import session_cells
from onegc_tui.views.transcript_view import event_words
from runner.wire.events import BudgetEvent


def test_one_clock_for_a_time_span():
    assert clock(7200) == "2:00:00" and clock(65) == "01:05" and clock(None) == "--:--" and clock(-3) == "00:00"
    assert clock(7200, coarse=True) == "2h00m" and clock(2520, coarse=True) == "42m"
    assert clock(COARSE_FROM_S - 1, coarse=True) == clock(COARSE_FROM_S - 1) == "09:59"  # seconds near the end


def test_plain_and_the_sessions_table_use_it():
    e = BudgetEvent(session_id="s", seq=3, ts=0.0, state="paused", remaining_s=7200.0, deadline=0.0)
    assert event_words(e).line == "budget paused, 2:00:00 left"
    row = {"session_id": "s", "state": "paused", "budget_s": 9000.0, "remaining_s": 7200.0, "remaining_ts": 0.0}
    assert session_cells(row, now=0.0)["left"].endswith(" 2h00m")


def test_arrows_follow_the_direction():
    assert (arrow("higher"), arrow("lower")) == ("↑", "↓")


def test_cost_has_the_precision_it_needs():
    """Issue 29: $0.0021 read $0.00 in the sessions table."""
    from onegc_tui.views.format import fmt_cost

    cases = {0.0021: "$0.0021", 0.0123: "$0.012", 0.042: "$0.042", 0.02: "$0.02", 0.38: "$0.38", 12.4: "$12.40",
             999.99: "$999.99", 1234.5: "$1234", 0.00001: "<$0.001", 0.0: "-", None: "-"}
    assert {v: fmt_cost(v) for v in cases} == cases
    row = {"session_id": "s", "state": "running", "cost_usd": 0.0021, "tokens_in": 1500, "tokens_out": 200}
    assert session_cells(row, now=0.0)["cost"] == "$0.0021"
