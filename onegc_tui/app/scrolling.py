"""Scrolling widgets whose content grows without moving anything else on the screen.

Textual's ``Widget.virtual_size`` is a layout reactive: a line added to a Log, or a table refilled
with other rows, relayouts the whole screen and then redraws every widget on it. A pane whose own
size is fixed by the stylesheet (``1fr``, a percentage) does not move when its content grows: it
needs a repaint and its scrollbars, which is what a relayout would have done for it. A scrollbar
that appears or goes still relayouts (``show_vertical_scrollbar`` is a layout reactive).
"""

from __future__ import annotations

from textual.geometry import Size
from textual.reactive import Reactive


class GrowsInPlace:
    """Mix in before a ScrollView or a scrollable widget sized by the stylesheet, not by its content."""

    virtual_size: Reactive[Size] = Reactive(Size(0, 0), layout=False)

    def watch_virtual_size(self, size: Size) -> None:
        self._scroll_update(size)  # type: ignore[attr-defined]  # the Widget's: its scrollbars
