"""The GPU pane's utilisation history: bars on a fixed 0–100 % scale (the most recent at the
right), drawn straight into strips.

Why not textual's ``Sparkline``: it scales the bars between the data's own minimum and maximum, so
a GPU between 95 and 100 % looks as if it swung from idle to full; and it builds every bar with
``Fraction`` arithmetic and a colour blend, ~4 ms a frame on 2 cores, most of the idle monitor's
once-a-second frame. Here the strips are built once per new sample and served from a list.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip
from textual.widget import Widget

EIGHTHS = " ▁▂▃▄▅▆▇█"  # a cell filled to 0/8 … 8/8
LEVELS = 8  # colour steps between the low and the high end of the scale


def bar_heights(values: Iterable[float], width: int, height: int) -> list[int]:
    """Each column's height in eighths of a cell (0 … 8 × ``height``). Up to ``width`` samples
    take a column each, right-aligned (the chart fills from the right as samples come); more are
    shared out evenly, each column showing the highest of its own. A sample is a percentage,
    clamped to 0–100; a column with a sample is never empty (an idle GPU is a floor of ▁)."""
    top = 8 * height
    data = list(values)
    n = len(data)
    if width <= 0:
        return []
    if n > width:
        data = [max(data[i * n // width:(i + 1) * n // width]) for i in range(width)]
    heights = [max(1, round(min(100.0, max(0.0, v)) / 100 * top)) for v in data]  # 0 %: a floor, not nothing
    return [0] * (width - len(heights)) + heights


def bar_rows(heights: list[int], height: int) -> list[list[tuple[str, int]]]:
    """The rows of the chart from the top: runs of (characters, colour level 0 … LEVELS-1) of one
    level each; a column's level follows its whole height."""
    top = max(1, 8 * height)
    rows = []
    for row in range(height):
        floor = 8 * (height - 1 - row)  # eighths below this row
        runs: list[tuple[str, int]] = []
        text, level = "", -1
        for h in heights:
            ch = EIGHTHS[min(8, max(0, h - floor))]
            lv = min(LEVELS - 1, h * LEVELS // top) if ch != " " else -1
            if lv != level and text:
                runs.append((text, level))
                text = ""
            text += ch
            level = lv
        if text:
            runs.append((text, level))
        rows.append(runs)
    return rows


class UtilSpark(Widget):
    """Utilisation bars, 0–100 %; :meth:`show` takes the samples (oldest first)."""

    COMPONENT_CLASSES = {"utilspark--low", "utilspark--high"}
    DEFAULT_CSS = """
    UtilSpark { height: 4; }
    UtilSpark > .utilspark--low { color: $accent 35%; }
    UtilSpark > .utilspark--high { color: $accent; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._values: tuple[float, ...] = ()
        self._strips: list[Strip] | None = None
        self._built_for: tuple[int, int] = (0, 0)

    def show(self, values: Iterable[float]) -> None:
        values = tuple(values)
        if values != self._values:
            self._values = values
            self._strips = None
            self.refresh()

    def notify_style_update(self) -> None:  # a new theme: new colours
        super().notify_style_update()
        self._strips = None

    def _palette(self) -> list[Style | None]:
        low = self.get_component_styles("utilspark--low").color
        high = self.get_component_styles("utilspark--high").color
        _, base = self.background_colors
        return [Style(color=(base + low.blend(high, i / (LEVELS - 1))).rich_color) for i in range(LEVELS)]

    def _build(self, width: int, height: int) -> list[Strip]:
        palette = self._palette()
        rows = bar_rows(bar_heights(self._values, width, height), height)
        return [Strip([Segment(text, palette[level] if level >= 0 else None) for text, level in runs], width)
                for runs in rows]

    def render_line(self, y: int) -> Strip:
        width, height = self.size
        if self._strips is None or self._built_for != (width, height):
            self._strips = self._build(width, height)
            self._built_for = (width, height)
        return self._strips[y] if 0 <= y < len(self._strips) else Strip.blank(width)
