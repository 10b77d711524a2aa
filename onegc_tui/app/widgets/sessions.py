"""The dashboard's sessions table: every session, updated by key, fitted to the terminal width,
sorted (header shows the direction; click a header to sort by it) and filtered.

Rows are added, updated and removed by key and re-ordered in place, never cleared, so the cursor
stays on its session while the table changes underneath. The table is rebuilt only when the
set of columns that fit changes (a resize) or the filter changes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping

from rich.text import Text
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.strip import Strip
from textual.timer import Timer
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey

from onegc_tui.views.sessions_view import (
    DEFAULT_SORT,
    SESSION,
    ColumnSpec,
    SessionFilter,
    cell_tone,
    end_cut,
    fit_columns,
    left_cell,
    middle_cut,
    ordered,
    session_cells,
    sort_arrow,
)
from runner.wire.textsafe import safe_text

RELAYOUT_S = 0.15  # a resize drag sends many events: lay out once it settles
SCROLLBAR_W = 2  # reserved: the layout must not flip as the scrollbar comes and goes


Cells = dict[str, tuple[str, str]]  # column key -> (text, tone) of one row


def _discard(cache, stale: Callable[[tuple], bool]) -> None:
    """Drop the entries of a Textual LRUCache whose key is ``stale``."""
    keys = cache.keys()  # (an LRUCache: no iteration of its own)
    for key in [key for key in keys if stale(key)]:
        cache.discard(key)


class Cell:
    """A sessions-table cell, made a ``Text`` only when Textual draws it (``__rich__``): a store
    of 10 000 sessions is some 100 000 cells, of which a screen shows a few hundred, and a ``Text``
    each was most of the seconds the first table took. ``sid``: the session the row stands for
    (the session column's sort key)."""

    __slots__ = ("text", "width", "style", "sid", "middle")

    def __init__(self, text: str, width: int, style: str, sid: str, middle: bool = False):
        self.text, self.width, self.style, self.sid, self.middle = text, width, style, sid, middle

    def __rich__(self) -> Text:
        return Text((middle_cut if self.middle else end_cut)(safe_text(self.text, one_line=True), self.width),
                    style=self.style)

    def __str__(self) -> str:
        return str(self.__rich__())


class SessionsTable(DataTable):
    help_name = "Sessions table"
    BINDINGS = [
        # htop and friends: Home/End go to the first and last row (DataTable scrolls sideways)
        Binding("home", "scroll_top", "First session", show=False),
        Binding("end", "scroll_bottom", "Last session", show=False),
    ]

    class SortChanged(Message):
        """The user sorted by clicking a header."""

    def __init__(self, now: Callable[[], float] = time.time, **kwargs):
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.now = now
        self.summaries: dict[str, dict] = {}  # every session's summary row, shown or filtered out
        self.order: list[str] = []  # the shown sessions, in display order
        self._cells: dict[str, Cells] = {}  # the shown sessions' cells
        self.sort_by = DEFAULT_SORT
        self.sort_reverse = False
        self.row_filter = SessionFilter()
        self.filter_text = ""
        self.marked: list[str] = []
        self.fitted: list[tuple[ColumnSpec, int]] = []
        self._tones: dict[str, str] = {}
        self._stale: dict[RowKey, set[ColumnKey]] = {}  # cells changed since the last frame drew

    # ------------------------------------------------------------------ layout
    def on_mount(self) -> None:
        self._resolve_tones()

    def _resolve_tones(self) -> None:
        v = self.app.get_css_variables()
        self._tones = {"failed": f"bold {v.get('error', 'red')}", "paused": f"bold {v.get('warning', 'yellow')}",
                       "running": v.get("success", "green"), "ended": v.get("text-muted", "grey50"),
                       "flagged": f"bold {v.get('warning', 'yellow')}"}

    def on_resize(self) -> None:
        if self._relayout_timer is not None:
            self._relayout_timer.stop()
        self._relayout_timer = self.set_timer(RELAYOUT_S, lambda: self.relayout(self.size.width))

    _relayout_timer: Timer | None = None

    def relayout(self, width: int, more: Mapping[str, dict] | None = None) -> bool:
        """Fit the columns to ``width`` (and the summary rows about to come, by id); rebuild the
        table if what fits changed."""
        rows = (self.summaries, more or {})
        longest = max((len(sid) for ids in rows for sid in ids), default=SESSION.width)
        layout = fit_columns(max(0, width - SCROLLBAR_W), longest)
        if layout == self.fitted:
            return False
        self.fitted = layout
        self.rebuild()
        return True

    def rebuild(self) -> None:
        """Columns and rows anew (a new layout or filter); the cursor stays on its session."""
        keep = self.current()
        if not self._tones:
            self._resolve_tones()
        self.clear(columns=True)
        for col, width in self.fitted:
            self.add_column(self._label(col), key=col.key, width=width)
        self._cells.clear()
        self.order = ordered((r for r in self.summaries.values() if self.row_filter.matches(r)), self.sort_by,
                             self.sort_reverse, self.now())
        now = self.now()
        for sid in self.order:
            self._add(sid, self.summaries[sid], now)
        if keep in self._cells:
            self.go_to(keep)

    def _label(self, col: ColumnSpec) -> Text:
        if col.sort and col.sort == self.sort_by:
            return Text(f"{col.label} {sort_arrow(self.sort_by, self.sort_reverse)}", style="bold")
        return Text(col.label)

    # ------------------------------------------------------------------ cells
    def _cells_of(self, sid: str, row: dict, now: float) -> Cells:
        texts = session_cells(row, now)
        texts["mark"] = "◆" if sid in self.marked else ""
        return {c.key: (texts[c.key], cell_tone(c.key, row)) for c, _ in self.fitted}

    def _cell(self, key: str, cell: tuple[str, str], width: int, sid: str) -> Cell:
        text, tone = cell
        return Cell(text, width, self._tones.get(tone, ""), sid, middle=key == "session")

    def _add(self, sid: str, row: dict, now: float) -> None:
        cells = self._cells_of(sid, row, now)
        self.add_row(*(self._cell(c.key, cells[c.key], w, sid) for c, w in self.fitted), key=sid)
        self._cells[sid] = cells

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        """The table's scrollable size once rows came. Textual measures every cell of every new
        row for the columns' content widths, which only auto-width columns and auto-height rows
        use: here every column has its fitted width and every row one line, so the 10 000 rows of
        a large store were measured for nothing, on the drawing thread, for seconds after the
        dashboard first showed (keys waited behind it). Only the size is set then."""
        if self._labelled_row_exists or any(c.auto_width for c in self.columns.values()):
            super()._update_dimensions(new_rows)
            return
        width = sum(c.get_render_width(self) for c in self.columns.values())
        self.virtual_size = Size(width, self._total_row_height + (self.header_height if self.show_header else 0))

    def put(self, sid: str, row: dict, now: float) -> bool:
        """Show a session's current row: add it, update the cells that changed, or drop it when
        the filter no longer keeps it. Returns whether the set of shown rows changed."""
        self.summaries[sid] = row
        shown = sid in self._cells
        if not self.row_filter.matches(row):
            if shown:
                self.remove_row(sid)
                del self._cells[sid]
                self.order.remove(sid)
            return shown
        if not shown:
            self._add(sid, row, now)
            self.order.append(sid)  # placed by the next resort
            return True
        cells = self._cells_of(sid, row, now)
        old = self._cells[sid]
        changed = {col.key: self._cell(col.key, cells[col.key], width, sid)
                   for col, width in self.fitted if cells[col.key] != old[col.key]}
        self._cells[sid] = cells
        if changed:
            self._update_row(sid, changed)
        return False

    def tick_left(self, sid: str, now: float) -> None:
        """A running session's countdown moved: its "left" cell only (the other cells come with a
        changed summary row, through :meth:`put`), repainted when its text changed."""
        cells = self._cells.get(sid)
        width = next((w for c, w in self.fitted if c.key == "left"), None)
        if cells is None or width is None:
            return
        text, tone = cells["left"]
        new = left_cell(self.summaries[sid], now)
        if new != text:
            cells["left"] = (new, tone)
            self._update_row(sid, {"left": self._cell("left", (new, tone), width, sid)})

    def _update_row(self, sid: str, values: dict[str, Cell]) -> None:
        """New values for some cells of one row, re-rendering those cells and repainting that row
        only. DataTable.update_cell bumps the table's update count, which every rendered cell,
        row and line is cached under, and repaints the whole table: a GPU figure changing in each
        running session's row every second re-rendered every cell of every row (~0.25 ms a cell
        here: a second of 8 sessions was ~30 ms of drawing), and, the table's region spanning the
        screen, rendered the panes below it in the same frame. Here what shows the changed cells
        leaves Textual's caches before the next frame draws (``_drop_stale``, once for every row
        that changed); tests/app/test_sessions_table.py checks the table drawn so against the
        same table rebuilt."""
        row_key = RowKey(sid)
        cells = self._data[row_key]
        stale = self._stale.setdefault(row_key, set())
        for key, value in values.items():
            cells[ColumnKey(key)] = value
            stale.add(ColumnKey(key))
        self.refresh_row(self.get_row_index(sid))

    def render_lines(self, crop: Region) -> list[Strip]:
        if self._stale:
            self._drop_stale()
        return super().render_lines(crop)

    def _drop_stale(self) -> None:
        """Take the changed cells' renders out of Textual's caches (8.2: cells by row and column
        key, rows by row key, row renderables by row index, lines by their y), one pass over each
        cache for every row that changed since the last frame."""
        stale, self._stale = self._stale, {}
        indices = {i for key in stale if (i := self._row_locations.get(key)) is not None}
        lines = {y for i in indices for y in self._get_row_region(i).line_range}
        _discard(self._cell_render_cache, lambda k: k[0] in stale and k[1] in stale[k[0]])
        _discard(self._row_render_cache, lambda k: k[0] in stale)
        _discard(self._row_renderable_cache, lambda k: k[1] in indices)
        _discard(self._line_cache, lambda k: k[0] in lines)

    def set_mark(self, sid: str) -> None:
        if sid in self._cells:
            self.put(sid, self.summaries[sid], self.now())

    # ------------------------------------------------------------------ order and filter
    def resort(self) -> bool:
        """Put the shown rows in sort order (the cursor stays on its session); False if they were."""
        want = ordered((self.summaries[sid] for sid in self._cells), self.sort_by, self.sort_reverse, self.now())
        if want == self.order:
            return False
        keep = self.current()
        rank = {sid: i for i, sid in enumerate(want)}
        self.sort("session", key=lambda cell: rank[cell.sid])
        self.order = want
        if keep in rank:
            self.go_to(keep)
        return True

    def set_sort(self, by: str, reverse: bool) -> None:
        self.sort_by, self.sort_reverse = by, reverse
        for col, _ in self.fitted:
            self.columns[ColumnKey(col.key)].label = self._label(col)
        self._update_count += 1  # Textual caches rendered cells (headers too) per update count
        self.refresh()
        self.resort()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        """Click a header to sort by its column; click it again to reverse."""
        col = next((c for c, _ in self.fitted if c.key == event.column_key.value), None)
        if col is None or not col.sort:
            return
        event.stop()
        self.set_sort(col.sort, not self.sort_reverse if col.sort == self.sort_by else False)
        self.post_message(self.SortChanged())

    def set_filter(self, query: str) -> None:
        parsed = SessionFilter.parse(query)
        self.filter_text = query.strip()
        if parsed != self.row_filter:
            self.row_filter = parsed
            self.rebuild()

    # ------------------------------------------------------------------ the cursor
    def current(self) -> str | None:
        """The session under the cursor."""
        if not self.row_count or not self.is_valid_row_index(self.cursor_row):
            return None
        return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value

    def go_to(self, sid: str) -> None:
        if sid in self._cells:
            self.move_cursor(row=self.get_row_index(sid), animate=False)
