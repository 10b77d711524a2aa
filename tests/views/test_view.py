"""Unit tests of the screen-free helpers the monitor draws with: alerts, sorting, plots, budget time."""

from __future__ import annotations

from onegc_tui.views.alerts import LOW_BUDGET_FRACTION, Alerts
from onegc_tui.views.plot import best_so_far, plot_series
from onegc_tui.views.timeline import BudgetAxis
from onegc_tui.views.transcript_view import event_matches
from runner.wire.defaults import STALL_CLEARED, STALL_WARNING
from runner.wire.events import TranscriptEvent

T = 1_000_000.0


def running(sid="s", remaining=600.0, budget=1000.0, started=T) -> dict:
    return {"session_id": sid, "state": "running", "budget_s": budget, "remaining_s": remaining, "remaining_ts": started,
            "last_ts": started, "started_ts": started}


def test_low_budget_alert_fires_once_at_ten_percent():
    alerts = Alerts()
    assert alerts.check({"s": running(remaining=200)}, T) == []
    out = alerts.check({"s": running(remaining=LOW_BUDGET_FRACTION * 1000)}, T)
    assert [a.severity for a in out] == ["warning"] and "10% of the budget left" in out[0].message
    assert alerts.check({"s": running(remaining=50)}, T) == []


def test_stalled_is_the_runners_word_shown_when_it_warns_and_when_it_ends():
    """The monitor guesses no stall from silence (a long training run is silent work): it shows the
    runner's stall warning and its clearing (runner/session/stall.py), each once, as they come."""
    alerts = Alerts()
    rows = {"s": running(remaining=7200, budget=7200)}
    assert alerts.check(rows, T + 3600) == []  # an hour of silence is no stall by itself
    stall = alerts.warned("s", STALL_WARNING, "no model response for 5 min while the agent runs no tool")
    assert [(a.kind, a.severity) for a in stall] == [("stalled", "warning")]
    assert stall[0].message == "s stalled: no model response for 5 min while the agent runs no tool"
    cleared = alerts.warned("s", STALL_CLEARED, "the model answered again after 6 min")
    assert [(a.kind, a.severity, a.message) for a in cleared] == \
        [("stall_cleared", "information", "s: the model answered again after 6 min")]


def test_blocked_network_and_failures_are_notified():
    alerts = Alerts()
    assert alerts.warned("s", "network_blocked", "connect github.com:443")[0].severity == "warning"
    assert alerts.warned("s", "no_gpu", "x") == []
    oom = alerts.warned("s", "oom", "the agent's processes reached")
    assert oom[0].severity == "warning" and oom[0].message == "s: the agent's processes reached"
    assert alerts.ended("s", "agent_failed", None, "exit 1")[0].severity == "error"
    alerts2 = Alerts()
    alerts2.check({"r": running("r")}, T)
    died = alerts2.check({"r": {**running("r"), "state": "failed", "end_detail": "the runner died"}}, T)
    assert died and "the runner died" in died[0].message


def test_filters_match_kinds_and_words():
    call = TranscriptEvent(session_id="s", seq=1, ts=T, role="assistant", kind="tool_call", tool="bash", text="python run.py")
    bad = TranscriptEvent(session_id="s", seq=2, ts=T, role="tool", kind="tool_result", text="Traceback", exit_code=1)
    assert event_matches(call, "tools") and not event_matches(call, "text") and not event_matches(call, "errors")
    assert event_matches(bad, "errors") and event_matches(bad, "all", ("traceback",))
    assert not event_matches(call, "all", ("python", "nope"))


def test_budget_clock_stands_still_while_paused():
    clock = BudgetAxis([(T, 0.0), (T + 10, 10.0), (T + 70, 10.0), (T + 80, 20.0)])
    assert clock.at(T + 5) == 5.0 and clock.at(T + 40) == 10.0 and clock.at(T + 75) == 15.0


def test_plot_draws_a_step_line_and_best_so_far():
    best = best_so_far([(10, 0.5), (20, 0.4), (30, 0.8)], "higher", until=60)
    assert best == [(10, 0.5), (30, 0.8), (60, 0.8)]
    canvas, (lo, hi) = plot_series([best], 10, 3, 60)
    rows = canvas.rows()
    assert len(rows) == 3 and all(len(r) == 10 for r in rows)
    assert rows[-1].strip() and rows[0].strip()  # the low start and the high end are both drawn
    assert lo < 0.5 and hi > 0.8


def test_only_a_new_best_score_is_announced_and_direction_counts():
    lower = Alerts(direction=lambda sid: "lower")  # T1/T6: lower is better
    assert [len(lower.scored("s", f"c{i}", v, None, 1.0)) for i, v in enumerate([0.40, 0.42, 0.38, 0.39], 1)] \
        == [1, 0, 1, 0]
    higher = Alerts()
    assert [len(higher.scored("s", f"c{i}", v, None, 1.0)) for i, v in enumerate([0.40, 0.42, 0.38], 1)] == \
        [1, 1, 0]
