"""Pilot tests of the live dashboard: selection, pause, abort, sorting, filters, search, follow, alerts."""

from __future__ import annotations

import json

import pytest
from textual.widgets import DataTable, Log

from onegc_tui.app import make_app
from onegc_tui.app.screens.confirm import ConfirmScreen
from tests.homes import add_events, build_home

SIZE = (160, 44)


@pytest.fixture
def app_home(tmp_path):
    return build_home(tmp_path / "home", full=True)


def control_lines(home, sid) -> list[dict]:
    path = home / "runs" / sid / "control.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def test_selection_shows_the_session_in_the_panes(app_home):
    app = make_app(app_home, live=False, show_clock=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.dashboard.selected == "b-paused"  # the live session first
        log = app.query_one("#transcript-log", Log)
        assert any("b-paused: I'll start" in line for line in log.lines)
        assert "PAUSED" in str(app.query_one("#countdown").render())
        await pilot.press("down")
        await pilot.pause()
        assert app.dashboard.selected == "a-ended"
        assert any("a-ended: I'll start" in line for line in log.lines)
        assert not any("b-paused" in line for line in log.lines)
        ckpts = app.query_one("#ckpt-table", DataTable)
        assert str(ckpts.get_cell("run_1_epoch3-1", "note")) == "★ best"
        assert "_orig_mod." in str(ckpts.get_cell("bad-1", "note"))


async def test_pause_key_requests_resume_of_a_paused_session(app_home):
    app = make_app(app_home, focus="b-paused", live=False, show_clock=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.dashboard.selected == "b-paused"
        await pilot.press("p")
        await pilot.pause()
    assert [c["action"] for c in control_lines(app_home, "b-paused")] == ["resume"]


async def test_pause_key_on_an_ended_session_does_nothing(app_home):
    app = make_app(app_home, focus="a-ended", live=False, show_clock=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("p")
        await pilot.pause()
    assert control_lines(app_home, "a-ended") == []


async def test_abort_asks_for_confirmation(app_home):
    app = make_app(app_home, focus="b-paused", live=False, show_clock=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmScreen)
        assert control_lines(app_home, "b-paused") == []
        await pilot.press("a")
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
    assert [c["action"] for c in control_lines(app_home, "b-paused")] == ["abort"]


# ---------------------------------------------------------------------------- dashboard


async def test_sorting_keeps_the_selected_session_under_the_cursor(app_home):
    app = make_app(app_home, focus="c-ended", live=False, show_clock=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = app.query_one("#sessions", DataTable)
        assert app.dashboard.table.order == ["b-paused", "a-ended", "c-ended", "d-failed"]  # live first
        while app.dashboard.table.sort_by != "best":
            await pilot.press("s")
        await pilot.pause()
        assert app.dashboard.table.order[:2] == ["a-ended", "c-ended"]  # 0.93, then 0.88
        assert app.dashboard.table.order[-1] == "d-failed"  # no score: last
        assert app.dashboard.selected == "c-ended"
        assert table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value == "c-ended"
        assert table.get_row_index("c-ended") == 1


async def test_transcript_filters_and_search(app_home):
    app = make_app(app_home, focus="a-ended", live=False, show_clock=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        log = app.query_one("#transcript-log", Log)
        assert any("★" in line for line in log.lines) and any("▶ [bash]" in line for line in log.lines)
        await pilot.press("t")  # text only
        assert log.lines and all("»" in line for line in log.lines)
        await pilot.press("t")  # tool calls and results
        assert any("▶ [bash]" in line for line in log.lines)
        assert not any("»" in line or "★" in line for line in log.lines)
        await pilot.press("t")  # errors: the failed score
        assert any("_orig_mod" in line for line in log.lines) and not any("▶" in line for line in log.lines)
        await pilot.press("t")  # back to everything
        await pilot.press("slash")
        await pilot.press(*"epoch 2", "enter")
        await pilot.pause()
        assert [line for line in log.lines] and all("epoch 2" in line for line in log.lines)
        assert "“epoch 2”" in str(app.query_one("#transcript-title").render())
        await pilot.press("slash", "escape")
        assert any("▶ [bash]" in line for line in log.lines)


async def test_scrolling_up_stops_following_and_f_resumes(app_home):
    app = make_app(app_home, focus="a-ended", live=False, show_clock=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        log = app.query_one("#transcript-log", Log)
        log.focus()
        await pilot.press("up")
        assert log.auto_scroll is False
        assert "scrolled back" in str(app.query_one("#transcript-title").render())
        await pilot.press("f")
        assert log.auto_scroll is True


async def test_live_events_raise_notifications(app_home):
    from runner.wire.events import CheckpointScored, ControlEvent, Warning_

    app = make_app(app_home, focus="b-paused", live=False, show_clock=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        add_events(app_home, "b-paused", [  # ingested elsewhere: the panes read them from the store
            Warning_(session_id="b-paused", seq=100, ts=1.0, code="network_blocked", message="connect to pypi.org:443"),
            CheckpointScored(session_id="b-paused", seq=101, ts=2.0, name="run_2-1", value=0.71, metric="val_acc",
                             split="val", budget_elapsed_s=65.0),
            # issue 50: a refused pause was a transcript line only, never a notification
            ControlEvent(session_id="b-paused", seq=102, ts=3.0, action="resume", request_id="r1", accepted=False,
                         detail="the session is scoring its last checkpoints")])
        app.refresh_sessions()  # its once-a-second look (no wake: its own ingest read nothing)
        app.flush()
        await pilot.pause()
        messages = [n.message for n in app._notifications]
        assert any("blocked network attempt: connect to pypi.org:443" in m for m in messages)
        # the score says its role, split and measure (docs/numbers.md): it was "scored 0.7100 val_acc"
        assert any("new best live val accuracy 0.7100 · run_2-1 at 01:05" in m for m in messages), messages
        refused = [n for n in app._notifications if "refused" in n.message]
        assert [(n.message, n.severity) for n in refused] == [
            ("b-paused: resume refused: the session is scoring its last checkpoints", "warning")]
        log = app.query_one("#transcript-log", Log)
        assert any("network_blocked" in line for line in log.lines)
        app.refresh_sessions()
        assert sum("run_2-1 at" in n.message for n in app._notifications) == 1  # each event once


async def test_the_monitor_shows_stalled_from_the_runners_warning_and_its_end(app_home):
    """One meaning of "stalled" (runner.wire.defaults.STALL_S): the monitor shows the runner's stall
    warning and its clearing, as notifications and in the transcript pane, and guesses none itself."""
    from runner.wire.defaults import STALL_CLEARED, STALL_WARNING
    from runner.wire.events import Warning_

    app = make_app(app_home, focus="b-paused", live=False, show_clock=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        for seq, code, message in [(300, STALL_WARNING, "no model response for 5 min while the agent runs no tool"),
                                   (301, STALL_CLEARED, "the model answered again after 6 min")]:
            add_events(app_home, "b-paused", [Warning_(session_id="b-paused", seq=seq, ts=float(seq), code=code,
                                                       message=message)])
            app.refresh_sessions()
            app.flush()
            await pilot.pause()
        messages = [n.message for n in app._notifications]
        assert "b-paused stalled: no model response for 5 min while the agent runs no tool" in messages
        assert "b-paused: the model answered again after 6 min" in messages
        log = app.query_one("#transcript-log", Log)
        assert any("the model answered again after 6 min" in line for line in log.lines)


async def test_every_monitor_notifies_the_end_of_a_session_another_one_ingested(app_home):
    """Issue 29: alerts came from this process's own ingest, so of two monitors on one home only
    the one that read the line said that a session ended."""
    from runner.wire.events import SessionEnded

    app = make_app(app_home, focus="b-paused", live=False, show_clock=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        before = {n.message for n in app._notifications}
        add_events(app_home, "b-paused", [SessionEnded(session_id="b-paused", seq=200, ts=3.0, reason="aborted",
                                                       detail="aborted by the operator", active_s=10.0, wall_s=12.0,
                                                       paused_s=0.0)])
        app.refresh_sessions()
        await pilot.pause()
        new = [n.message for n in app._notifications if n.message not in before]
        assert any(m.startswith("b-paused: aborted") for m in new), new
        assert app.feed.rows["b-paused"]["state"] == "ended"


async def test_focus_goes_to_the_session_asked_for_even_when_it_appears_late(app_home, tmp_path):
    """`onegc demo` opens the monitor before its session is ingested: the older session must not keep the selection."""
    from runner.launch.spawn import create_session
    from runner.wire.jsonl import EventWriter
    from runner.wire.session_config import SessionConfig

    app = make_app(app_home, focus="z-late", show_clock=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.5)
        create_session(SessionConfig(session_id="z-late", task="t0", agent="scripted", budget_s=60), app_home)
        w = EventWriter(app_home / "runs" / "z-late" / "events.jsonl", "z-late")
        w.emit("session_started", task="t0_demo", agent="scripted", budget_s=60, grace_s=30, contract={})
        w.close()
        for _ in range(100):
            await pilot.pause(0.1)
            if app.dashboard.selected == "z-late":
                break
        assert app.dashboard.selected == "z-late"


async def test_the_widgets_built_at_start_are_kept_out_of_full_collections(app_home):
    """A full GC pass over the start-up objects froze the screen for 70-100 ms every few seconds;
    Python's own full passes are off while the monitor runs (onegc_tui/app/gcpace.py), and back after."""
    import gc

    from onegc_tui.app.gcpace import NEVER

    gc.unfreeze()
    before = gc.get_threshold()
    app = make_app(app_home, live=False, show_clock=False)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            table = app.query_one("#sessions", DataTable)
            await pilot.pause()
            assert table.row_count and gc.get_freeze_count() > 0
            assert not any(o is table for g in range(3) for o in gc.get_objects(generation=g))
            assert gc.get_threshold()[2] == NEVER
            await pilot.press("down")
            assert app._gc.last_input > app._gc.last_full  # a key press holds the next full pass back
        assert gc.get_threshold() == before and gc.get_freeze_count() == 0
    finally:
        gc.unfreeze()  # the test process's objects go back to the collector
        gc.set_threshold(*before)


async def test_the_table_follows_rows_changed_by_another_process(app_home):
    """Only rows written since the last look are read; a runner found dead shows as failed, with an alert."""
    from onegc_tui.store import Store

    app = make_app(app_home, focus="b-paused", live=False, show_clock=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = app.query_one("#sessions", DataTable)
        assert str(table.get_cell("b-paused", "state")) == "PAUSED"
        other = Store.open(app_home)  # the ingester's connection, as in another thread or process
        assert [r["session_id"] for r in other.sessions_since(app.feed.rev)] == []
        other.mark_failed("b-paused", "runner gone (pid 4242 not alive)")
        assert [r["session_id"] for r in other.sessions_since(app.feed.rev)] == ["b-paused"]
        other.close()
        app.tick()
        await pilot.pause()
        assert str(table.get_cell("b-paused", "state")) == "FAILED"
        assert str(table.get_cell("a-ended", "state")) == "ended"
        assert any("b-paused FAILED" in n.message for n in app._notifications)
        assert app.feed.rows["b-paused"]["state"] == "failed" and len(app.feed.rows) == 4


async def test_rows_read_out_of_order_do_not_move_the_selection_off_the_cursor(app_home):
    """Rows arrive in write order and are then sorted: a highlight posted before the sort is stale."""
    from onegc_tui.store import Store

    store = Store.open(app_home)
    with store.conn:  # b-paused was written last: it comes last from the store, first in the table
        store.conn.execute("UPDATE sessions SET warnings = warnings WHERE session_id = 'b-paused'")
    assert [r["session_id"] for r in store.sessions_since(0)][-1] == "b-paused"
    store.close()
    app = make_app(app_home, live=False, show_clock=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = app.query_one("#sessions", DataTable)
        assert app.dashboard.selected == "b-paused" == app.dashboard.table.order[table.cursor_row]
        await pilot.press("down")
        await pilot.pause()
        assert app.dashboard.selected == "a-ended" == app.dashboard.table.order[table.cursor_row]


async def test_an_empty_home_says_how_to_start_a_session(tmp_path):
    home = tmp_path / "empty-home"
    app = make_app(home, live=False, show_clock=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        summary = str(app.query_one("#summary").render())
        assert f"No sessions under {home / 'runs'} yet" in summary and "onegc demo" in summary


async def test_the_history_prefetched_at_start_survives_the_first_read_of_the_sessions(app_home):
    """The matrix is computed from the start, on a thread, so that the first ``h`` is instant (over
    100 000 sessions it takes ~1.5 s); the first read of the sessions table must not drop it as if
    every session had just appeared (it did: the first h over 100 000 sessions waited 2.4 s)."""
    import time

    from onegc_tui.app.screens.history import ALL

    app = make_app(app_home, live=False, show_clock=False)
    async with app.run_test(size=SIZE) as pilot:
        deadline = time.monotonic() + 30
        while not app.history.ready(ALL, None) and time.monotonic() < deadline:
            await pilot.pause(0.1)
        assert app.history.ready(ALL, None), "the prefetched history was dropped"
        app.tick()
        assert app.history.ready(ALL, None)
        from runner.wire.events import SessionEnded

        add_events(app_home, "b-paused", [SessionEnded(session_id="b-paused", seq=300, ts=3.0, reason="aborted",
                                                       active_s=10.0, wall_s=12.0, paused_s=0.0)])
        app.refresh_sessions()
        assert not app.history.ready(ALL, None)  # a session ended since: computed again when asked
