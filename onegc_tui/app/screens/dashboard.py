"""The dashboard: every session at a glance, and four panes plus a score plot for the selected one.

The app (app.py) reads the store and the live events and hands them here: ``show_sessions`` the
rows changed since its last look, ``take`` each batch of new events. The sessions table is
updated by key, never cleared, and re-sorted only when the order changes, keeping the cursor on
the selected session. A selected session's header and budget show at once, its panes when a
worker has read them; its live events are held meanwhile.

The dashboard owns its keys and their actions (``BINDINGS``, in the footer's order), as a
toolong screen does: the app binds only the keys of every screen (help, history, new session,
quit), which the list below names in their footer places (``app.`` actions, "Everywhere" in help).
"""

from __future__ import annotations

import time
from pathlib import Path

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Vertical
from textual.message import Message
from textual.widgets import DataTable, Input, Static

from onegc_tui.app.gcpace import settle
from onegc_tui.app.host import host, refused, store_of
from onegc_tui.app.layout import SteadyScreen
from onegc_tui.app.screens.confirm import ConfirmScreen
from onegc_tui.app.widgets.footer import KeyFooter
from onegc_tui.app.widgets.header import MonitorHeader
from onegc_tui.app.widgets.panes import BudgetPane, CheckpointsPane, GpuPane
from onegc_tui.app.widgets.sessions import SessionsTable
from onegc_tui.app.widgets.textbox import TextBox
from onegc_tui.app.widgets.transcript import TranscriptLog, TranscriptPane
from onegc_tui.store import Store
from onegc_tui.store import queries as store_queries
from onegc_tui.views.format import count
from onegc_tui.views.sessions_view import FILTER_HELP, sort_arrow, sort_key
from runner.wire.control import Action, request
from runner.wire.events import Event, parse_event
from runner.wire.paths import SessionPaths

FOCUS_WAIT_S = 10.0  # a session started with the monitor appears within this; select nothing else before
MAX_REPLAY = 4  # sessions side by side in the replay screen
FOLLOW_MAX = 2_000  # events of the selected session drawn per beat at most (the rest at the next)
BOX_ACTIONS = {"filter_sessions", "search"}  # priority keys that open a text box


class DashboardScreen(SteadyScreen):
    """The monitor's first screen (``MonitorApp.get_default_screen``), laid out once for its first
    frame (``SteadyScreen``)."""

    LIVE_FILTER_MAX = 2_000  # up to this many sessions the table follows each key typed; beyond, Enter applies
    # in the footer's order; a narrow footer drops keys from the end (? and q always stay). The app's
    # keys (app.*) are bound on the app for every screen; named here, they keep their footer places
    BINDINGS = [
        Binding("question_mark", "app.help", "Help"),
        Binding("p", "toggle_pause", "Pause/resume"),
        Binding("a", "abort", "Abort"),
        # priority: the screen opens the box before the next key is handed on, so keys typed fast (or
        # pasted) behind \\ or / go into the box, not to the table ("a" would ask to abort)
        Binding("backslash", "filter_sessions", "Filter sessions", priority=True),
        Binding("slash", "search", "Search transcript", priority=True),
        Binding("d", "detail", "Detail"),
        Binding("h", "app.history", "History"),
        Binding("t", "filter", "Transcript kinds"),
        Binding("f", "follow", "Follow"),
        Binding("s", "sort", "Sort"),
        Binding("S", "reverse", "Reverse sort", show=False),
        Binding("space", "mark", "Mark"),
        Binding("r", "replay", "Replay"),
        Binding("n", "app.new_session", "New session"),
        Binding("escape", "close_notes", "Close boxes and notifications", show=False),
        Binding("q", "app.quit", "Quit"),
    ]

    def __init__(self, focus: str | None = None, id: str | None = None) -> None:
        super().__init__(id=id)
        self.focus_id = focus
        # the table highlights its first row by itself: go on to the session asked for once it appears
        self._focus_pending = focus is not None
        self.selected: str | None = None
        self.loaded_seq: int | None = 0  # None while the selected session's panes are being read
        self._followed: int | None = None  # the store's data_version when follow() last read all
        self._summary = ""
        self._table: SessionsTable | None = None
        self._mounted_at = 0.0

    _auto_pick = True  # the selection was made for the user, not by them

    # ------------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield MonitorHeader(show_clock=host(self).show_clock)
        with Vertical(id="top"):
            yield Static("", id="summary")
            yield TextBox(placeholder=f"filter sessions: {FILTER_HELP} · Enter keeps it, Esc clears it",
                          id="session-filter", give_back="#sessions")
            yield SessionsTable(id="sessions", now=host(self).now)
        with Grid(id="panes"):
            yield TranscriptPane(id="transcript")
            with Vertical(id="side"):
                yield BudgetPane(id="budget")
                yield GpuPane(id="gpu")
            yield CheckpointsPane(id="checkpoints")
        yield KeyFooter()

    def on_mount(self) -> None:
        self._table = self.query_one(SessionsTable)  # held: a query fails once the app starts taking its widgets down
        self.query_one("#session-filter").display = False  # opened by \\
        self._mounted_at = time.monotonic()
        # the first table, in the first frame: the app opened its store and started its ingest on load
        host(self).refresh_sessions()
        self.call_after_refresh(settle)

    @property
    def widgets_up(self) -> bool:
        """Mounted, and not being taken down (as the app closes). Textual's shutdown clears the
        app's ``is_running`` first, before it removes any widget: a beat that fired meanwhile
        found the table still attached and the transcript's log gone (a NoMatches out of the
        app's timer, seen once in a loaded test run)."""
        return self._table is not None and self._table.is_attached and self.app.is_running

    @property
    def table(self) -> SessionsTable:
        if self._table is None:
            raise RuntimeError("the dashboard is not mounted yet")
        return self._table

    @property
    def rows(self) -> dict[str, dict]:
        """Every session's summary row (the table's, filtered or not)."""
        return self.table.summaries

    @property
    def marked(self) -> list[str]:
        return self.table.marked

    def tick(self) -> None:
        """The panes' once-a-second work (in the app's tick, in its frame)."""
        self.query_one(BudgetPane).tick()
        self.query_one(GpuPane).tick()

    # ------------------------------------------------------------------ the sessions table
    def show_sessions(self, changed: dict[str, dict], moving: list[str], caught_up: bool) -> None:
        """Bring the sessions table up to date: the rows ``changed`` since the app last looked, and
        the countdowns of the running sessions (``moving``); then the summary line and the
        selection. ``caught_up``: the ingester had caught up with the session folders when the
        app read the rows. Only what moved is redrawn (over 10 000 sessions, every row each
        second was ~170 ms of the drawing thread)."""
        if not changed and not moving and self._summary:
            return
        table = self.table
        now = host(self).now()
        with self.app.batch_update():
            new = {sid for sid in changed if sid not in table.summaries}  # a set: 10 000 at start
            # a longer id may widen the session column, a sealed session the Official column
            relaid = bool(new) and table.relayout(self.app.size.width, {sid: changed[sid] for sid in new})
            # most changes are a GPU sample or a heartbeat: the order and the summary line stay, and
            # re-sorting (and counting) every row each second was ~1 ms here at 8 sessions, more at 10 000
            reorder, recount = bool(new) or relaid, bool(new)
            by = table.sort_by
            for sid, row in changed.items():
                old = table.summaries.get(sid)
                if old is not None:
                    reorder = reorder or sort_key(old, by, now) != sort_key(row, by, now)
                    recount = recount or old.get("state") != row.get("state")
                reorder = table.put(sid, row, now) or reorder  # a row the filter now keeps or drops
            for sid in moving:
                table.tick_left(sid, now)
            if reorder or (moving and by == "left"):
                table.resort()
        if recount or not self._summary:
            self._show_summary()
        rows = self.rows
        if self.selected is None and table.order:
            waiting = self.focus_id and self.focus_id not in rows and time.monotonic() - self._mounted_at < FOCUS_WAIT_S
            if not waiting:
                # on attach: the session asked for, else the top row (the most recent running one)
                target = self.focus_id if self.focus_id in table.order else table.order[0]
                self.select(target)
                table.go_to(target)
        elif self.focus_id in table.order and self.focus_id != self.selected and self._focus_pending:
            self._focus_pending = False  # the session asked for (or started from the form): go to it
            table.go_to(self.focus_id)
        elif self.selected in changed:
            self.query_one(BudgetPane).update_row(rows[self.selected])
        if self._auto_pick and caught_up and table.order:
            # the store may lag the session folders when no monitor ran: once the ingester has
            # caught up, the top row (the most recent running session) is the one to show, unless
            # the user has moved since
            self._auto_pick = False
            top = table.order[0]
            if top != self.selected and not self.focus_id:
                self.select(top)
                table.go_to(top)

    def ask_for(self, sid: str) -> None:
        """Go to ``sid`` once it appears in the table (a session started from the form)."""
        self.focus_id, self._focus_pending = sid, True

    def _show_summary(self) -> None:
        rows, table = self.rows, self.table
        n_paused = sum(1 for r in rows.values() if r["state"] == "paused")
        order = f"sorted by {table.sort_by} {sort_arrow(table.sort_by, table.sort_reverse)}"
        marks = f" · {len(self.marked)} marked for replay" if self.marked else ""
        shown = f" · filter “{table.filter_text}”: {len(table.order)} shown" if table.row_filter else ""
        runs = host(self).home / "runs"
        none = (f"No sessions under {runs} yet: they show here as they start (a read-only view)." if host(self).read_only
                else f"No sessions under {runs} yet: press n, or run 'onegc demo' or 'onegc run'.")
        summary = (f"{count(len(rows), 'session')} · {len(host(self).feed.running)} running · {n_paused} paused{shown} · "
                   f"{order}{marks}" if rows else none)
        if summary != self._summary:  # an update relayouts the screen: only when the text changes
            self._summary = summary
            self.query_one("#summary", Static).update(summary, layout=False)

    # ------------------------------------------------------------------ the selected session
    def follow(self, store: Store) -> None:
        """Draw what the store gained for the selected session since its panes were read, whoever
        ingested it: this monitor, another one, a browser tab's or ``onegc sessions`` (issue 29:
        panes fed by this process's own ingest showed complementary halves of the stream). Asked
        every beat; a look costs a ``data_version`` read unless something was committed."""
        sid, after = self.selected, self.loaded_seq
        if sid is None or after is None:
            return  # nothing selected, or its panes are being read (up to a seq, then this goes on)
        version = store_queries.data_version(store)
        if version == self._followed:
            return
        rows = store_queries.events_after(store, sid, after, FOLLOW_MAX)
        if len(rows) < FOLLOW_MAX:
            self._followed = version  # all read; more, and the next beat reads on
        events = []
        for _seq, data in rows:
            try:
                events.append(parse_event(data))
            except ValueError:  # stored by an older onegc: the raw-file viewer still shows it
                continue
        if rows:
            self.loaded_seq = rows[-1][0]
            self._draw_selected(events)

    @on(DataTable.RowHighlighted, "#sessions")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        table = event.data_table
        if not event.row_key or not table.is_valid_row_index(table.cursor_row):
            return
        if table.coordinate_to_cell_key(table.cursor_coordinate).row_key != event.row_key:
            return  # posted before a re-sort moved the rows: the cursor is on another session now
        if event.row_key.value is not None and event.row_key.value != self.selected:
            self._auto_pick = False  # the user moved: their choice stands
            self.select(event.row_key.value)

    @on(DataTable.RowSelected, "#sessions")
    def _chosen(self, event: DataTable.RowSelected) -> None:
        self.action_detail()

    def _draw_selected(self, events: list[Event]) -> None:
        if events:
            self.query_one(TranscriptPane).add_events(events)
            self.query_one(BudgetPane).apply(events)
            self.query_one(GpuPane).apply(events)
            self.query_one(CheckpointsPane).apply(events)

    class Loaded(Message):
        """A selected session's panes, read from SQLite on a worker."""

        def __init__(self, sid: str, row: dict, seq: int, transcript, gpu, checkpoints):
            super().__init__()
            self.sid, self.row, self.seq = sid, row, seq
            self.transcript, self.gpu, self.checkpoints = transcript, gpu, checkpoints

    def select(self, sid: str) -> None:
        """Show one session: the header and budget at once, the panes when the worker has read them."""
        row = self.rows.get(sid)
        if row is None:
            return
        self.selected = sid
        host(self).sub_title = sid
        self.query_one(BudgetPane).load(row)
        self.loaded_seq = None  # its panes are read first; then follow() draws what comes after
        pane = self.query_one(TranscriptPane)
        self._fetch_selected(sid, row, pane.mode, pane.query_text)

    @work(thread=True, exit_on_error=False, exclusive=True, group="select")
    def _fetch_selected(self, sid: str, row: dict, mode: str, query_text: str) -> None:
        store = Store.open(host(self).home)
        try:
            with store_queries.snapshot(store):  # the panes and the sequence number agree
                seq = store.max_seq(sid)
                transcript = TranscriptPane.fetch(store, sid, mode, query_text)
                gpu = GpuPane.fetch(store, sid)
                checkpoints = CheckpointsPane.fetch(store, sid)
        finally:
            store.close()
        self.post_message(self.Loaded(sid, row, seq, transcript, gpu, checkpoints))

    def on_dashboard_screen_loaded(self, msg: Loaded) -> None:
        # after the next frame: the header and budget of the new selection show first, the
        # heavier panes a moment later (a key press must not wait for 500 transcript lines)
        self.call_after_refresh(self._show_loaded, msg)

    def _show_loaded(self, msg: Loaded) -> None:
        if msg.sid != self.selected:
            return  # the user moved on: a newer fetch is on its way
        with self.app.batch_update():
            self.query_one(TranscriptPane).show(msg.sid, msg.transcript)
            self.query_one(GpuPane).show(msg.gpu)
            self.query_one(CheckpointsPane).show(msg.row, msg.checkpoints)
        self.loaded_seq = msg.seq
        self._followed = None  # read on from msg.seq at the next beat, whatever was committed
        self.follow(store_of(self))

    # ------------------------------------------------------------------ actions (the keys above)
    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if self.app.screen is not self:  # under the help or the form: their keys, not these (the footer hides these)
            return False
        return not (action in BOX_ACTIONS and isinstance(self.focused, Input))  # in a box \\ and / are characters

    def action_close_notes(self) -> None:
        """Esc: close the notifications (in a text box, TextBox's Esc does it too)."""
        self.app.clear_notifications()

    def _selected_paths(self) -> SessionPaths | None:
        if not self.selected or self.selected not in self.rows:
            self.notify("select a session first", severity="warning")
            return None
        return SessionPaths(Path(self.rows[self.selected]["folder"]))

    def action_toggle_pause(self) -> None:
        paths, sid = self._selected_paths(), self.selected
        if paths is None or sid is None:
            return
        state = self.rows[sid]["state"]
        if state not in ("running", "paused"):
            self.notify(f"{sid} is {state}: nothing to pause", severity="warning")
            return
        action: Action = "resume" if state == "paused" else "pause"
        if refused(self, f"{action} {sid}"):
            return
        request(paths, action, source="monitor")
        self.notify(f"{action} requested for {sid}")

    def action_abort(self) -> None:
        paths, sid = self._selected_paths(), self.selected
        if paths is None or sid is None:
            return
        if self.rows[sid]["state"] in ("ended", "failed", "queued"):
            self.notify(f"{sid} is not running", severity="warning")
            return
        if refused(self, f"abort {sid}"):
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                request(paths, "abort", source="monitor")
                self.notify(f"abort requested for {sid}", severity="warning")

        self.app.push_screen(ConfirmScreen(f"Abort session {sid}?\nIts whole process tree is stopped; the checkpoints "
                                           "saved so far are still scored."), confirmed)

    def action_follow(self) -> None:
        self.query_one(TranscriptPane).follow()

    def action_filter(self) -> None:
        self.query_one(TranscriptPane).cycle_filter(store_of(self))

    def action_search(self) -> None:
        self.query_one(TranscriptPane).open_search()

    def on_transcript_log_open(self, msg: TranscriptLog.Open) -> None:
        from onegc_tui.app.screens.viewer import LineScreen

        self.app.push_screen(LineScreen(msg.ref, msg.line))

    @on(Input.Submitted, "#search")
    def _search(self, event: Input.Submitted) -> None:
        self.query_one(TranscriptPane).set_search(event.value, store_of(self))  # the box gave the keyboard back

    # ------------------------------------------------------------------ the sessions filter
    def action_filter_sessions(self) -> None:
        box = self.query_one("#session-filter", Input)
        box.display = True
        # at once, not after this event: keys typed (or pasted) right behind the \\ go into the box
        self.set_focus(box)

    @on(Input.Changed, "#session-filter")
    def _filter_typed(self, event: Input.Changed) -> None:
        if len(self.rows) <= self.LIVE_FILTER_MAX:
            self._apply_filter(event.value)

    @on(Input.Submitted, "#session-filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        self._apply_filter(event.value)
        if not event.value.strip():
            event.input.display = False  # (the box gave the keyboard back to the table itself)

    def _apply_filter(self, query: str) -> None:
        table = self.table
        table.set_filter(query)
        self._show_summary()
        if self.selected not in table.order and table.order:
            self.select(table.order[0])  # the selection was filtered out: the first that matches
            table.go_to(table.order[0])
        elif self.selected in table.order:
            table.go_to(self.selected)

    @on(TextBox.Cleared)
    def _box_cleared(self, msg: TextBox.Cleared) -> None:
        """Esc in a text box (the box cleared itself and gave the keyboard back to the table)."""
        box = msg.box
        if box.id == "search":
            self.query_one(TranscriptPane).set_search("", store_of(self))
        elif box.id == "session-filter":
            self._apply_filter("")
            box.display = False

    # ------------------------------------------------------------------ sort, marks, detail, replay
    def action_sort(self) -> None:
        """The next of the columns on screen, in its natural direction."""
        table = self.table
        sorts = [c.sort for c, _ in table.fitted if c.sort]
        by = sorts[(sorts.index(table.sort_by) + 1) % len(sorts)] if table.sort_by in sorts else sorts[0]
        table.set_sort(by, False)
        self._show_summary()

    def action_reverse(self) -> None:
        self.table.set_sort(self.table.sort_by, not self.table.sort_reverse)
        self._show_summary()

    def on_sessions_table_sort_changed(self, _: SessionsTable.SortChanged) -> None:
        self._show_summary()

    def action_mark(self) -> None:
        sid = self.selected
        if not sid or sid not in self.rows:
            return
        if sid in self.marked:
            self.marked.remove(sid)
        elif len(self.marked) >= MAX_REPLAY:
            self.notify(f"at most {MAX_REPLAY} sessions side by side: unmark one first", severity="warning")
            return
        else:
            self.marked.append(sid)
        self.table.set_mark(sid)
        self._show_summary()

    def action_detail(self) -> None:
        from onegc_tui.app.screens.detail import DetailScreen

        if self.selected:
            self.app.push_screen(DetailScreen(self.selected))

    def action_replay(self) -> None:
        from onegc_tui.app.screens.detail import ReplayScreen

        if len(self.marked) < 2:
            self.notify("mark 2 to 4 sessions with space, then press r to replay them side by side", severity="warning")
            return
        self.app.push_screen(ReplayScreen(list(self.marked)))
