"""A partial frame renders only the rows it shows (onegc_tui/app/compositor.py), and shows what
Textual's own compositor would: the same strips on every row the update shows."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.widgets import Static

from onegc_tui.app.compositor import RowsCompositor, row_runs
from onegc_tui.app.scrolling import SteadyScreen


def test_row_runs_are_the_adjacent_rows_within_the_range():
    rows = [0, 1, 2, 5, 7, 8, 20]
    assert list(row_runs(rows, 0, 30)) == [(0, 3), (5, 6), (7, 9), (20, 21)]
    assert list(row_runs(rows, 1, 8)) == [(1, 3), (5, 6), (7, 8)]
    assert list(row_runs(rows, 9, 20)) == []
    assert list(row_runs([], 0, 10)) == []


class Tall(Static):
    """A pane that records the rows it is asked to render."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.asked: list[tuple[int, int]] = []

    def render_lines(self, crop: Region):
        self.asked.append((crop.y, crop.bottom))
        return super().render_lines(crop)


class Frames(App):
    CSS = "#clock, #countdown { height: 1; } #pane { height: 20; }"

    def get_default_screen(self) -> SteadyScreen:
        return SteadyScreen(id="_default")

    def compose(self) -> ComposeResult:
        yield Static("clock 00:00:00", id="clock")
        yield Tall("\n".join(f"pane line {i}" for i in range(20)), id="pane")
        yield Static("countdown 59:59", id="countdown")


def chops_text(chops, rows) -> dict[int, list]:
    return {y: [(x, [(s.text, str(s.style)) for s in strip]) for x, strip in chops[y].items() if strip is not None]
            for y in rows}


async def test_a_partial_frame_renders_the_shown_rows_only_and_shows_what_textual_would():
    app = Frames()
    async with app.run_test(size=(60, 24)) as pilot:
        screen = app.screen
        comp = screen._compositor
        assert isinstance(comp, RowsCompositor)
        pane = app.query_one("#pane", Tall)
        await pilot.pause()
        pane.asked = []
        app.query_one("#clock", Static).update("clock 00:00:01")
        app.query_one("#countdown", Static).update("countdown 59:58")
        await pilot.pause()
        assert pane.asked == [], "the pane between the two changes was rendered"
        assert "clock 00:00:01" in "".join(s.text for s in comp.render_strips()[0])

        # the same dirty rows, rendered by this compositor and by Textual's (its _get_renders)
        app.query_one("#clock", Static).update("clock 00:00:02")
        pane.update("\n".join(f"pane line {i} again" for i in range(20)))
        pane.asked = []
        rows = [0, 5, 6, 7, 21]
        crop = Region(0, 0, 60, 22)
        comp._rows = rows
        try:
            ours = comp._render_chops(crop, set(rows).__contains__)
        finally:
            comp._rows = None
        assert pane.asked == [(4, 7)]  # the pane's rows 4-6 (it starts at screen row 1), not its 20
        theirs = comp._render_chops(crop, set(rows).__contains__)
        assert chops_text(ours, rows) == chops_text(theirs, rows)
        assert "pane line 4 again" in "".join(s.text for s in ours[5].values() if s is not None)
