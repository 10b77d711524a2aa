"""The history matrix never cuts a figure into another (issue 50): at 80 columns Agg read
``+0.2`` for ``+0.293`` and the ``†`` of a partial Agg was gone; the sideways scroll clipped task
columns at both edges (``.6813``). Narrower than the matrix, the screen shows whole task
columns beside ``‹``/``›`` marks that bring the next in."""

from __future__ import annotations

import re

import pytest
from textual.widgets import DataTable

from onegc_tui.app import make_app
from onegc_tui.app.screens.history_layout import task_window
from tests.homes import build_numbers_home, settled

FIGURE = re.compile(r"[+-]?\d*\.\d+†?")


@pytest.fixture(scope="module")
def numbers_home(tmp_path_factory):
    return build_numbers_home(tmp_path_factory.mktemp("hist") / "home")


def test_the_window_holds_whole_columns_and_is_as_full_as_it_can_be():
    widths = [6] * 7  # seven task columns of "0.6813"
    assert task_window(widths, 0, 200) == (0, 7)  # room for all: no marks
    first, last = task_window(widths, 0, 40)
    assert (first, last) == (0, 4) and 4 * 8 + 3 <= 40  # four columns and the "›" mark
    assert task_window(widths, 6, 40) == (3, 7)  # at the end: filled back, "‹" only
    assert task_window(widths, 2, 40) == (2, 6)  # in the middle: both marks


async def open_history(app, pilot):
    await settled(pilot)
    await pilot.press("h")
    await app.workers.wait_for_complete()
    for _ in range(3):
        await pilot.pause()
    return app.screen.query_one("#matrix", DataTable)


def visible_lines(table: DataTable) -> list[str]:
    return [table.render_line(y).text for y in range(table.size.height)]


@pytest.mark.parametrize("width", [80, 100, 120, 200])
async def test_every_figure_in_sight_is_whole(numbers_home, width):
    app = make_app(numbers_home, live=False, show_clock=False)
    async with app.run_test(size=(width, 30)) as pilot:
        table = await open_history(app, pilot)
        used = sum(c.get_render_width(table) for c in table.ordered_columns)
        assert used <= table.size.width, (used, table.size.width)  # no column runs off the edge
        lines = visible_lines(table)
        ours = next(line for line in lines if line.lstrip().startswith("ours"))
        assert "+0.006†" in ours, ours  # the partial Agg whole, with its mark
        assert "0.3818" in ours  # the cursor's cell (T6, our result) is in the window
        labels = sum(c.get_render_width(table) for c in table.ordered_columns[:2])  # study, agent ("Sonnet 4.6")
        for line in lines[1:]:
            for figure in FIGURE.findall(line[labels:]):  # every figure shown is whole: 4 decimals, an Agg's 3
                assert re.fullmatch(r"\d\.\d{4}|[+-]\d\.\d{3}†?", figure), (figure, line)


async def test_the_arrows_bring_the_next_task_in(numbers_home):
    app = make_app(numbers_home, live=False, show_clock=False)
    async with app.run_test(size=(80, 30)) as pilot:
        table = await open_history(app, pilot)
        keys = lambda: [str(c.key.value) for c in table.ordered_columns]  # noqa: E731
        assert app.screen.focused is table  # the arrows work at once
        assert "t6" in keys() and "more_left" in keys()
        for _ in range(5):  # t6 → t5 → t4 → ‹ (t3 comes in) → ‹ (t2) → ‹ (t1)
            await pilot.press("left")
            await pilot.pause()
        assert keys()[2] == "t1" and "more_left" not in keys() and "more_right" in keys()
        assert str(table.coordinate_to_cell_key(table.cursor_coordinate).column_key.value) == "t1"
        for _ in range(12):
            await pilot.press("right")
            await pilot.pause()
        assert "t7" in keys() and "more_right" not in keys()
