"""A screen is laid out once for its first frame, and again only for a new size (SteadyScreen)."""

from __future__ import annotations

import pytest
from textual._compositor import Compositor
from textual.app import App, ComposeResult
from textual.events import Resize
from textual.geometry import Size
from textual.screen import Screen
from textual.widgets import Static

from onegc_tui.app.layout import SteadyScreen


class Probe(App):
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]

    def __init__(self, screen_class: type[Screen]):
        super().__init__()
        self.screen_class = screen_class

    def get_default_screen(self) -> Screen:
        return self.screen_class(id="_default")

    def compose(self) -> ComposeResult:
        yield Static("the dashboard")


class Pushed(SteadyScreen):
    def compose(self) -> ComposeResult:
        yield Static("the history")


class PlainPushed(Screen):
    def compose(self) -> ComposeResult:
        yield Static("the history")


async def layouts(monkeypatch, steady: bool) -> dict[str, int]:
    reflows: list[object] = []
    real = Compositor.reflow
    monkeypatch.setattr(Compositor, "reflow", lambda self, parent, size: reflows.append(parent) or real(self, parent, size))
    app = Probe(SteadyScreen if steady else Screen)
    out = {}
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.screen.has_class("-narrow") and not app.screen.has_class("-wide")
        out["start"] = len(reflows)
        app.screen.post_message(Resize(Size(80, 24), Size(80, 24)))  # the terminal's report, the same size
        await pilot.pause()
        out["same size"] = len(reflows) - out["start"]
        await pilot.resize_terminal(120, 30)
        await pilot.pause()
        assert app.screen.has_class("-wide") and not app.screen.has_class("-narrow")
        out["new size"] = len(reflows) - out["start"] - out["same size"]
        before = len(reflows)
        await app.push_screen(Pushed() if steady else PlainPushed())
        await pilot.pause()
        assert app.screen.has_class("-wide")  # its size classes, in its first frame
        out["pushed"] = sum(1 for parent in reflows[before:] if parent is app.screen)
    return out


@pytest.mark.asyncio
async def test_a_steady_screen_lays_out_once_where_textuals_own_screen_lays_out_twice(monkeypatch):
    """A same-size Resize (the terminal's report, behind the first frame) is no layout, and a
    pushed screen's own first Resize is none either; a new size is one, with its size classes."""
    steady = await layouts(monkeypatch, steady=True)
    plain = await layouts(monkeypatch, steady=False)
    assert steady["same size"] == 0 < plain["same size"], (steady, plain)
    assert steady["pushed"] == plain["pushed"] - 1, (steady, plain)
    assert steady["new size"] >= 1
