"""The header of every monitor screen: Textual's, with a clock the app redraws in its own
once-a-second frame when the minute turns. ``HeaderClock`` keeps a 1 Hz timer of its own, and on an idle monitor each
extra frame a second is a visible share of the CPU (../shared/PERFORMANCE.md: CPU follows frames)."""

from __future__ import annotations

import time
import weakref
from datetime import datetime

from rich.text import Text
from textual.app import ComposeResult
from textual.screen import Screen
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


class MinuteTurn:
    """Redraws a screen's header clocks when the minute turns (asked once a second by the app)."""

    def __init__(self) -> None:
        # per screen: the minute shown, and its clocks (found once: a query walks the screen); a closed screen is let go
        self._shown: weakref.WeakKeyDictionary[Screen, tuple[str, list[BeatClock]]] = weakref.WeakKeyDictionary()

    def tick(self, screen: Screen) -> None:
        minute = time.strftime(CLOCK_FORMAT)
        shown, clocks = self._shown.get(screen, (None, []))
        if shown != minute:
            clocks = clocks or list(screen.query(BeatClock))
            for clock in clocks:
                clock.refresh()
            self._shown[screen] = (minute, clocks)


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
