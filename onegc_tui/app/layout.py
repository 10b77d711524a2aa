"""Layouts Textual would do for nothing: scrolling widgets whose content grows without moving
anything else on the screen (``GrowsInPlace``), and a screen laid out once per size whose partial
frames render only the rows they show (``SteadyScreen``, ``compositor.RowsCompositor``).

Textual's ``Widget.virtual_size`` is a layout reactive: a line added to a Log, or a table refilled
with other rows, relayouts the whole screen and then redraws every widget on it. A pane whose own
size is fixed by the stylesheet (``1fr``, a percentage) does not move when its content grows: it
needs a repaint and its scrollbars, which is what a relayout would have done for it. A scrollbar
that appears or goes still relayouts (``show_vertical_scrollbar`` is a layout reactive).
"""

from __future__ import annotations

from textual.events import Mount, Resize
from textual.geometry import Size
from textual.reactive import Reactive
from textual.screen import Screen

from onegc_tui.app.compositor import RowsCompositor


class GrowsInPlace:
    """Mix in before a ScrollView or a scrollable widget sized by the stylesheet, not by its content."""

    virtual_size: Reactive[Size] = Reactive(Size(0, 0), layout=False)

    def watch_virtual_size(self, size: Size) -> None:
        self._scroll_update(size)  # type: ignore[attr-defined]  # the Widget's: its scrollbars


class SteadyScreen(Screen):
    """A screen laid out once for its first frame. A screen is among the widgets its own first
    layout shows, so Textual (8.2) sends it a Resize, and a screen answers every Resize with a full
    layout and its size classes (``HORIZONTAL_BREAKPOINTS``): each screen's first frame was laid
    out twice (the dashboard over 10 000 sessions: ~150 ms more before the first key was read;
    the history screen: its first ``h``). Here the size classes are set before the first layout,
    and a Resize to the size laid out already, with those classes, is let go. Its partial frames
    render only the rows they show (``RowsCompositor``)."""

    def __init__(self, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._compositor = RowsCompositor()

    def _on_mount(self, event: Mount) -> None:
        self.update_classes(self._size_classes(self.app.size), animate=False)

    def _on_resize(self, event: Resize) -> None:  # type: ignore[override]  # sync: no await between the size and the layout
        if event.size == self._compositor.size and all(
                self.has_class(name) == on for name, on in self._size_classes(event.size).items()):
            event.prevent_default()  # Screen._on_resize: the same layout again

    def _size_classes(self, size: Size) -> dict[str, bool]:
        """Which breakpoint classes a screen of ``size`` has (as Screen._on_resize sets them)."""
        horizontal = (self.app.HORIZONTAL_BREAKPOINTS if self.HORIZONTAL_BREAKPOINTS is None
                      else self.HORIZONTAL_BREAKPOINTS) or []
        vertical = (self.app.VERTICAL_BREAKPOINTS if self.VERTICAL_BREAKPOINTS is None
                    else self.VERTICAL_BREAKPOINTS) or []
        on = self._get_breakpoint_classes(size.width, horizontal) | self._get_breakpoint_classes(size.height, vertical)
        return {name: name in on for _, name in horizontal + vertical}
