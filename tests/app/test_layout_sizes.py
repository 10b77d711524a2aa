"""At 80x24, 100x30 and 200x50 nothing a person needs is cut (issue 37 item 5): a notification
never covers a pane's data, the new-session form's buttons are on screen, checkpoint names keep
their run and epoch. SVG snapshots of the same sizes are in test_snapshots.py."""

from __future__ import annotations

import pytest
from textual.widgets import Button
from textual.widgets._toast import Toast

from onegc_tui.app import make_app
from onegc_tui.app.widgets.panes import CheckpointsPane
from onegc_tui.app.widgets.transcript import TranscriptPane
from tests.homes import T0, build_home, settled

SIZES = [(80, 24), (100, 30), (200, 50)]
IDS = ["80x24", "100x30", "200x50"]


@pytest.mark.parametrize("size", SIZES, ids=IDS)
async def test_a_notification_covers_no_pane(tmp_path, size):
    home = build_home(tmp_path / "home", full=True)
    app = make_app(home, focus="a-ended", live=False, show_clock=False, now=lambda: T0 + 100)
    async with app.run_test(size=size, notifications=True) as pilot:
        await settled(pilot)
        app.notify("new best live val 0.9300 · run_1_epoch3-1 of a-ended, a long message to make it wrap twice")
        await pilot.pause()
        await pilot.pause()
        (toast,) = app.screen.query(Toast)
        for pane in (app.screen.query_one(CheckpointsPane), app.screen.query_one(TranscriptPane)):
            assert not toast.region.overlaps(pane.region), (toast.region, pane.region)
        assert toast.region.height == 1 and toast.region.y == size[1] - 1  # over the footer's key list


@pytest.mark.parametrize("size", SIZES, ids=IDS)
async def test_the_new_session_forms_buttons_are_on_screen(tmp_path, size):
    home = build_home(tmp_path / "home")
    app = make_app(home, live=False, show_clock=False, now=lambda: T0 + 100)
    async with app.run_test(size=size) as pilot:
        await settled(pilot)
        await pilot.press("n")
        await pilot.pause()
        for button in app.screen.query(Button):
            region = button.region
            assert region.height >= 1 and region.bottom <= size[1] - 1, (button.id, region)  # above the footer


@pytest.mark.parametrize("size", SIZES, ids=IDS)
async def test_checkpoint_names_keep_their_run_and_epoch(tmp_path, size):
    home = build_home(tmp_path / "home", full=True)
    app = make_app(home, focus="a-ended", live=False, show_clock=False, now=lambda: T0 + 100)
    async with app.run_test(size=size) as pilot:
        await settled(pilot)
        pane = app.screen.query_one(CheckpointsPane)
        assert pane.widths["name"] >= CheckpointsPane.NAME_KEEP, pane.widths


@pytest.mark.parametrize("size", SIZES, ids=IDS)
async def test_history_keeps_its_labels_and_reaches_agg(tmp_path, size):
    from textual.widgets import DataTable

    home = build_home(tmp_path / "home", full=True)
    app = make_app(home, live=False, show_clock=False, now=lambda: T0 + 100)
    async with app.run_test(size=size) as pilot:
        await settled(pilot)
        await pilot.press("h")
        await app.workers.wait_for_complete()
        await pilot.pause()
        table = app.screen.query_one("#matrix", DataTable)
        assert table.fixed_columns == 2  # study and agent stay in sight when the task columns scroll
        widths = {key.value: col.get_render_width(table) for key, col in table.columns.items()}
        upto_agg = sum(w for key, w in widths.items() if key not in ("agg_max", "agg_ours"))
        if size[0] >= 100:
            assert upto_agg <= table.region.width, (upto_agg, table.region.width, widths)  # Agg in sight
