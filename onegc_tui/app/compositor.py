"""A partial frame that renders only the rows it shows (``RowsCompositor``).

Textual (8.2) draws a partial update from the bounding box of its dirty regions: every widget that
overlaps the box renders all of its rows (from its line cache, through its line filters), and the
rows the update does not show are then thrown away. The monitor's once-a-second frame changes the
header clock (top right), the countdown and the GPU pane (middle right): their box is the right
half of the screen, and every pane in it rendered every row, every second, to show ten rows.
Here each widget in the box renders only the rows the update shows, in runs of adjacent rows; the
rest of its rows keep whatever the widget's line cache holds (a dirty line stays dirty for the
frame that shows it). A full frame is rendered as Textual renders it.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from typing import cast

from textual._compositor import ChopsUpdate, Compositor
from textual.geometry import Region
from textual.strip import Strip


def row_runs(rows: list[int], top: int, bottom: int) -> Iterable[tuple[int, int]]:
    """Runs ``(start, end)`` of adjacent rows of the sorted ``rows`` within ``top ≤ y < bottom``."""
    i = bisect_left(rows, top)
    start = end = None
    while i < len(rows) and rows[i] < bottom:
        y = rows[i]
        if end is not None and y == end:
            end += 1
        else:
            if start is not None:
                yield start, end
            start, end = y, y + 1
        i += 1
    if start is not None:
        yield start, end


class RowsCompositor(Compositor):
    """The screen's compositor: a partial update renders each widget's shown rows only."""

    def __init__(self) -> None:
        super().__init__()
        self._rows: list[int] | None = None  # the rows the partial update being rendered shows

    def render_partial_update(self) -> ChopsUpdate | None:
        height = self.size.height
        self._rows = sorted({y for region in self._dirty_regions
                             for y in range(max(0, region.y), min(height, region.bottom))})
        try:
            return super().render_partial_update()
        finally:
            self._rows = None

    def _get_renders(self, crop: Region | None = None) -> Iterable[tuple[Region, Region, list[Strip]]]:
        rows = self._rows
        if rows is None or crop is None:
            yield from super()._get_renders(crop)
            return
        overlaps = crop.overlaps
        for widget, (region, clip) in list(self.visible_widgets.items()):
            if not overlaps(clip):
                continue
            x, y, width, height = region.intersection(clip)
            if not (width and height):
                continue
            # the rows not shown are never read (``_render_chops`` skips them): None stands in
            strips = cast("list[Strip]", [None] * height)
            for start, end in row_runs(rows, y, y + height):
                strips[start - y:end - y] = widget.render_lines(
                    Region(x - region.x, start - region.y, width, end - start))
            yield region, clip, strips
