"""A partial frame renders only what it shows (onegc_tui/app/compositor.py), and shows what
Textual's own compositor would: the same strips on every row the update shows, and the same
bytes to the terminal."""

from __future__ import annotations

import re

from textual._compositor import Compositor
from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical
from textual.geometry import Region
from textual.widgets import Static

from onegc_tui.app.compositor import RowsCompositor, covered, row_runs
from onegc_tui.app.layout import SteadyScreen


def test_row_runs_are_the_adjacent_rows_within_the_range():
    rows = [0, 1, 2, 5, 7, 8, 20]
    assert list(row_runs(rows, 0, 30)) == [(0, 3), (5, 6), (7, 9), (20, 21)]
    assert list(row_runs(rows, 1, 8)) == [(1, 3), (5, 6), (7, 8)]
    assert list(row_runs(rows, 9, 20)) == []
    assert list(row_runs([], 0, 10)) == []


def test_covered_is_within_the_union_of_the_ranges():
    assert covered([(2, 5)], [(0, 3), (3, 6)])
    assert covered([(2, 5), (8, 9)], [(8, 10), (0, 6)])
    assert not covered([(2, 5)], [(0, 3), (4, 6)])
    assert not covered([(2, 5)], [])
    assert covered([], [])


class RecordsRows:
    """Mixed in before a widget: it records the rows it is asked to render."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.asked: list[tuple[int, int]] = []

    def render_lines(self, crop: Region):
        self.asked.append((crop.y, crop.bottom))
        return super().render_lines(crop)


class Tall(RecordsRows, Static):
    """A pane that records the rows it is asked to render."""


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
        comp._dirty = [Region(0, y, 60, 1) for y in rows]
        try:
            ours = comp._render_chops(crop, set(rows).__contains__)
        finally:
            comp._dirty = None
        assert pane.asked == [(4, 7)]  # the pane's rows 4-6 (it starts at screen row 1), not its 20
        theirs = comp._render_chops(crop, set(rows).__contains__)
        assert chops_text(ours, rows) == chops_text(theirs, rows)
        assert "pane line 4 again" in "".join(s.text for s in ours[5].values() if s is not None)


def shown(terminal: str) -> str:
    """An update's bytes less the cursor moves that write nothing (Textual moves to a piece on the
    edge of a change and writes none of it; this compositor leaves such a piece out)."""
    return re.sub(r"\x1b\[\d+;\d+H(?=\x1b\[\d+;\d+H|\n|$)", "", terminal)


class Box(RecordsRows, Vertical):
    """A container that records the rows it is asked to render."""


class SideBySide(App):
    """A log on the left beside a clock and a countdown on the right, in the same rows (the
    dashboard's transcript beside its budget and GPU panes), and a status line under both."""

    CSS = """
    #left { width: 30; height: 20; }
    #right { width: 1fr; height: 20; padding: 0 1; }
    #clock, #countdown { height: 2; border-left: solid red; padding: 0 1; }
    #filler { height: 1fr; }
    #status { height: 1; }
    """

    def get_default_screen(self) -> SteadyScreen:
        return SteadyScreen(id="_default")

    def compose(self) -> ComposeResult:
        with Horizontal(id="row"):
            yield Tall("\n".join(f"log line {i}" for i in range(20)), id="left")
            with Box(id="right"):
                yield Static("clock 00:00:00", id="clock")
                yield Static("", id="filler")
                yield Static("countdown 59:59", id="countdown")
        yield Static("status 0", id="status")


async def test_what_a_change_does_not_show_is_not_rendered_and_the_terminal_gets_the_same():
    app = SideBySide()
    async with app.run_test(size=(60, 24)) as pilot:
        comp = app.screen._compositor
        left, right = app.query_one("#left", Tall), app.query_one("#right", Box)
        await pilot.pause()
        left.asked, right.asked = [], []
        app.query_one("#clock", Static).update("clock 00:00:01")
        app.query_one("#countdown", Static).update("countdown 59:58")
        app.query_one("#status", Static).update("status 1")  # the update's box: the whole width
        await pilot.pause()
        assert left.asked == [], "the log beside the clock and the countdown was rendered"
        assert right.asked == [], "the container whose children cover the changes was rendered"

        # one dirty set, drawn by this compositor and by Textual's: the same on the terminal
        app.query_one("#clock", Static).update("clock 00:00:02")
        app.query_one("#countdown", Static).update("countdown 59:57")
        app.query_one("#status", Static).update("status 2")
        comp.update_widgets({app.query_one("#clock"), app.query_one("#countdown"), app.query_one("#status")})
        # and a region that only the container shows (its padding), which it must draw
        comp._dirty_regions.add(Region(right.region.x, right.region.y + 5, 1, 2))
        dirty = set(comp._dirty_regions)
        ours = comp.render_partial_update()
        assert right.asked == [(5, 7)]
        comp._dirty_regions.update(dirty)
        theirs = Compositor.render_partial_update(comp)  # with no _dirty set: Textual's _get_renders
        assert ours is not None and theirs is not None
        out = shown(ours.render_segments(app.console))
        assert out == shown(theirs.render_segments(app.console))
        assert "clock 00:00:02" in out and "countdown 59:57" in out and "status 2" in out
