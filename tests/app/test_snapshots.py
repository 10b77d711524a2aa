"""SVG snapshots (pytest-textual-snapshot) of the dashboard, history matrix, replay and detail,
on the fixed fake sessions of ``fixtures.py``: header clock off, timestamps fixed."""

from __future__ import annotations

import pytest

from onegc_tui.app import make_app
from tests.homes import CROWD_NOW, CROWD_RUNNING, T0, T6_SESSION, build_crowd, build_home, build_numbers_home, settled

SIZE = (160, 44)
NOW = lambda: T0 + 100.0  # noqa: E731  frozen "now" for countdowns


@pytest.fixture
def app_home(tmp_path):
    return build_home(tmp_path / "home", full=True)


@pytest.fixture(scope="module")
def crowd(tmp_path_factory):
    return build_crowd(tmp_path_factory.mktemp("crowd") / "home")


THREE_SIZES = pytest.mark.parametrize("size", [(80, 24), (100, 30), (200, 50)], ids=["80x24", "100x30", "200x50"])


@THREE_SIZES
def test_snapshot_of_the_dashboard_with_a_running_session_among_20_ended(crowd, size, snap_compare):
    """What a user attaches to: the running session on top and selected, the columns that matter
    first, panes and footer laid out for the terminal's size."""
    async def settle(pilot):
        await settled(pilot)
        assert pilot.app.dashboard.selected == CROWD_RUNNING

    app = make_app(crowd, live=False, show_clock=False, now=lambda: CROWD_NOW)
    assert snap_compare(app, terminal_size=size, run_before=settle)


def test_snapshot_of_the_help_screen(crowd, snap_compare):
    async def help_(pilot):
        await settled(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    app = make_app(crowd, live=False, show_clock=False, now=lambda: CROWD_NOW)
    assert snap_compare(app, terminal_size=(120, 40), run_before=help_)


def test_snapshot_of_the_live_screen(app_home, snap_compare):
    app = make_app(app_home, focus="b-paused", live=False, show_clock=False, now=NOW)
    assert snap_compare(app, terminal_size=SIZE, run_before=settled)



@THREE_SIZES
def test_snapshot_of_the_history_matrix(app_home, size, snap_compare):
    async def open_history(pilot):
        await pilot.press("h")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()

    app = make_app(app_home, live=False, show_clock=False, now=NOW)
    assert snap_compare(app, terminal_size=size, run_before=open_history)


@THREE_SIZES
def test_snapshot_of_the_new_session_form(app_home, size, snap_compare):
    """Every field and both buttons in sight, at each size (issue 37: Start was below the fold at 80x24)."""
    async def open_form(pilot):
        await settled(pilot)
        await pilot.press("n")
        await pilot.pause()

    app = make_app(app_home, live=False, show_clock=False, now=NOW)
    assert snap_compare(app, terminal_size=size, run_before=open_form)


@THREE_SIZES
def test_snapshot_of_a_session_with_checkpoints(app_home, size, snap_compare):
    """The live screen of a session with scored checkpoints: names keep their run and epoch, figures whole."""
    app = make_app(app_home, focus="a-ended", live=False, show_clock=False, now=NOW)
    assert snap_compare(app, terminal_size=size, run_before=settled)


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


@pytest.fixture(scope="module")
def numbers_home(tmp_path_factory):
    return build_numbers_home(tmp_path_factory.mktemp("numbers") / "home")


@THREE_SIZES
@pytest.mark.parametrize("screen", ["dashboard", "detail", "history"])
def test_snapshot_of_every_figure_with_its_split_and_role(numbers_home, size, screen, snap_compare):
    """Issue 50: a T6 session with live val rows and official and unofficial test rows (and a t0 one,
    scored on val), on each screen at each size: every figure says its split and role, none is cut
    into another (the checkpoints pane's role column, the detail's lines, the history's cell)."""
    async def open_screen(pilot):
        await settled(pilot)
        if screen != "dashboard":
            await pilot.press("d" if screen == "detail" else "h")
            await pilot.app.workers.wait_for_complete()
            await pilot.pause()
            await pilot.app.workers.wait_for_complete()
            await pilot.pause()

    app = make_app(numbers_home, focus=T6_SESSION, live=False, show_clock=False, now=lambda: T0 + 10_000)
    assert snap_compare(app, terminal_size=size, run_before=open_screen)
