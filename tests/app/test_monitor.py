"""Pilot tests of the live screen, and an SVG snapshot."""

from __future__ import annotations

import json

import pytest
from textual.widgets import DataTable, Log

from onegc_tui.app import make_app
from onegc_tui.app.confirm import ConfirmScreen
from tests.app.fixtures import build_home

SIZE = (160, 44)


@pytest.fixture
def app_home(tmp_path):
    return build_home(tmp_path / "home")


def control_lines(home, sid) -> list[dict]:
    path = home / "runs" / sid / "control.jsonl"
    return [json.loads(l) for l in path.read_text().splitlines()] if path.exists() else []


async def test_selection_shows_the_session_in_the_panes(app_home):
    app = make_app(app_home, live=False, show_clock=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.selected == "a-ended"
        log = app.query_one("#transcript-log", Log)
        assert any("a-ended: I'll start" in line for line in log.lines)
        await pilot.press("down")
        await pilot.pause()
        assert app.selected == "b-paused"
        assert any("b-paused: I'll start" in line for line in log.lines)
        assert not any("a-ended" in line for line in log.lines)
        ckpts = app.query_one("#ckpt-table", DataTable)
        assert ckpts.get_cell("run_1_epoch3-1", "note") == "★ best"
        assert "_orig_mod." in ckpts.get_cell("bad-1", "note")
        assert "PAUSED" in str(app.query_one("#countdown").render())


async def test_pause_key_requests_resume_of_a_paused_session(app_home):
    app = make_app(app_home, focus="b-paused", live=False, show_clock=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.selected == "b-paused"
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


def test_snapshot_of_the_live_screen(app_home, snap_compare):
    app = make_app(app_home, focus="b-paused", live=False, show_clock=False)
    assert snap_compare(app, terminal_size=SIZE)
