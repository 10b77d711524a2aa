"""The live monitor: every session at a glance, and four panes plus a score plot for the selected one.

Threads only fetch: the ingest thread (watchdog + SQLite writes) queues new events, and the
app drains the queue into the widgets on a clock (``FLUSH_HZ``), with an immediate wake for
checkpoint and control events. The sessions table is updated by key, never cleared, and
re-sorted only when the order changes, keeping the cursor on the selected session.

Screens (keys): the dashboard; ``h`` history (agent × task matrix, paper beside it); ``d``/Enter
session detail (replay on one budget-time axis); ``r`` side-by-side replay of marked sessions
(space marks); ``n`` new session.
"""

from __future__ import annotations

import sys
import threading
import time
import weakref
from collections import deque
from pathlib import Path

from textual import events as tx_events
from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Grid, Vertical
from textual.message import Message
from textual.reactive import Reactive
from textual.screen import Screen
from textual.widgets import DataTable, Input, Static

from onegc_tui import monitor_data as queries
from onegc_tui.alerts import Alert, Alerts, Coalescer, Note
from onegc_tui.app.gcpace import FullCollections, settle
from onegc_tui.app.host import store_of
from onegc_tui.app.screens.confirm import ConfirmScreen
from onegc_tui.app.screens.help import HelpScreen, key_sections, pane_name
from onegc_tui.app.screens.history import ALL, HistoryScreen, HistoryViews
from onegc_tui.app.screens.scrolling import SteadyScreen
from onegc_tui.app.widgets.footer import KeyFooter
from onegc_tui.app.widgets.header import CLOCK_FORMAT, BeatClock, MonitorHeader
from onegc_tui.app.widgets.panes import BudgetPane, CheckpointsPane, GpuPane
from onegc_tui.app.widgets.sessions import SessionsTable
from onegc_tui.app.widgets.transcript import TranscriptLog, TranscriptPane
from onegc_tui.format import count
from onegc_tui.sessions_view import FILTER_HELP, sort_arrow, sort_key
from onegc_tui.store import Store
from onegc_tui.store import queries as store_queries
from onegc_tui.store.live import LiveIngest
from runner.wire.control import Action, request
from runner.wire.events import Event
from runner.wire.paths import SessionPaths
from runner.wire.textsafe import safe_text
from tasks import direction_of

GIL_SWITCH_S = 0.001
FLUSH_HZ = 5  # drain new events into the panes this often: CPU follows frames, not lines (../shared/PERFORMANCE.md);
# each drain redraws the transcript pane, and at 10 Hz that was a third of the streaming monitor's CPU
MAX_PENDING = 20_000  # events buffered between flushes before the oldest are dropped from view
FOCUS_WAIT_S = 10.0  # a session started with the monitor appears within this; select nothing else before
URGENT = {"checkpoint_scored", "control", "session_ended", "budget", "warning"}
MAX_REPLAY = 4  # sessions side by side in the replay screen
BOX_ACTIONS = {"filter_sessions", "search"}  # priority keys that open a text box
NOTE_TIMEOUT_S = {"information": 5, "warning": 8, "error": 10}
DASHBOARD_ACTIONS = {"toggle_pause", "abort", "follow", "filter", "search", "sort", "reverse", "mark", "detail",
                     "replay", "filter_sessions", "dismiss"}


class MonitorApp(App):
    CSS_PATH = "app.tcss"
    TITLE = "onegc monitor"
    # App's own sub_title repaints the whole screen when it changes (App.refresh), and it changes on
    # every key that moves the selection: the header watches it and repaints itself, which is all
    # that shows it (a full repaint was a quarter of the drawing thread's time while keys moved)
    sub_title: Reactive[str] = Reactive("", compute=False, repaint=False)
    AUTO_FOCUS = "#sessions"  # the filter box comes first in the layout, but the table has the keyboard
    # size classes the stylesheet lays the screens out by (80x24 works; 200x50 uses the room)
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-medium"), (150, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (32, "-tall")]
    # in the footer's order; a narrow footer drops keys from the end (? and q always stay)
    BINDINGS = [
        Binding("question_mark", "help", "Help"),
        Binding("p", "toggle_pause", "Pause/resume"),
        Binding("a", "abort", "Abort"),
        # priority: the app opens the box before it hands on the next key, so keys typed fast (or
        # pasted) behind \\ or / go into the box, not to the table ("a" would ask to abort)
        Binding("backslash", "filter_sessions", "Filter sessions", priority=True),
        Binding("slash", "search", "Search transcript", priority=True),
        Binding("d", "detail", "Detail"),
        Binding("h", "history", "History"),
        Binding("t", "filter", "Transcript kinds"),
        Binding("f", "follow", "Follow"),
        Binding("s", "sort", "Sort"),
        Binding("S", "reverse", "Reverse sort", show=False),
        Binding("space", "mark", "Mark"),
        Binding("r", "replay", "Replay"),
        Binding("n", "new_session", "New session"),
        Binding("escape", "dismiss", "Close boxes and notifications", show=False),
        Binding("q", "quit", "Quit"),
    ]

    class Wake(Message):
        """Something urgent arrived: flush now rather than at the next tick."""

    def __init__(self, home: Path, focus: str | None = None, live: bool = True, show_clock: bool = True,
                 now=None):
        super().__init__()
        self.show_clock = show_clock
        self.home = home
        self.focus_id = focus
        # the table highlights its first row by itself: go on to the session asked for once it appears
        self._focus_pending = focus is not None
        self.live = live
        self.now = now or time.time  # injectable: snapshots freeze the countdowns
        self.selected: str | None = None
        self.loaded_seq: int | None = 0  # None while the selected session's panes are being read
        self._held: list[Event] = []
        self._summary = ""
        self._countdowns: set[str] = set()  # sessions whose countdown moves
        self._unchecked: set[str] = set()  # rows changed since the alerts last looked
        self.alerts = Alerts(direction=lambda sid: direction_of(self.rows.get(sid, {}).get("task")))
        self.coalescer = Coalescer()
        self.history = HistoryViews(home)  # the history screen's data; dropped when sessions start or end
        self._pending: deque[tuple[str, Event]] = deque(maxlen=MAX_PENDING)
        self._pending_lock = threading.Lock()
        self._errors: deque[str] = deque(maxlen=100)
        self._ingest: LiveIngest | None = None
        self._data_version = -1
        self.store: Store | None = None

    # ------------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield MonitorHeader(show_clock=self.show_clock)
        with Vertical(id="top"):
            yield Static("", id="summary")
            yield Input(placeholder=f"filter sessions: {FILTER_HELP} · Enter keeps it, Esc clears it",
                        id="session-filter")
            yield SessionsTable(id="sessions", now=self.now)
        with Grid(id="panes"):
            yield TranscriptPane(id="transcript")
            with Vertical(id="side"):
                yield BudgetPane(id="budget")
                yield GpuPane(id="gpu")
            yield CheckpointsPane(id="checkpoints")
        yield KeyFooter()

    def on_mount(self) -> None:
        self._gc = FullCollections(time.monotonic())
        self._clocks = weakref.WeakKeyDictionary()
        self._dashboard = self.query_one(SessionsTable)  # held: a query fails once the app starts taking its widgets down
        self.query_one("#session-filter").display = False  # opened by \\
        self.store = Store.open(self.home)
        self._mounted_at = time.monotonic()
        # the ingest thread parses while we draw: hand the GIL over sooner so a key press is not
        # kept waiting behind a batch (Python's default switch interval is 5 ms)
        sys.setswitchinterval(GIL_SWITCH_S)
        if self.live:
            self._ingest = LiveIngest(self.home, on_events=self._queue_events, on_error=self._queue_error)
            self._ingest.start()
        # on a worker beside the first table (over 10 000 sessions, seconds of drawing): the history
        # matrix is ready before anyone can press h (after the first frame, h pressed the moment
        # the dashboard showed waited for it)
        self._prefetch_history()
        self.refresh_sessions()
        self._gc.start()
        self.call_after_refresh(settle)
        self.set_interval(1 / FLUSH_HZ, self._beat)

    def on_unmount(self) -> None:
        self._gc.stop()
        if self._ingest:
            self._ingest.stop()
        if self.store:
            self.store.close()

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        """Dashboard keys act on the dashboard only (hidden from the footer elsewhere)."""
        if action in DASHBOARD_ACTIONS and len(self.screen_stack) > 1:
            return False
        return not (action in BOX_ACTIONS and isinstance(self.focused, Input))  # in a box \\ and / are characters

    # ------------------------------------------------------------------ threads -> app
    def _queue_events(self, sid: str, events: list[Event]) -> None:  # ingest thread
        with self._pending_lock:
            self._pending.extend((sid, e) for e in events)
        if any(e.type in URGENT for e in events):
            self.post_message(self.Wake())

    def _queue_error(self, message: str) -> None:  # ingest thread
        self._errors.append(message)

    def on_monitor_app_wake(self, _: Wake) -> None:
        self.flush()

    # ------------------------------------------------------------------ drawing
    def flush(self) -> None:
        with self._pending_lock:
            batch = list(self._pending)
            self._pending.clear()
        errors = []
        while self._errors:
            errors.append(Alert("", self._errors.popleft(), "warning", "ingest_error"))
        self._notify(errors)
        if not batch:
            return
        self._gc.fed(time.monotonic(), len(batch))
        mine = [e for sid, e in batch if sid == self.selected]
        if self.loaded_seq is None:
            self._held.extend(mine)  # the panes are being read: apply these after
        elif mine:
            self._draw_selected([e for e in mine if e.seq > self.loaded_seq])
        self._notify([alert for sid, e in batch for alert in self.alerts.feed(sid, e)])
        if any(e.type in ("session_started", "session_ended", "budget", "checkpoint_scored") for _, e in batch):
            self.refresh_sessions()
        if any(e.type in ("session_started", "session_ended") for _, e in batch):
            self.history.invalidate()

    @property
    def table(self) -> SessionsTable:
        return self._dashboard

    @property
    def rows(self) -> dict[str, dict]:
        """Every session's summary row (the table's, filtered or not)."""
        return self._dashboard.summaries

    @property
    def marked(self) -> list[str]:
        return self._dashboard.marked

    def refresh_sessions(self) -> None:
        """Bring the sessions table up to date: the rows changed since the last look, and the
        countdowns of running sessions. Over a store of 10 000 finished sessions this reads and
        redraws only what moved (reading every row each second was ~170 ms of the drawing thread)."""
        if self.store is None:
            return
        caught_up = self._ingest is None or self._ingest.ready.is_set()  # before reading: its rows are in
        version = store_queries.data_version(self.store)
        changed: dict[str, dict] = {}
        if version != self._data_version:
            self._data_version = version
            for row in self.store.sessions_since(self._rev):
                changed[row["session_id"]] = row
                self._rev = max(self._rev, row["rev"])
        moving = [sid for sid in self._countdowns if sid not in changed]  # their countdowns
        if not changed and not moving and self._summary:
            return
        table = self.table
        now = self.now()
        with self.batch_update():
            new = {sid for sid in changed if sid not in table.summaries}  # a set: 10 000 at start
            relaid = bool(new) and table.relayout(self.size.width, new)  # a longer id may widen the session column
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
                self._track(sid, row, first=sid in new)
            self._unchecked.update(changed)
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

    _rev = 0  # the newest sessions-row revision shown
    _auto_pick = True  # the selection was made for the user, not by them
    _focus_pending = False

    def _track(self, sid: str, row: dict, first: bool) -> None:
        if first:
            self._first_sight(sid, row)
        if row["state"] == "running":
            self._countdowns.add(sid)
        else:
            self._countdowns.discard(sid)

    def _show_summary(self) -> None:
        rows, table = self.rows, self.table
        n_paused = sum(1 for r in rows.values() if r["state"] == "paused")
        order = f"sorted by {table.sort_by} {sort_arrow(table.sort_by, table.sort_reverse)}"
        marks = f" · {len(self.marked)} marked for replay" if self.marked else ""
        shown = f" · filter “{table.filter_text}”: {len(table.order)} shown" if table.row_filter else ""
        summary = (f"{count(len(rows), 'session')} · {len(self._countdowns)} running · {n_paused} paused{shown} · "
                   f"{order}{marks}" if rows else
                   f"No sessions under {self.home / 'runs'} yet: press n, or run 'onegc demo' or 'onegc run'.")
        if summary != self._summary:  # an update relayouts the screen: only when the text changes
            self._summary = summary
            self.query_one("#summary", Static).update(summary, layout=False)

    def _first_sight(self, sid: str, row: dict) -> None:
        if row["state"] in ("running", "paused"):
            last, alive = queries.activity(store_of(self), sid)
            self.alerts.seed(sid, last, alive)
        self.alerts.states[sid] = row["state"]

    def get_default_screen(self) -> Screen:
        # the dashboard: laid out once for its first frame, and not again for the terminal's own
        # report of the same size (over 10 000 sessions it came seconds later, and its relayout held
        # the first key ~150 ms)
        return SteadyScreen(id="_default")

    _beats = 0
    _clocks: weakref.WeakKeyDictionary[Screen, tuple[str, list[BeatClock]]]  # the minute shown; a closed screen is let go

    def _beat(self) -> None:
        """The app's one clock: new events at FLUSH_HZ, and every FLUSH_HZ-th beat, in the same
        frame, what changes once a second (the sessions table's changed rows, the countdowns,
        the GPU pane, the clock). Separate 1 Hz timers would each
        cost a frame, and an idle monitor's CPU is mostly frames."""
        if not self._dashboard.is_attached:
            return  # the app is closing: its widgets are being taken down
        self.flush()
        self._beats += 1
        if self._beats % FLUSH_HZ == 0:
            self.tick()

    def tick(self) -> None:
        """The once-a-second work, drawn in one frame."""
        self.refresh_sessions()
        self.query_one(BudgetPane).tick()
        self.query_one(GpuPane).tick()
        screen = self.screen
        minute = time.strftime(CLOCK_FORMAT)
        shown, clocks = self._clocks.get(screen, (None, []))
        if shown != minute:  # each screen's header clock, as the minute turns
            clocks = clocks or list(screen.query(BeatClock))  # found once it is there (a query walks the screen)
            for clock in clocks:
                clock.refresh()
            self._clocks[screen] = (minute, clocks)
        watched = self._unchecked | self._countdowns
        self._unchecked = set()
        self._notify(self.alerts.check({sid: self.rows[sid] for sid in watched}, self.now()))
        for note in self.coalescer.due(time.monotonic(), self.selected):
            self._show_note(note)
        self._gc.tick(time.monotonic())  # a full collection, if one is due and no one is pressing keys

    async def on_event(self, event: tx_events.Event) -> None:
        if isinstance(event, (tx_events.Key, tx_events.MouseDown)):
            self._gc.touched(time.monotonic())
        await super().on_event(event)

    def _notify(self, alerts: list[Alert]) -> None:
        """Alerts become at most one notification per kind every few seconds (view.Coalescer)."""
        if alerts:
            for note in self.coalescer.add(alerts, time.monotonic(), self.selected):
                self._show_note(note)

    def _show_note(self, note: Note) -> None:
        self.notify(safe_text(note.message), severity=note.severity, timeout=NOTE_TIMEOUT_S[note.severity],
                    markup=False)  # an alert can quote an agent (a warning, an error)

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
        self.sub_title = sid
        self.query_one(BudgetPane).load(row)
        self.loaded_seq = None  # live events for it are held until its panes are loaded
        self._held.clear()
        pane = self.query_one(TranscriptPane)
        self._fetch_selected(sid, row, pane.mode, pane.query_text)

    @work(thread=True, exit_on_error=False, exclusive=True, group="select")
    def _fetch_selected(self, sid: str, row: dict, mode: str, query_text: str) -> None:
        store = Store.open(self.home)
        try:
            with store_queries.snapshot(store):  # the panes and the sequence number agree
                seq = store.max_seq(sid)
                transcript = TranscriptPane.fetch(store, sid, mode, query_text)
                gpu = GpuPane.fetch(store, sid)
                checkpoints = CheckpointsPane.fetch(store, sid)
        finally:
            store.close()
        self.post_message(self.Loaded(sid, row, seq, transcript, gpu, checkpoints))

    def on_monitor_app_loaded(self, msg: Loaded) -> None:
        # after the next frame: the header and budget of the new selection show first, the
        # heavier panes a moment later (a key press must not wait for 500 transcript lines)
        self.call_after_refresh(self._show_loaded, msg)

    def _show_loaded(self, msg: Loaded) -> None:
        if msg.sid != self.selected:
            return  # the user moved on: a newer fetch is on its way
        with self.batch_update():
            self.query_one(TranscriptPane).show(msg.sid, msg.transcript)
            self.query_one(GpuPane).show(msg.gpu)
            self.query_one(CheckpointsPane).show(msg.row, msg.checkpoints)
        self.loaded_seq = msg.seq
        held = [e for e in self._held if e.seq > msg.seq]
        self._held.clear()
        if held:
            self._draw_selected(held)

    # ------------------------------------------------------------------ actions
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
        request(paths, action, source="monitor")
        self.notify(f"{action} requested for {sid}")

    def action_abort(self) -> None:
        paths, sid = self._selected_paths(), self.selected
        if paths is None or sid is None:
            return
        if self.rows[sid]["state"] in ("ended", "failed", "queued"):
            self.notify(f"{sid} is not running", severity="warning")
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                request(paths, "abort", source="monitor")
                self.notify(f"abort requested for {sid}", severity="warning")

        self.push_screen(ConfirmScreen(f"Abort session {sid}?\nIts whole process tree is stopped; the checkpoints "
                                       "saved so far are still scored."), confirmed)

    def action_follow(self) -> None:
        self.query_one(TranscriptPane).follow()

    def action_filter(self) -> None:
        self.query_one(TranscriptPane).cycle_filter(store_of(self))

    def action_search(self) -> None:
        self.query_one(TranscriptPane).open_search()

    def on_transcript_log_open(self, msg: TranscriptLog.Open) -> None:
        from onegc_tui.app.screens.viewer import LineScreen

        self.push_screen(LineScreen(msg.ref, msg.line))

    @on(Input.Submitted, "#search")
    def _search(self, event: Input.Submitted) -> None:
        self.query_one(TranscriptPane).set_search(event.value, store_of(self))
        self.table.focus()

    # ------------------------------------------------------------------ the sessions filter
    LIVE_FILTER_MAX = 2_000  # up to this many sessions the table follows each key typed; beyond, Enter applies

    def action_filter_sessions(self) -> None:
        box = self.query_one("#session-filter", Input)
        box.display = True
        # at once, not after this event: keys typed (or pasted) right behind the \\ go into the box
        self.screen.set_focus(box)

    @on(Input.Changed, "#session-filter")
    def _filter_typed(self, event: Input.Changed) -> None:
        if len(self.rows) <= self.LIVE_FILTER_MAX:
            self._apply_filter(event.value)

    @on(Input.Submitted, "#session-filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        self._apply_filter(event.value)
        if not event.value.strip():
            event.input.display = False
        self.table.focus()

    def _apply_filter(self, query: str) -> None:
        table = self.table
        table.set_filter(query)
        self._show_summary()
        if self.selected not in table.order and table.order:
            self.select(table.order[0])  # the selection was filtered out: the first that matches
            table.go_to(table.order[0])
        elif self.selected in table.order:
            table.go_to(self.selected)

    def on_key(self, event) -> None:
        """Esc in a text box: clear it and give the keyboard back to the sessions table."""
        if event.key != "escape" or not isinstance(self.focused, Input):
            return
        box = self.focused
        if box.id == "search":
            self.query_one(TranscriptPane).set_search("", store_of(self))
        elif box.id == "session-filter":
            box.value = ""
            self._apply_filter("")
            box.display = False
        else:
            return
        self.table.focus()
        event.stop()

    def action_dismiss(self) -> None:
        """Esc on the dashboard: close the notifications."""
        self.clear_notifications()

    # ------------------------------------------------------------------ help
    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        self.push_screen(HelpScreen(key_sections(self.screen), pane_name(self.screen.focused)))

    def get_system_commands(self, screen):
        """The palette's "Keys" opens the same help as ``?`` (Textual's panel did not close on Esc)."""
        for command in super().get_system_commands(screen):
            if command.title == "Keys":
                yield SystemCommand("Keys", "Every key for the focused pane, and what the marks mean (?)",
                                    self.action_help)
            else:
                yield command

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
            self.push_screen(DetailScreen(self.selected))

    def action_replay(self) -> None:
        from onegc_tui.app.screens.detail import ReplayScreen

        if len(self.marked) < 2:
            self.notify("mark 2 to 4 sessions with space, then press r to replay them side by side", severity="warning")
            return
        self.push_screen(ReplayScreen(list(self.marked)))

    def _prefetch_history(self) -> None:
        """The default history view, computed ahead of the first ``h`` (kept until sessions change),
        on a thread of its own started at once: a Textual worker starts only after ``on_mount``
        returns, which over 10 000 sessions is after seconds of building the table, so an ``h``
        pressed the moment the dashboard showed waited for the whole computation."""
        def run() -> None:
            try:
                self.history.get(ALL, None)
            except Exception:  # noqa: BLE001 - the screen computes its view again and shows the error
                return
            try:
                self.call_from_thread(settle)
            except RuntimeError:  # the app has closed meanwhile
                pass

        if not self.history.ready(ALL, None):
            threading.Thread(target=run, name="history-prefetch", daemon=True).start()

    def action_history(self) -> None:
        if not isinstance(self.screen, HistoryScreen):
            if not self.is_screen_installed("history"):
                self.install_screen(HistoryScreen(), name="history")  # kept when closed: reopening is instant
            self.push_screen("history")

    def action_new_session(self) -> None:
        from onegc_tui.app.screens.newsession import NewSessionScreen

        def started(ids: list[str] | None) -> None:
            if ids:
                self.focus_id, self._focus_pending = ids[0], True
                self.notify(f"started {', '.join(ids)}")

        if not isinstance(self.screen, NewSessionScreen):
            self.push_screen(NewSessionScreen(self.home), started)


def make_app(home: Path, focus: str | None = None, live: bool = True, show_clock: bool = True,
             now=None) -> MonitorApp:
    """The one factory the CLI and the tests share (tests: ``live=False``, no clock, a fixed ``now``)."""
    return MonitorApp(home, focus=focus, live=live, show_clock=show_clock, now=now)
