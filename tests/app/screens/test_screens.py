"""Pilot tests of the history, session detail, replay and new-session screens."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable

from onegc_tui.app import make_app
from tests.homes import build_home

SIZE = (160, 44)


@pytest.fixture
def app_home(tmp_path):
    return build_home(tmp_path / "home", full=True)


async def test_marking_and_replay_side_by_side(app_home):
    from onegc_tui.app.screens.detail import ReplayScreen

    app = make_app(app_home, focus="a-ended", live=False, show_clock=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("r")  # nothing marked: a hint, no screen
        assert not isinstance(app.screen, ReplayScreen)
        await pilot.press("space", "down", "space", "r")
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ReplayScreen) and screen.ids == ["a-ended", "c-ended"]
        assert [t.session_id for t in screen.timelines] == ["a-ended", "c-ended"]
        end = screen.cursor
        await pilot.press("left", "left")
        assert screen.cursor == pytest.approx(end - 2 * 0.01 * 120)
        await pilot.press("home")
        cursors = [str(w.render()) for w in screen.query(".replay-cursor")]
        assert all("best live val -" in c for c in cursors)  # nothing scored at budget time 0
        await pilot.press("end")
        assert "best live val 0.9300" in str(screen.query(".replay-cursor").first().render())
        await pilot.press("escape")
        assert not isinstance(app.screen, ReplayScreen)


# ---------------------------------------------------------------------------- history and detail


async def test_history_matrix_drill_down_and_detail(app_home):
    from onegc_tui.app.screens.detail import DetailScreen
    from onegc_tui.app.screens.history import HistoryScreen, SessionsScreen

    app = make_app(app_home, live=False, show_clock=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("h")
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        table = screen.query_one("#demo-matrix", DataTable)  # the demo task: a table of its own
        # scripted on T0: 0.93 and 0.88 succeeded, one repeat failed: mean ± std (ddof=1), 2/3
        assert str(table.get_cell("ours (demo)\x1fscripted [paper split]", "t0")) == "0.9050±0.0354 2/3"
        assert str(table.get_cell("ours (demo)\x1fcommand [paper split]", "t0")) == "(1 running)"
        paper = screen.query_one("#matrix", DataTable)
        assert str(paper.get_cell("paper\x1fOpus 4.7", "agg")) == "+0.302"  # the paper's Table 4
        assert "t0" not in [c.value for c in paper.columns]  # the demo is not compared with the paper
        table.focus()
        await pilot.pause()
        table.cursor_coordinate = (table.get_row_index("ours (demo)\x1fscripted [paper split]"), 2)
        await pilot.pause()
        detail = str(screen.query_one("#cell-detail").render())
        assert "SEM 0.0250" in detail and "success 2/3" in detail and "official val accuracy at 25%" in detail
        await pilot.press("b")
        assert str(table.get_cell("ours (demo)\x1fscripted [paper split]", "t0")) == "0.9300 2/3"
        await pilot.press("enter")
        await pilot.pause()
        drill = app.screen
        assert isinstance(drill, SessionsScreen) and drill.ids == ["a-ended", "c-ended", "d-failed"]
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen)
        analytics = str(app.screen.query_one("#analytics").render())
        assert "GPU time busy" in analytics and "first checkpoint at 00:10" in analytics
        assert "best live val accuracy at budget" in analytics
        await pilot.press("escape", "escape", "escape")
        assert app.screen is app.screen_stack[0]


async def test_detail_cursor_walks_the_transcript(app_home):
    from onegc_tui.app.screens.detail import DetailScreen

    app = make_app(app_home, focus="a-ended", live=False, show_clock=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("d")
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DetailScreen)
        assert screen.cursor == pytest.approx(60.0)  # an ended session: its active time
        await pilot.press("home")
        assert "best live val -" in str(screen.query_one("#detail-cursor").render())
        for _ in range(12):  # 12 % of 120 s: past the first checkpoint at 10 s
            await pilot.press("right")
        assert "best live val 0.4100" in str(screen.query_one("#detail-cursor").render())


async def test_new_session_form_shows_the_error_in_one_line(app_home):
    from textual.widgets import Select

    from onegc_tui.app.screens.newsession import NewSessionScreen

    app = make_app(app_home, live=False, show_clock=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("n")
        form = app.screen
        assert isinstance(form, NewSessionScreen)
        form.query_one("#agent", Select).value = "command"
        await pilot.click("#start")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "the command agent needs a command line" in str(form.query_one("#form-error").render())
        assert app.screen is form
        await pilot.press("escape")
        assert not isinstance(app.screen, NewSessionScreen)


async def test_history_cell_shows_best_of_k_paired_comparison_and_time_ledger(tmp_path):
    """Issue 30: under a study's cell, the official rule's best-of-k, the paired comparison with
    the other configuration (SD, SEM, CI labelled) and the time ledger; the detail view's ledger."""
    from onegc_tui.app.screens.detail import DetailScreen
    from onegc_tui.app.screens.history import HistoryScreen, SessionsScreen
    from tests.homes import build_demo_study

    home = build_demo_study(tmp_path / "home")
    app = make_app(home, live=False, show_clock=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("h")
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        table = screen.query_one("#demo-matrix", DataTable)
        table.focus()
        table.cursor_coordinate = (table.get_row_index("ours (demo)\x1fquick (scripted [paper split])"), 2)
        await app.workers.wait_for_complete()
        await pilot.pause()
        detail = str(screen.query_one("#cell-detail").render())
        assert "best of 2 (official rule) at" in detail and "100%: 0.9746" in detail
        # quick - steady by repeat: 0.97-0.70 and 0.9746-0.6586
        assert ("vs steady (scripted [paper split]): paired diff +0.2930 (+: this better) over 2 · SD 0.0325 · SEM 0.0230"
                in detail)
        assert "95% CI [+0.2700, +0.3160]" in detail
        assert "time (2 sessions" in detail and "agent's own work (no model) 69%" in detail  # scripted: no model
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, SessionsScreen)
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen)
        analytics = str(app.screen.query_one("#analytics").render())
        assert "time ledger wall" in analytics and "tool time" in analytics
