"""The replay and detail views cut a line too long for its column with ``…`` (issue 29: the
replay cut transcript lines and its cursor line silently)."""

from __future__ import annotations

import pytest
from textual.widgets import Log

from onegc_tui.app import make_app
from tests.homes import build_home, settled


@pytest.fixture
def app_home(tmp_path):
    return build_home(tmp_path / "home", full=True)


def shown(widget) -> list[str]:
    """The widget's rows as drawn."""
    return [widget.render_line(y).text.rstrip() for y in range(widget.size.height)]


async def test_replay_columns_cut_with_an_ellipsis(app_home):
    from onegc_tui.app.screens.detail import ReplayScreen

    app = make_app(app_home, focus="a-ended", live=False, show_clock=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await settled(pilot)
        await pilot.press("space", "down", "space", "r")
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ReplayScreen)
        for log in screen.query(Log):
            rows = [r for r in shown(log) if r]
            long = [line for line in log.lines if len(line) > log.size.width - 1]
            assert long, "the fixture has lines wider than a column"
            assert any(r.endswith("…") for r in rows), rows  # a cut line says it was cut
            assert log.virtual_size.width <= log.size.width  # and nothing scrolls sideways
        for cursor in screen.query(".replay-cursor"):
            (row,) = shown(cursor)
            assert row.startswith("cursor ") and row.endswith("…"), row


async def test_the_detail_transcript_cuts_with_an_ellipsis(app_home):
    app = make_app(app_home, focus="a-ended", live=False, show_clock=False)
    async with app.run_test(size=(60, 30)) as pilot:
        await settled(pilot)
        await pilot.press("d")
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.pause()
        log = app.screen.query_one("#detail-log", Log)
        rows = [r for r in shown(log) if r]
        assert any(r.endswith("…") for r in rows), rows
