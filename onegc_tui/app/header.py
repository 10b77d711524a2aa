"""The header of every monitor screen: Textual's, with a clock the app redraws in its own
once-a-second frame. ``HeaderClock`` keeps a 1 Hz timer of its own, and on an idle monitor each
extra frame a second is a visible share of the CPU (../shared/PERFORMANCE.md: CPU follows frames)."""

from __future__ import annotations

from datetime import datetime

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Header
from textual.widgets._header import HeaderClock, HeaderClockSpace, HeaderIcon, HeaderTitle


class BeatClock(HeaderClockSpace):
    """The time, redrawn by :meth:`MonitorApp.tick` (no timer of its own)."""

    DEFAULT_CSS = HeaderClock.DEFAULT_CSS.replace("HeaderClock", "BeatClock")

    def render(self) -> Text:
        return Text(datetime.now().strftime("%X"))


class LineTitle(HeaderTitle):
    """The title, one line whatever it says: a new one (the selected session's id, on every key
    that moves the selection) repaints the header, without laying out the whole screen again."""

    def update(self, content="", *, layout: bool = True) -> None:
        super().update(content, layout=False)


class MonitorHeader(Header):
    def compose(self) -> ComposeResult:
        yield HeaderIcon().data_bind(Header.icon)
        yield LineTitle()
        yield BeatClock() if self._show_clock else HeaderClockSpace()
