"""The header of every monitor screen: Textual's, with a clock the app redraws in its own
once-a-second frame when the minute turns. ``HeaderClock`` keeps a 1 Hz timer of its own, and on an idle monitor each
extra frame a second is a visible share of the CPU (../shared/PERFORMANCE.md: CPU follows frames)."""

from __future__ import annotations

from datetime import datetime

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Header
from textual.widgets._header import HeaderClock, HeaderClockSpace, HeaderIcon, HeaderTitle

CLOCK_FORMAT = "%H:%M"  # as tmux's status line: the countdowns show the seconds that matter


class BeatClock(HeaderClockSpace):
    """The time of day to the minute, redrawn by :meth:`MonitorApp.tick` (no timer of its own)
    when the minute turns: seconds here were one more widget drawn every second on an idle
    monitor, beside the countdown that shows the seconds left."""

    DEFAULT_CSS = HeaderClock.DEFAULT_CSS.replace("HeaderClock", "BeatClock")

    def render(self) -> Text:
        return Text(datetime.now().strftime(CLOCK_FORMAT))


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
