"""The dashboard's sessions table: every session, fitted to the terminal width, sorted (the header
shows the direction; click a header to sort by it) and filtered, and virtual: it holds the rows
around the ones it shows, read by page from the store's indexes (onegc_tui/store/session_pages.py),
never the whole list. A home of 100 000 sessions costs it what a home of 100 does: a page read
when the view moves past what it holds, or when the store's rows change (~1 ms: a range of an
index), and the rows of one page in memory.

The cursor stays on its session while the rows change underneath (its new place is looked up: a
count over the sort's index), and a session's cells are made text only when a line shows them.
The columns are fitted again only when the width, the longest id, the highest repeat or a sealed
session changes what fits.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from rich.cells import set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.timer import Timer

from onegc_tui.app.host import store_of
from onegc_tui.store.session_pages import Filter, SessionPages, widest
from onegc_tui.views.sessions_view import (
    CELL_PADDING,
    DEFAULT_SORT,
    SESSION,
    ColumnSpec,
    cell_tone,
    end_cut,
    fit_columns,
    middle_cut,
    parse_filter,
    session_cells,
    sort_arrow,
)
from runner.wire.textsafe import safe_text

RELAYOUT_S = 0.15  # a resize drag sends many events: lay out once it settles
SCROLLBAR_W = 2  # reserved: the layout must not flip as the scrollbar comes and goes
HEADER = 1  # the header's lines (it stays in place; the rows scroll under it)
WINDOW_MIN = 64  # rows read at a time at least: a page of a tall terminal, and room to move
STRIPS_MAX = 512  # drawn lines kept by what they show (emptied whole when full)
LIVE = ("running",)  # states whose budget-left cell counts down between rows


class SessionsTable(ScrollView, can_focus=True):
    help_name = "Sessions table"
    COMPONENT_CLASSES = {"sessions-table--header", "sessions-table--cursor", "sessions-table--even-row",
                         "sessions-table--odd-row"}
    # DataTable's look (textual/widgets/_data_table.py), for its row cursor and stripes
    DEFAULT_CSS = """
    SessionsTable {
        width: 1fr;
        background: $surface;
        color: $foreground;
        overflow-x: hidden;
        overflow-y: auto;
        &:focus {
            background-tint: $foreground 5%;
            & > .sessions-table--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .sessions-table--header {
                background-tint: $foreground 5%;
            }
        }
        &:dark > .sessions-table--even-row {
            background: $surface-darken-1 40%;
        }
        & > .sessions-table--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        &:ansi > .sessions-table--header {
            background: ansi_bright_blue;
            color: ansi_default;
        }
        & > .sessions-table--even-row {
            background: $surface-lighten-1 50%;
        }
        & > .sessions-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
    }
    """
    BINDINGS = [
        Binding("up", "cursor(-1)", "Previous session", show=False),
        Binding("down", "cursor(1)", "Next session", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        # htop and friends: Home/End go to the first and last row
        Binding("home", "first", "First session", show=False),
        Binding("end", "last", "Last session", show=False),
        Binding("enter", "choose", "Open the session's detail", show=False),
    ]

    class Highlighted(Message):
        """The cursor is on another session (None: the list is empty)."""

        def __init__(self, table: SessionsTable, sid: str | None) -> None:
            super().__init__()
            self.table, self.sid = table, sid

        @property
        def control(self) -> SessionsTable:
            return self.table

    class Chosen(Highlighted):
        """Enter, or a click on the cursor's row: the session, opened."""

    class SortChanged(Message):
        """The user sorted by clicking a header."""

    def __init__(self, now: Callable[[], float] = time.time, **kwargs) -> None:
        super().__init__(**kwargs)
        self.now = now
        self.pages: SessionPages | None = None  # on mount: the app's store
        self.sort_by, self.sort_reverse = DEFAULT_SORT, False
        self.row_filter = Filter()
        self.filter_text = ""
        self.marked: list[str] = []
        self.fitted: list[tuple[ColumnSpec, int]] = []
        self.total = 0  # the sessions listed (the filter's)
        self.cursor_row = 0
        self._start = 0  # the place of the first row held
        self._rows: list[dict] = []  # the rows held, from _start on
        self._longest, self._repeats = SESSION.width, 1  # what the columns must hold whole
        self._tones: dict[str, Style] = {}
        self._strips: dict[tuple, Strip] = {}
        self._relayout_timer: Timer | None = None

    # ------------------------------------------------------------------ the store
    def on_mount(self) -> None:
        v = self.app.get_css_variables()
        style = lambda spec: self.app.console.get_style(spec, default=Style.null())  # noqa: E731  # a theme's "auto 60%": none
        self._tones = {"failed": style(f"bold {v.get('error', 'red')}"), "paused": style(f"bold {v.get('warning', 'yellow')}"),
                       "running": style(v.get("success", "green")), "ended": style(v.get("text-muted", "grey50")),
                       "flagged": style(f"bold {v.get('warning', 'yellow')}")}

    def open(self) -> None:
        """Read the first page (the dashboard calls it once the app's store is open)."""
        if self.pages is None:
            self.pages = SessionPages(store_of(self), self.sort_by, self.sort_reverse)
            self._longest, self._repeats = widest(self.pages.store)
            self.relayout(self.size.width or self.app.size.width)
            self.reload()

    @property
    def _view_rows(self) -> int:
        return max(1, self.scrollable_content_region.height - HEADER) if self.size.height else WINDOW_MIN // 3

    def reload(self) -> None:
        """Read again what the table holds (the rows changed in the store), and keep the cursor on
        its session."""
        if self.pages is None:
            return
        keep = self.current()
        self.total = self.pages.count()
        self.virtual_size = Size(0, self.total + HEADER)  # never wider than itself: nothing scrolls sideways
        self._read(self._start)
        place = self.place(keep) if keep is not None else None
        self.cursor_row = min(self.cursor_row if place is None else place, max(0, self.total - 1))
        self._show_cursor()
        self._strips.clear()
        self.refresh()

    def _read(self, start: int) -> None:
        assert self.pages is not None
        size = max(WINDOW_MIN, 3 * self._view_rows)
        self._start = max(0, min(start, self.total - size))
        self._rows = self.pages.page(self._start, size, self.now()) if self.total else []

    def _hold(self, first: int, last: int) -> None:
        """Make sure the rows from place ``first`` to ``last`` are held (a page read if not)."""
        if self.pages is None or (self._start <= first and last < self._start + len(self._rows)) or first >= self.total:
            return
        self._read(first - self._view_rows)

    def place(self, sid: str) -> int | None:
        """Where ``sid`` is in the list (None: not listed)."""
        for i, row in enumerate(self._rows):
            if row["session_id"] == sid:
                return self._start + i
        return self.pages.position(sid, self.now()) if self.pages is not None else None

    def row_at(self, place: int) -> dict | None:
        """The summary row at ``place`` in the list (read with its page where not held)."""
        if not 0 <= place < self.total:
            return None
        self._hold(place, place)
        i = place - self._start
        return self._rows[i] if 0 <= i < len(self._rows) else None

    def row(self, sid: str) -> dict | None:
        """A session's summary row: the one held, else the store's (filtered out or not)."""
        held = next((r for r in self._rows if r["session_id"] == sid), None)
        if held is not None or self.pages is None:
            return held
        return self.pages.rows([sid]).get(sid)

    def cell(self, sid: str, key: str) -> tuple[str, str]:
        """The text and the tone (``cell_tone``) of one cell of a session's row, as a line shows it."""
        row = self.row(sid)
        if row is None:
            raise KeyError(sid)
        return session_cells(row, self.now())[key], cell_tone(key, row)

    def listed(self, limit: int = 1_000) -> list[str]:
        """The first ``limit`` sessions in the table's order."""
        return [r["session_id"] for r in self.pages.page(0, limit, self.now())] if self.pages is not None else []

    # ------------------------------------------------------------------ live changes
    def take(self, changed: Mapping[str, dict], moving: list[str]) -> None:
        """The store's rows ``changed`` since the last look, and the running sessions whose countdown
        moved (``moving``): the rows held are read again where one of them may show or move."""
        if self.pages is None:
            return
        if changed:
            self.pages.refilter(changed.values())
            longest = max((len(sid) for sid in changed), default=0)
            repeats = max((row.get("repeat") or 1 for row in changed.values()), default=1)
            if longest > self._longest or repeats > self._repeats:
                self._longest = max(longest, self._longest)
                self._repeats = max(repeats, self._repeats)
                self.relayout(self.size.width)
            self.reload()
        elif moving and self.sort_by == "left":
            self.reload()  # the countdowns move the order
        elif moving:
            shown = range(int(self.scroll_y), int(self.scroll_y) + self._view_rows)
            if any((r := self.row_at(i)) is not None and r.get("state") in LIVE for i in shown):
                self.refresh()  # their "left" cells (the strips are kept by their text: only those change)

    # ------------------------------------------------------------------ layout
    def on_resize(self) -> None:
        if self._relayout_timer is not None:
            self._relayout_timer.stop()
        self._relayout_timer = self.set_timer(RELAYOUT_S, lambda: self.relayout(self.size.width))
        self._hold(int(self.scroll_y), int(self.scroll_y) + self._view_rows)

    def relayout(self, width: int) -> bool:
        """Fit the columns to ``width``; redraw if what fits changed."""
        layout = fit_columns(max(0, width - SCROLLBAR_W), self._longest, self._repeats)
        if layout == self.fitted:
            return False
        self.fitted = layout
        self._strips.clear()
        self.refresh()
        return True

    # ------------------------------------------------------------------ drawing
    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if y < HEADER:
            return self._header(width)
        place = int(self.scroll_y) + y - HEADER
        row = self.row_at(place)
        if row is None:
            return Strip.blank(width, self.rich_style)
        return self._line(place, row, width)

    def render_lines(self, crop):  # one page read for the lines about to be drawn, not one per line
        top = int(self.scroll_y)
        self._hold(top, top + self._view_rows)
        return super().render_lines(crop)

    def _header(self, width: int) -> Strip:
        style = self.rich_style + self.get_component_rich_style("sessions-table--header")
        segments = []
        for col, w in self.fitted:
            label = col.label
            bold = bool(col.sort and col.sort == self.sort_by)
            if bold:  # the arrow stays in sight: the label gives way ("Best va▼")
                arrow = sort_arrow(self.sort_by, self.sort_reverse)
                label = f"{label} {arrow}" if len(label) + 2 <= w else label[:max(0, w - 1)] + arrow
            text = " " * CELL_PADDING + set_cell_size(end_cut(label, w), w) + " " * CELL_PADDING
            segments.append(Segment(text, style + Style(bold=True) if bold else style))
        return Strip(segments).adjust_cell_length(width, style)

    def _line(self, place: int, row: dict, width: int) -> Strip:
        sid = row["session_id"]
        cursor = place == self.cursor_row
        cells = session_cells(row, self.now())
        cells["mark"] = "◆" if sid in self.marked else ""
        texts = tuple((cells[c.key], cell_tone(c.key, row)) for c, _ in self.fitted)
        key = (texts, place % 2, cursor, cursor and self.has_focus, width)
        strip = self._strips.get(key)
        if strip is not None:
            return strip
        base = self.rich_style + self.get_component_rich_style(
            "sessions-table--odd-row" if place % 2 else "sessions-table--even-row")
        over = self.get_component_rich_style("sessions-table--cursor") if cursor else None
        segments = []
        for (col, w), (text, tone) in zip(self.fitted, texts, strict=True):
            cut = (middle_cut if col.key == "session" else end_cut)(safe_text(text, one_line=True), w)
            style = base + self._tones[tone] if tone in self._tones else base
            if over is not None:
                style += over
            segments.append(Segment(" " * CELL_PADDING + set_cell_size(cut, w) + " " * CELL_PADDING, style))
        fill = base + over if over is not None else base
        strip = Strip(segments).adjust_cell_length(width, fill)
        if len(self._strips) >= STRIPS_MAX:
            self._strips.clear()
        self._strips[key] = strip
        return strip

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    # ------------------------------------------------------------------ the cursor
    def current(self) -> str | None:
        """The session under the cursor."""
        row = self.row_at(self.cursor_row)
        return row["session_id"] if row is not None else None

    def move_cursor(self, place: int) -> None:
        """Put the cursor on ``place`` (kept in the list), in sight, and say which session it is on."""
        before = self.current()
        self.cursor_row = max(0, min(place, self.total - 1))
        self._show_cursor()
        self.refresh()
        now = self.current()
        if now != before:
            self.post_message(self.Highlighted(self, now))

    def _show_cursor(self) -> None:
        top, rows = int(self.scroll_y), self._view_rows
        if self.cursor_row < top:
            self.scroll_to(y=self.cursor_row, animate=False, immediate=True)
        elif self.cursor_row >= top + rows:
            self.scroll_to(y=self.cursor_row - rows + 1, animate=False, immediate=True)

    def go_to(self, sid: str) -> bool:
        """The cursor on ``sid``, if the table lists it."""
        place = self.place(sid)
        if place is None:
            return False
        self.move_cursor(place)
        return True

    def action_cursor(self, step: int) -> None:
        self.move_cursor(self.cursor_row + step)

    def action_page(self, pages: int) -> None:
        self.move_cursor(self.cursor_row + pages * self._view_rows)

    def action_first(self) -> None:
        self.move_cursor(0)

    def action_last(self) -> None:
        self.move_cursor(self.total - 1)

    def action_choose(self) -> None:
        if (sid := self.current()) is not None:
            self.post_message(self.Chosen(self, sid))

    def on_click(self, event: events.Click) -> None:
        if event.y < HEADER:
            self._header_clicked(event.x)
            return
        place = int(self.scroll_y) + event.y - HEADER
        if place >= self.total:
            return
        if place == self.cursor_row:
            self.action_choose()
        else:
            self.move_cursor(place)

    def _header_clicked(self, x: int) -> None:
        """Click a header to sort by its column; click it again to reverse."""
        edge = 0
        for col, w in self.fitted:
            edge += w + 2 * CELL_PADDING
            if x < edge:
                if col.sort:
                    self.set_sort(col.sort, not self.sort_reverse if col.sort == self.sort_by else False)
                    self.post_message(self.SortChanged())
                return

    # ------------------------------------------------------------------ order, filter, marks
    def set_sort(self, by: str, reverse: bool) -> None:
        self.sort_by, self.sort_reverse = by, reverse
        if self.pages is not None:
            self.pages.sort(by, reverse)
        self.reload()

    def set_filter(self, query: str) -> None:
        parsed = parse_filter(query)
        self.filter_text = query.strip()
        if parsed != self.row_filter:
            self.row_filter = parsed
            if self.pages is not None:
                self.pages.set_filter(parsed)
            self.reload()

    def set_mark(self, sid: str) -> None:
        self.refresh()  # the mark's column of its line
