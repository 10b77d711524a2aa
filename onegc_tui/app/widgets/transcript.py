"""The transcript pane of the selected session: one line per step, cut with ``…`` at the pane's
edge; a line cursor (↑/↓ once the pane has the keyboard) and Enter to open a line whole; a
filter (all, text, tool calls, errors), full-text search, and follow.

Each line remembers the event it came from (session id, sequence number), so the line viewer
can read the whole step from SQLite and the raw CLI output from ``agent.stdout.jsonl``.
"""

from __future__ import annotations

from collections import deque

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.geometry import Region
from textual.message import Message
from textual.strip import Strip
from textual.widgets import Input, Log, Static

from onegc_tui.app.layout import GrowsInPlace
from onegc_tui.app.widgets.textbox import TextBox
from onegc_tui.store import Store
from onegc_tui.views.monitor_data import pane_entries
from onegc_tui.views.sessions_view import ELLIPSIS
from onegc_tui.views.task_facts import scored_split
from onegc_tui.views.text_table import figure_safe_cut
from onegc_tui.views.transcript_view import FILTERS, event_line, event_matches, search_words
from runner.wire.events import Event
from runner.wire.textsafe import safe_text

TRANSCRIPT_LINES = 2_000  # in the widget; the full transcript lives in SQLite
LOAD_LINES = 500  # read on selection: a screenful many times over, cheap enough to keep keys snappy
Ref = tuple[str, int] | None  # (session id, seq) of the event behind a line; None: a note of ours
MARK_AT = 9  # "HH:MM:SS " then the kind's mark
MARK_TONES = {"✖": "error", "⚠": "warning", "★": "success"}
STRIP_CACHE = 4 * TRANSCRIPT_LINES  # rendered lines kept by their text (emptied whole when full)


class TranscriptLog(GrowsInPlace, Log):
    """A Log of one line per event that never scrolls sideways (a cut line ends in ``…``), with a
    line cursor while it has the keyboard. It stops following new lines when the user moves up
    or scrolls back, and follows again at the end (``End`` or ``f``). New lines repaint it, not the
    screen (:class:`~onegc_tui.app.layout.GrowsInPlace`)."""

    help_name = "Transcript"
    BINDINGS = [
        Binding("up", "cursor(-1)", "Line up", show=False),
        Binding("down", "cursor(1)", "Line down", show=False),
        Binding("pageup", "cursor_page(-1)", "Page up", show=False),
        Binding("pagedown", "cursor_page(1)", "Page down", show=False),
        Binding("home", "cursor_to(0)", "First line", show=False),
        Binding("end", "follow", "Last line, follow", show=False),
        Binding("enter", "open", "Open the line whole"),
    ]

    class FollowChanged(Message):
        def __init__(self, following: bool):
            super().__init__()
            self.following = following

    class Open(Message):
        """Enter on a line: show it whole."""

        def __init__(self, ref: Ref, line: str):
            super().__init__()
            self.ref, self.line = ref, line

    def __init__(self, **kwargs):
        super().__init__(max_lines=TRANSCRIPT_LINES, auto_scroll=True, **kwargs)
        self.refs: deque[Ref] = deque(maxlen=TRANSCRIPT_LINES)
        self.cursor: int | None = None  # index into the lines; None: none (following)
        self._strips: dict[tuple[str, Style], Strip] = {}
        self._frame_style: Style | None = None

    # ------------------------------------------------------------------ lines
    def write_entries(self, entries: list[tuple[Ref, str]]) -> None:
        """Append lines, each with the event it shows (one line each: newlines are flattened)."""
        before = len(self.lines)
        self.refs.extend(ref for ref, _ in entries)
        self.write_lines([safe_text(line, one_line=True) for _, line in entries])  # no terminal controls
        dropped = before + len(entries) - len(self.lines)
        if self.cursor is not None and dropped:
            self.cursor = max(0, self.cursor - dropped)  # the oldest lines made way: keep the same line
        self.refresh()  # Textual 8.2.8: a full Log(max_lines) stops repainting without this

    def clear_entries(self) -> None:
        self.clear()
        self.refs.clear()
        self.cursor = None

    def _update_size(self, updates: int, lines: list[str]) -> None:  # type: ignore[override]  # a no-op: any signature
        """No sideways scrolling: the widest line does not matter (Log measures it on a thread)."""

    def render_lines(self, crop: Region) -> list[Strip]:
        # the widget's style once a frame: computing it walks every ancestor's styles, and it was
        # a sixth of the monitor's drawing while sessions stream when done for each line
        self._frame_style = self.rich_style
        try:
            return super().render_lines(crop)
        finally:
            self._frame_style = None

    def _render_line(self, y: int, scroll_x: int, width: int) -> Strip:
        rich_style = self._frame_style or self.rich_style
        if y >= len(self.lines):
            return Strip.blank(width, rich_style)
        strip = self._render_line_strip(y, rich_style).crop_extend(scroll_x, scroll_x + width, rich_style)
        line = self.lines[y]
        shown = width - (self.styles.scrollbar_size_vertical if self.show_vertical_scrollbar else 0)
        if len(line) > shown > 1 and cell_len(line) > shown:  # cut at the edge (not under the scrollbar): say so
            keep = shown - 1 if cell_len(line) != len(line) else figure_safe_cut(line, shown - 1)  # never in a figure
            strip = Strip.join([strip.crop(0, keep), Strip([Segment(ELLIPSIS, rich_style)]),
                                Strip.blank(width - keep - 1, rich_style)])
        if y == self.cursor and self.has_focus:
            strip = strip.apply_style(Style(reverse=True))
        return strip.apply_offsets(scroll_x, y)

    def _render_line_strip(self, y: int, rich_style: Style) -> Strip:
        """The whole line, in its mark's colour (errors, warnings, scores), kept by its text: new
        lines scroll the pane, and each frame would otherwise render every visible line again
        (Textual 8.2.8's Log keeps its own cache only while text is selected, by line number)."""
        if self.text_selection is not None or y >= len(self.lines):
            return self._tone(y, super()._render_line_strip(y, rich_style))
        key = (self.lines[y], rich_style)
        strip = self._strips.get(key)
        if strip is None:
            if len(self._strips) >= STRIP_CACHE:
                self._strips.clear()
            strip = self._strips[key] = self._tone(y, super()._render_line_strip(y, rich_style))
        return strip

    def _tone(self, y: int, strip: Strip) -> Strip:
        tone = self._tones.get(self.lines[y][MARK_AT:MARK_AT + 1]) if y < len(self.lines) else None
        if tone is None:
            return strip
        strip = strip.apply_style(tone)
        if y in self._render_line_cache:
            self._render_line_cache[y] = strip
        return strip

    def on_mount(self) -> None:
        theme = self.app.get_css_variables()
        self._tones = {mark: Style(color=theme.get(name)) for mark, name in MARK_TONES.items()}

    _tones: dict[str, Style] = {}

    # ------------------------------------------------------------------ follow and cursor
    def _set_follow(self, on: bool) -> None:
        if self.auto_scroll != on:
            self.auto_scroll = on
            self.post_message(self.FollowChanged(on))

    def on_mouse_scroll_up(self) -> None:
        self._set_follow(False)

    def follow(self) -> None:
        self.cursor = None
        self._set_follow(True)
        self.scroll_end(animate=False)
        self.refresh()

    def _move_to(self, index: int) -> None:
        if not self.lines:
            return
        self._set_follow(False)
        self.cursor = min(len(self.lines) - 1, max(0, index))
        top, height = self.scroll_offset.y, self.scrollable_content_region.height
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False)
        self.refresh()

    def action_cursor(self, step: int) -> None:
        start = len(self.lines) if self.cursor is None else self.cursor
        self._move_to(start + step)

    def action_cursor_page(self, pages: int) -> None:
        start = len(self.lines) - 1 if self.cursor is None else self.cursor
        self._move_to(start + pages * max(1, self.scrollable_content_region.height - 1))

    def action_cursor_to(self, index: int) -> None:
        self._move_to(index)

    def action_follow(self) -> None:
        self.follow()

    def action_open(self) -> None:
        if not self.lines:
            return
        index = len(self.lines) - 1 if self.cursor is None else self.cursor
        self.post_message(self.Open(self.refs[index] if index < len(self.refs) else None, self.lines[index]))

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()


class TranscriptPane(Vertical):
    """The selected session's transcript: a filter (all, text, tool calls, errors), full-text search, follow."""

    def compose(self) -> ComposeResult:
        yield Static("Transcript", classes="pane-title", id="transcript-title")
        yield TextBox(placeholder="search the transcript: words, Enter; Esc clears", id="search", give_back="#sessions")
        yield TranscriptLog(id="transcript-log")

    def on_mount(self) -> None:
        self.mode = "all"
        self.query_text = ""
        self.words: tuple[str, ...] = ()
        self.sid: str | None = None
        self.placeholder = False  # the log shows "(no transcript yet)" rather than lines
        self.query_one("#search", Input).display = False
        self._title()

    @property
    def log_widget(self) -> TranscriptLog:
        return self.query_one(TranscriptLog)

    def _title(self) -> None:
        log = self.log_widget
        parts = [f"Transcript · {self.mode}"]
        if self.words:
            parts.append(f"“{self.query_text}”")
        parts.append("following" if log.auto_scroll else "scrolled back: f follows")
        title = " · ".join(parts)
        if title != getattr(self, "_shown_title", None):  # one line (.pane-title): no relayout of the screen
            self._shown_title = title
            self.query_one("#transcript-title", Static).update(title, layout=False)

    def load(self, sid: str, store: Store) -> None:
        self.show(sid, self.fetch(store, sid, self.mode, self.query_text))

    @staticmethod
    def fetch(store: Store, sid: str, mode: str, query_text: str) -> tuple[list[tuple[Ref, str]], list[str], str]:
        """The pane's lines (each with its event), corrupt-line notes and the session's scored split
        (its end's official score names it) (SQLite only: safe on a worker)."""
        entries: list[tuple[Ref, str]] = [((sid, seq), line)
                                          for seq, line in pane_entries(store, sid, mode, query_text, LOAD_LINES)]
        errors = [] if mode not in ("all", "errors") or search_words(query_text) else [
            f"⚠ {e['path']}:{e['line_no']}: corrupt event line skipped ({e['error']})" for e in store.ingest_errors(sid)]
        return entries, errors, scored_split((store.session(sid) or {}).get("task"))

    split: str | None = None  # the shown session's scored split

    def show(self, sid: str, fetched: tuple[list[tuple[Ref, str]], list[str], str]) -> None:
        self.sid = sid
        entries, errors, self.split = fetched
        log = self.log_widget
        log.clear_entries()
        notes = [(None, e) for e in errors]
        if entries or notes:
            log.write_entries(notes + entries)
            self.placeholder = False
        else:
            empty = "(no transcript yet)" if self.mode == "all" and not self.words else "(nothing matches the filter)"
            log.write_entries([(None, empty)])
            self.placeholder = True
        log.follow()
        self._title()

    def add_events(self, events: list[Event]) -> None:
        entries: list[tuple[Ref, str]] = [((e.session_id, e.seq), line) for e in events
                   if event_matches(e, self.mode, self.words) and (line := event_line(e, self.split))]
        if entries:
            log = self.log_widget
            if self.placeholder:  # the first real lines replace the "(no transcript yet)" note
                log.clear_entries()
                self.placeholder = False
            log.write_entries(entries)

    def cycle_filter(self, store: Store) -> None:
        self.mode = FILTERS[(FILTERS.index(self.mode) + 1) % len(FILTERS)]
        if self.sid:
            self.load(self.sid, store)

    def open_search(self) -> None:
        box = self.query_one("#search", Input)
        box.value = ""  # a new search (Esc clears the last one)
        box.display = True
        self.screen.set_focus(box)  # at once: the keys typed right behind the / go into the box

    def set_search(self, text: str, store: Store) -> None:
        self.query_text = text.strip()
        self.words = search_words(self.query_text)
        box = self.query_one("#search", Input)
        if not self.words:
            box.value = ""
            box.display = False
        if self.sid:
            self.load(self.sid, store)

    def follow(self) -> None:
        self.log_widget.follow()

    def on_transcript_log_follow_changed(self, _: TranscriptLog.FollowChanged) -> None:
        self._title()
