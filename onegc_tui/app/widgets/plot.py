"""A small braille plot widget: scores (or any series) against budget time, with an optional cursor.

Drawing happens in :func:`onegc_tui.views.plot.plot_series` (pure); this widget only sizes, colours and
labels it. No plotting dependency: textual-plotext would pull in plotext for four lines of plot.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.widget import Widget

from onegc_tui.views.format import clock
from onegc_tui.views.metric_range import UNBOUNDED, Bounds
from onegc_tui.views.plot import plot_series

GUTTER = 8  # characters of y labels left of the plot
STYLES = ("bold green", "cyan", "magenta", "yellow", "bright_blue", "red")


@dataclass(frozen=True)
class Series:
    points: tuple[tuple[float, float], ...]
    style: str = "bold green"
    mode: str = "step"  # step, line or dots


class Plot(Widget):
    """Series against budget seconds on [0, x_max]; ``cursor`` (seconds) draws a vertical marker."""

    DEFAULT_CSS = "Plot { height: 8; }"

    def __init__(self, empty: str = "no scored checkpoint yet", fmt: str = "{:.4f}", **kwargs):
        super().__init__(**kwargs)
        self.series: list[Series] = []
        self.x_max = 1.0
        self.cursor: float | None = None
        self.y_range: tuple[float, float] | None = None
        self.bounds: Bounds = UNBOUNDED
        self.empty = empty
        self.fmt = fmt

    def show(self, series: list[Series], x_max: float, cursor: float | None = None,
             y_range: tuple[float, float] | None = None, bounds: Bounds = UNBOUNDED) -> None:
        """``bounds``: the metric's range (onegc_tui/views/metric_range.py), which the y axis keeps to."""
        self.series, self.x_max, self.cursor, self.y_range = series, max(x_max, 1e-9), cursor, y_range
        self.bounds = bounds
        self.refresh()

    def move_cursor(self, cursor: float | None) -> None:
        self.cursor = cursor
        self.refresh()

    def render(self) -> Text:
        width, height = self.size.width, self.size.height
        pw, ph = max(1, width - GUTTER), max(1, height - 1)
        if not any(s.points for s in self.series):
            return Text(self.empty, style="dim")
        canvas, (lo, hi) = plot_series([list(s.points) for s in self.series], pw, ph, self.x_max, self.y_range,
                                       [s.mode for s in self.series], self.bounds)
        cursor_col = None
        if self.cursor is not None:
            cursor_col = min(pw - 1, max(0, round(self.cursor / self.x_max * (pw * 2 - 1)) // 2))
        rows = canvas.rows()
        out = Text(no_wrap=True, overflow="crop")
        for r, line in enumerate(rows):
            label = self.fmt.format(hi) if r == 0 else self.fmt.format(lo) if r == ph - 1 else ""
            out.append(label[:GUTTER - 1].rjust(GUTTER - 1) + "┤", style="dim")
            for c, ch in enumerate(line):
                owner = canvas.owner[r][c]
                if c == cursor_col:
                    out.append(ch if ch != " " else "│", style="reverse yellow" if ch != " " else "yellow")
                else:
                    out.append(ch, style=self.series[owner].style if owner >= 0 else "")
            out.append("\n")
        left, right = "0", clock(self.x_max)
        axis = left + right.rjust(pw - len(left))
        if cursor_col is not None:
            mark = f"▲{clock(self.cursor)}"
            at = min(max(0, cursor_col), max(0, pw - len(mark)))
            axis = axis[:at] + mark + axis[at + len(mark):]
        out.append(" " * GUTTER + axis[:pw], style="dim")
        return out
