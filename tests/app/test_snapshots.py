"""SVG snapshots (pytest-textual-snapshot) of the dashboard, history matrix, replay and detail,
on the fixed fake sessions of ``fixtures.py``: header clock off, timestamps fixed."""

from __future__ import annotations

import pytest

from onegc_tui.app import make_app
from tests.app.fixtures import T0, build_home

SIZE = (160, 44)
NOW = lambda: T0 + 100.0  # noqa: E731  frozen "now" for countdowns


@pytest.fixture
def app_home(tmp_path):
    return build_home(tmp_path / "home", full=True)


def test_snapshot_of_the_live_screen(app_home, snap_compare):
    app = make_app(app_home, focus="b-paused", live=False, show_clock=False, now=NOW)
    assert snap_compare(app, terminal_size=SIZE)



def test_snapshot_of_the_history_matrix(app_home, snap_compare):
    async def open_history(pilot):
        await pilot.press("h")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()

    app = make_app(app_home, live=False, show_clock=False, now=NOW)
    assert snap_compare(app, terminal_size=SIZE, run_before=open_history)


def test_snapshot_of_the_replay(app_home, snap_compare):
    async def replay(pilot):
        await pilot.press("space", "down", "space", "r")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press(*["left"] * 10)

    app = make_app(app_home, focus="a-ended", live=False, show_clock=False, now=NOW)
    assert snap_compare(app, terminal_size=SIZE, run_before=replay)


def test_snapshot_of_the_session_detail(app_home, snap_compare):
    async def detail(pilot):
        await pilot.press("d")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press(*["left"] * 20)

    app = make_app(app_home, focus="a-ended", live=False, show_clock=False, now=NOW)
    assert snap_compare(app, terminal_size=SIZE, run_before=detail)
