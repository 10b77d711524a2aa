"""The budget pane says its session's state: a running session is counting down, never
"QUEUED". Seen on `onegc monitor --web --session ID` over a session the store had not ingested
yet: the pane loaded the row while it was still queued, its session_started had been ingested
before the pane followed the session, and only heartbeats came after (they carry no state)."""

from __future__ import annotations

from tests.homes import CROWD_NOW, CROWD_RUNNING, build_crowd


async def test_a_row_loaded_while_queued_takes_the_stores_start(tmp_path):
    from textual.widgets import Static

    from onegc_tui.app import make_app
    from onegc_tui.app.widgets.panes import BudgetPane

    home = build_crowd(tmp_path / "home", n_ended=3)
    app = make_app(home, focus=CROWD_RUNNING, live=False, show_clock=False, now=lambda: CROWD_NOW)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        pane = app.query_one(BudgetPane)
        running = dict(pane.row)
        assert running["state"] == "running"
        pane.show({**running, "state": "queued", "remaining_s": running["budget_s"]})  # the row as first ingested
        assert "QUEUED" in str(pane.query_one("#countdown", Static).render())
        pane.extend(running)  # the store's next row: started
        text = str(pane.query_one("#countdown", Static).render())
        assert pane.view.state == "running" and text.endswith(" left") and "QUEUED" not in text, text
        pane.extend({**running, "state": "queued"})  # an older row never takes a state back
        assert pane.view.state == "running"
