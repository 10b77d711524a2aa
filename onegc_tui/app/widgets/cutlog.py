"""A Log that never scrolls sideways: a line wider than the pane ends in ``…`` at its edge (the
detail and replay transcripts; Textual's Log crops a long line silently and scrolls sideways)."""

from __future__ import annotations

from rich.cells import cell_len
from rich.segment import Segment
from textual.strip import Strip
from textual.widgets import Log

from onegc_tui.views.sessions_view import ELLIPSIS
from onegc_tui.views.text_table import figure_safe_cut


class CutLog(Log):
    def _update_size(self, updates: int, lines: list[str]) -> None:  # type: ignore[override]  # a no-op: any signature
        """No sideways scrolling: the widest line does not matter (Log measures it on a thread)."""

    def _render_line(self, y: int, scroll_x: int, width: int) -> Strip:
        rich_style = self.rich_style
        if y >= len(self.lines):
            return Strip.blank(width, rich_style)
        strip = self._render_line_strip(y, rich_style)
        shown = width - (self.styles.scrollbar_size_vertical if self.show_vertical_scrollbar else 0)
        if strip.cell_length > shown > 1:  # cut at the edge (not under the scrollbar), and say so: never in a figure
            line = self.lines[y]
            keep = shown - 1 if cell_len(line) != len(line) else figure_safe_cut(line, shown - 1)
            strip = Strip.join([strip.crop(0, keep), Strip([Segment(ELLIPSIS, rich_style)])])
        return strip.crop_extend(0, width, rich_style).apply_offsets(scroll_x, y)
