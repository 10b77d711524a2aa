"""The history screen at 80×24 shows the paper's rows (issue 29: it showed the matrix's header and
no row, the cell statistics below took the rows); a taller terminal keeps the statistics box."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable

from onegc_tui.app import make_app
from onegc_tui.app.screens.history_layout import BOTTOM_MIN, BOTTOM_ROWS, bottom_rows
from tests.homes import build_home, settled


@pytest.fixture
def app_home(tmp_path):
    return build_home(tmp_path / "home", full=True)


def test_the_bottom_box_gets_what_the_matrix_leaves():
    assert bottom_rows(44, 10, 7) == BOTTOM_ROWS
    assert bottom_rows(30, 10, 7) == 11
    assert bottom_rows(24, 14, 7) == 0  # under BOTTOM_MIN: hidden, the matrix keeps every row
    assert bottom_rows(24, 8, 7) == BOTTOM_MIN + 1


@pytest.mark.parametrize(("size", "box"), [((80, 24), False), ((160, 44), True)])
async def test_history_shows_every_paper_row(app_home, size, box):
    app = make_app(app_home, live=False, show_clock=False)
    async with app.run_test(size=size) as pilot:
        await settled(pilot)
        await pilot.press("h")
        await app.workers.wait_for_complete()
        for _ in range(3):
            await pilot.pause()
        table = app.screen.query_one("#matrix", DataTable)
        paper = [k for k in table.rows if str(k.value).startswith("paper")]
        assert len(paper) == 7
        assert table.size.height >= table.row_count + 1, (table.size, table.row_count)  # header and every row
        lines = [table.render_line(y).text for y in range(table.size.height)]
        assert sum("paper" in line for line in lines) == 7, lines
        bottom = app.screen.query_one("#hist-bottom")
        assert bottom.display is box
