"""A partial frame that renders only what it shows (``RowsCompositor``).

Textual (8.2) draws a partial update from the bounding box of its dirty regions: every widget that
overlaps the box renders all of its rows (from its line cache, through its line filters), and what
the update does not show is then thrown away. The monitor's once-a-second frame changes the header
clock (top right), the countdown and the GPU pane (middle right): their box is the right half of
the screen, and every widget in it rendered every row, every second, to show ten rows.
Here a widget renders only the rows on which it shows part of a dirty region, in runs of adjacent
rows: a widget that meets none (a pane beside a change, in the same rows) does not render at all,
nor does a container on the rows where its children in front cover the change. The rest of its
rows keep whatever the widget's line cache holds (a dirty line stays dirty for the frame that
shows it). That is enough for the frame: an update writes, on each of its rows, the screen's
pieces between widget edges ("chops") that reach into a dirty region, and the widget in front in
such a piece (the first the compositor meets, front to back) shows part of that region on that
row. A full frame is rendered as Textual renders it.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable

from textual._compositor import ChopsUpdate, Compositor
from textual.geometry import Region
from textual.strip import Strip


def row_runs(rows: list[int], top: int, bottom: int) -> Iterable[tuple[int, int]]:
    """Runs ``(start, end)`` of adjacent rows of the sorted ``rows`` within ``top ≤ y < bottom``."""
    i = bisect_left(rows, top)
    start: int | None = None
    end: int | None = None
    while i < len(rows) and rows[i] < bottom:
        y = rows[i]
        if end is not None and y == end:
            end += 1
        else:
            if start is not None and end is not None:
                yield start, end
            start, end = y, y + 1
        i += 1
    if start is not None and end is not None:
        yield start, end


def covered(need: list[tuple[int, int]], cover: list[tuple[int, int]]) -> bool:
    """Whether the x ranges ``need`` lie within the union of the ranges ``cover``."""
    ranges = sorted(cover)
    for a, b in need:
        x = a
        for c, d in ranges:
            if c <= x < d:
                x = d
            if x >= b:
                break
        if x < b:
            return False
    return True


class RowsCompositor(Compositor):
    """The screen's compositor: a partial update renders each widget's rows that it shows only."""

    def __init__(self) -> None:
        super().__init__()
        self._dirty: list[Region] | None = None  # the regions of the partial update being rendered

    def render_partial_update(self) -> ChopsUpdate | None:
        self._dirty = list(self._dirty_regions)
        try:
            return super().render_partial_update()
        finally:
            self._dirty = None

    def _get_renders(self, crop: Region | None = None) -> Iterable[tuple[Region, Region, list[Strip]]]:
        dirty = self._dirty
        if dirty is None or crop is None:
            yield from super()._get_renders(crop)
            return
        spans: dict[int, list[tuple[int, int]]] = {}  # row -> the dirty x ranges on it
        for d in dirty:
            for y in d.line_range:
                spans.setdefault(y, []).append((d.x, d.right))
        span_rows = sorted(spans)
        cover: dict[int, list[tuple[int, int]]] = {}  # row -> the x ranges of the widgets met so far
        overlaps = crop.overlaps
        for widget, (region, clip) in list(self.visible_widgets.items()):  # front to back
            if not overlaps(clip):
                continue
            shown = region.intersection(clip)
            if not shown:
                continue
            x1, x2 = shown.x, shown.right
            rows = []
            for y in span_rows[bisect_left(span_rows, shown.y):bisect_left(span_rows, shown.bottom)]:
                need = [(max(a, x1), min(b, x2)) for a, b in spans[y] if a < x2 and b > x1]
                met = cover.setdefault(y, [])
                if need and not covered(need, met):
                    rows.append(y)
                met.append((x1, x2))
            # each run of rows as a render of its own: the rows it does not show are not rendered
            for start, end in row_runs(rows, shown.y, shown.bottom):
                yield region, clip.intersection(Region(x1, start, shown.width, end - start)), \
                    widget.render_lines(Region(x1 - region.x, start - region.y, shown.width, end - start))
