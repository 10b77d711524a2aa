"""Plots drawn in text: a braille canvas (2×4 dots a cell), step/line/dot series on it, the
best-so-far steps of a score series, and a one-line level strip. Pure; the Textual app's Plot
widget only sizes and colours what these draw.
"""

from __future__ import annotations

from onegc_tui.views.metric_range import UNBOUNDED, Bounds, padded_range
from tasks import Direction, better

_BRAILLE = 0x2800
_DOT = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))  # [pixel row][pixel column] in a cell


class BrailleCanvas:
    """A character grid of braille cells, 2×4 pixels each; every cell remembers which series drew last."""

    def __init__(self, width: int, height: int):
        self.width, self.height = max(1, width), max(1, height)
        self.bits = [[0] * self.width for _ in range(self.height)]
        self.owner = [[-1] * self.width for _ in range(self.height)]

    @property
    def px(self) -> tuple[int, int]:
        return self.width * 2, self.height * 4

    def dot(self, x: int, y: int, series: int = 0) -> None:
        """Pixel (x, y), y counted from the top."""
        if 0 <= x < self.width * 2 and 0 <= y < self.height * 4:
            r, c = y // 4, x // 2
            self.bits[r][c] |= _DOT[y % 4][x % 2]
            self.owner[r][c] = series

    def line(self, x0: int, y0: int, x1: int, y1: int, series: int = 0) -> None:
        n = max(abs(x1 - x0), abs(y1 - y0), 1)
        for i in range(n + 1):
            self.dot(round(x0 + (x1 - x0) * i / n), round(y0 + (y1 - y0) * i / n), series)

    def rows(self) -> list[str]:
        return ["".join(chr(_BRAILLE + b) if b else " " for b in row) for row in self.bits]


def plot_series(series: list[list[tuple[float, float]]], width: int, height: int, x_max: float,
                y_range: tuple[float, float] | None = None,
                modes: list[str] | None = None, bounds: Bounds = UNBOUNDED) -> tuple[BrailleCanvas, tuple[float, float]]:
    """Draw each series ((x, y) points, x in [0, x_max]) on a braille canvas, each as a ``step`` line
    (best so far, the default), a ``line`` or ``dots``; returns the canvas and the y range used.
    Without ``y_range``, the values' range with a margin, inside the metric's ``bounds``
    (an accuracy's axis never runs past 1: onegc_tui/views/metric_range.py)."""
    canvas = BrailleCanvas(width, height)
    ys = [y for s in series for _, y in s]
    if y_range is None:
        y_range = padded_range(ys, bounds)
        if y_range is None:
            return canvas, (0.0, 1.0)
    lo, hi = y_range
    pw, ph = canvas.px

    def xy(x: float, y: float) -> tuple[int, int]:
        fx = min(1.0, max(0.0, x / x_max)) if x_max > 0 else 0.0
        fy = min(1.0, max(0.0, (y - lo) / (hi - lo))) if hi > lo else 0.5
        return round(fx * (pw - 1)), round((1 - fy) * (ph - 1))

    for k, points in enumerate(series):
        mode = modes[k] if modes else "step"
        prev = None
        for x, y in points:
            p = xy(x, y)
            if prev is None or mode == "dots":
                canvas.dot(*p, series=k)
            elif mode == "step":
                canvas.line(prev[0], prev[1], p[0], prev[1], k)
                canvas.line(p[0], prev[1], p[0], p[1], k)
            else:
                canvas.line(*prev, *p, series=k)
            prev = p
    return canvas, y_range


def best_so_far(points: list[tuple[float, float]], direction: Direction,
                until: float | None = None) -> list[tuple[float, float]]:
    """The step points of the best score so far (points sorted by x), extended flat to ``until``."""
    out: list[tuple[float, float]] = []
    for x, y in sorted(points):
        if not out or better(y, out[-1][1], direction):
            out.append((x, y))
    if out and until is not None and until > out[-1][0]:
        out.append((until, out[-1][1]))
    return out


def level_strip(values: list[tuple[float, float]], width: int, x_max: float, top: float = 100.0) -> str:
    """A one-line bar strip (▁…█) of (x, value) samples on [0, x_max], the max per column."""
    cols = [-1.0] * max(1, width)
    for x, v in values:
        c = min(width - 1, max(0, int(x / x_max * width))) if x_max > 0 else 0
        cols[c] = max(cols[c], v)
    blocks = " ▁▂▃▄▅▆▇█"
    return "".join("·" if v < 0 else blocks[min(8, max(1, round(v / top * 8)))] if v > 0 else "▁" for v in cols)

