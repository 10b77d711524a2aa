"""A new pane is one file and one line in the dashboard's list (issue 49): ``tests/app/warnings_pane.py``
added to ``PANES`` is composed in its slot and driven like every pane (what it read of the selected
session, what came after, the clock), the others unchanged."""

from __future__ import annotations

from onegc_tui.app import make_app
from onegc_tui.app.screens import dashboard
from onegc_tui.app.widgets.pane import Pane
from runner.wire.events import Warning_
from tests.app.warnings_pane import WarningsPane
from tests.homes import add_events, build_home


def test_every_pane_of_the_list_is_a_pane():
    members = [name for name in vars(Pane) if not name.startswith("_")] + ["slot"]
    assert set(members) == {"slot", "reader", "show", "extend", "tick"}
    for cls in [*dashboard.PANES, WarningsPane]:
        assert all(callable(getattr(cls, name)) for name in members if name != "slot"), cls
    assert {cls.slot for cls in dashboard.PANES} == {"main", "side", "right"}


async def test_a_pane_added_by_one_line_reads_and_draws_the_selected_session(tmp_path, monkeypatch):
    home = build_home(tmp_path / "home")
    monkeypatch.setattr(dashboard, "PANES", [*dashboard.PANES, WarningsPane])  # the one line
    app = make_app(home, focus="b-paused", live=False, show_clock=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        pane = app.query_one(WarningsPane)
        assert pane.parent is app.query_one("#side") and len(app.dashboard.panes) == len(dashboard.PANES)
        assert str(pane.render()) == "b-paused: 1 warnings · no_gpu: no GPU visible: NVML unavailable"
        add_events(home, "b-paused", [Warning_(session_id="b-paused", seq=500, ts=1.0, code="oom",
                                               message="the agent's tree hit its memory cap")])
        app.flush()  # the beat: each pane reads what came after what it has read
        await pilot.pause()
        assert str(pane.render()) == "b-paused: 2 warnings · oom: the agent's tree hit its memory cap"
        app.tick()
        await pilot.pause()
        assert pane.ticks >= 1
        await pilot.press("down")  # another session: read whole again
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.dashboard.selected == "a-ended"
        assert str(pane.render()).startswith("a-ended: ")
        assert "a-ended: I'll start" in "\n".join(app.query_one("#transcript-log").lines)  # the others as ever
