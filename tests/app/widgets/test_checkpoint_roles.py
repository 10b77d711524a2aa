"""Every checkpoint score says its split and role at every width (issue 50, docs/numbers.md): on
T6 at 100x30 the live val rows and the re-evaluated test rows shared one Score column, and
``run_1_epoch1-1`` was listed twice with nothing to tell the rows apart; at 160 columns the
re-evaluations that were not chosen read ``(official)``; at 80x24 the pane showed 1-2 rows."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable

from onegc_tui.app import make_app
from onegc_tui.app.widgets.panes import CheckpointsPane
from runner.wire.score_terms import ROLE_WIDTHS, role_mark
from tests.homes import T0, T0_SESSION, T6_SESSION, build_numbers_home, settled

SIZES = pytest.mark.parametrize("size", [(80, 24), (100, 30), (120, 40), (160, 44), (200, 50)])


@pytest.fixture(scope="module")
def numbers_home(tmp_path_factory):
    return build_numbers_home(tmp_path_factory.mktemp("numbers") / "home")


def rows(app) -> list[tuple[str, str, str]]:
    """(name, score, role) of each row of the checkpoints pane."""
    table = app.query_one("#ckpt-table", DataTable)
    return [tuple(str(c) for c in table.get_row_at(i)[:3]) for i in range(table.row_count)]


def test_the_marks_keep_split_and_role_at_every_width():
    for width in ROLE_WIDTHS:
        marks = {role_mark(split, role, width) for split, role in
                 (("val", "live"), ("test", "official"), ("test", "unofficial"), ("val", "official"), ("val", "unofficial"))}
        assert len(marks) == 5 and all(len(m) <= width for m in marks), (width, marks)
    assert role_mark("test", "unofficial", 15) == "unofficial test" and role_mark("test", "official", 3) == "t★"


@SIZES
async def test_every_t6_row_names_its_split_and_role(numbers_home, size):
    app = make_app(numbers_home, focus=T6_SESSION, live=False, show_clock=False, now=lambda: T0 + 10_000)
    async with app.run_test(size=size) as pilot:
        await settled(pilot)
        pane = app.query_one(CheckpointsPane)
        width = pane.widths["role"]
        got = rows(app)
        assert got[0] == ("run_2_epoch2-1", "0.3818", role_mark("test", "official", width))  # the result, first
        by_role = {}
        for _name, score, role in got:
            by_role.setdefault(role, []).append(score)
        assert by_role == {role_mark("test", "official", width): ["0.3818"],
                           role_mark("val", "live", width): ["0.7071", "0.6782", "0.6738", "0.6669", "0.6533"],
                           role_mark("test", "unofficial", width): ["0.4019", "0.3867"]}, got
        assert len(set(got)) == len(got)  # run_1_epoch1-1's live val row and its test row: told apart
        assert not any("(official)" in name for name, _, _ in got)  # the role column says it, never the name
        title = str(app.query_one("#ckpt-title").render())
        assert "unofficial" in title and "official" in title
        if size == (80, 24):  # at least five rows in sight (it showed 1-2)
            table = app.query_one("#ckpt-table", DataTable)
            assert table.scrollable_content_region.height >= 5, table.scrollable_content_region


async def test_a_t0_session_is_official_on_val(numbers_home):
    app = make_app(numbers_home, focus=T0_SESSION, live=False, show_clock=False, now=lambda: T0 + 10_000)
    async with app.run_test(size=(200, 50)) as pilot:
        await settled(pilot)
        width = app.query_one(CheckpointsPane).widths["role"]
        assert rows(app)[0] == ("run_2_epoch1-1", "0.9320", role_mark("val", "official", width))
        assert ("run_1_epoch2-1", "0.8870", role_mark("val", "unofficial", width)) in rows(app)
        assert ("run_1_epoch2-1", "0.8870", role_mark("val", "live", width)) in rows(app)


async def test_the_end_makes_the_chosen_re_evaluation_official_as_it_comes(tmp_path):
    """Live: re-evaluations are unofficial candidates until session_ended names the official one."""
    from runner.wire.events import CheckpointScored, SessionEnded
    from tests.homes import add_events, build_home

    home = build_home(tmp_path / "home")
    app = make_app(home, focus="b-paused", live=False, show_clock=False, now=lambda: T0 + 100)
    async with app.run_test(size=(200, 50)) as pilot:
        await settled(pilot)
        width = app.query_one(CheckpointsPane).widths["role"]
        common = {"session_id": "b-paused", "metric": "val_acc", "split": "val", "official": True}
        add_events(home, "b-paused", [
            CheckpointScored(**common, seq=200, ts=T0 + 90, name="run_1_epoch3-1", value=0.61, budget_elapsed_s=30.0),
            CheckpointScored(**common, seq=201, ts=T0 + 91, name="run_1_epoch2-1", value=0.50, budget_elapsed_s=20.0)])
        app.refresh_sessions()
        app.flush()
        await pilot.pause()
        assert ("run_1_epoch3-1", "0.6100", role_mark("val", "unofficial", width)) in rows(app)  # no official yet
        add_events(home, "b-paused", [SessionEnded(session_id="b-paused", seq=202, ts=T0 + 92, reason="completed",
                                                   active_s=60, wall_s=61, paused_s=0, score=0.61,
                                                   best_checkpoint="run_1_epoch3-1")])
        app.refresh_sessions()
        app.flush()
        await pilot.pause()
        got = rows(app)
        assert got[0] == ("run_1_epoch3-1", "0.6100", role_mark("val", "official", width)), got  # pinned first
        assert ("run_1_epoch2-1", "0.5000", role_mark("val", "unofficial", width)) in got
