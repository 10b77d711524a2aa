"""The dashboard: every session at a glance, and the panes of the selected one.

The sessions table is virtual (widgets/sessions.py: it reads the rows it shows, by page). The
panes are composed from a list, ``PANES``: each is a ``Pane`` (widgets/pane.py) that declares what
it reads of the selected session and how it draws it, and the dashboard drives them alike: on a
selection each reader runs on a worker and the pane shows what it read; each beat that the store
changed, what came after; once a second, a tick. A pane is one file and one line in the list.

The app (app.py) posts this screen messages, and calls none of its methods: ``Beat`` (its clock,
5 Hz: draw what the store gained), ``Second`` (the once-a-second work), ``Sessions`` (the sessions
rows changed since its last look), ``Focus`` (go to a session once it appears). The dashboard
says which session is selected with ``Selected``, which bubbles up to the app (its
notifications put that session first).

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
from textual.widgets import Input, Static

from onegc_tui.app.gcpace import settle
from onegc_tui.app.host import host, refused, store_of
from onegc_tui.app.layout import SteadyScreen
from onegc_tui.app.screens.confirm import ConfirmScreen
from onegc_tui.app.widgets.footer import KeyFooter
from onegc_tui.app.widgets.header import MonitorHeader
from onegc_tui.app.widgets.pane import Pane, Reader
from onegc_tui.app.widgets.panes import BudgetPane, CheckpointsPane, GpuPane
from onegc_tui.app.widgets.sessions import SessionsTable
from onegc_tui.app.widgets.textbox import TextBox
from onegc_tui.app.widgets.transcript import TranscriptLog, TranscriptPane
from onegc_tui.store import Store
from onegc_tui.store import queries as store_queries
from onegc_tui.store.session_pages import state_counts
from onegc_tui.views.format import count
from onegc_tui.views.sessions_view import FILTER_HELP, sort_arrow
from runner.wire.control import Action, request
from runner.wire.paths import SessionPaths

# the panes of the selected session, each in its slot ("main": the wide column; "side": stacked in
# the middle one; "right"): a new pane is one file and one line here (docs/architecture.md)
PANES: list[type[Pane]] = [
    TranscriptPane,
    BudgetPane,
    GpuPane,
    CheckpointsPane,
]

FOCUS_WAIT_S = 10.0  # a session started with the monitor appears within this; select nothing else before
MAX_REPLAY = 4  # sessions side by side in the replay screen
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

    # ------------------------------------------------------------------ what the app posts, and what this says
    class Beat(Message):
        """The app's clock (5 Hz): draw what the store gained for the selected session."""

        bubble = False

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, DashboardScreen.Beat)  # one waiting beat is as good as two

    class Second(Message):
        """The once-a-second work: the panes' tick (a countdown, the GPU figures)."""

        bubble = False

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, DashboardScreen.Second)

    class Sessions(Message):
        """The sessions rows changed since the app's last look (by id), the running sessions whose
        countdown moved, and whether the ingester had caught up with the session folders."""

        bubble = False

        def __init__(self, changed: dict[str, dict], moving: list[str], caught_up: bool) -> None:
            super().__init__()
            self.changed, self.moving, self.caught_up = changed, moving, caught_up

    class Focus(Message):
        """Go to this session once it appears (one started from the form)."""

        bubble = False

        def __init__(self, sid: str) -> None:
            super().__init__()
            self.sid = sid

    class Selected(Message):
        """The session whose panes show (it bubbles up to the app)."""

        def __init__(self, sid: str) -> None:
            super().__init__()
            self.sid = sid

    class Loaded(Message):
        """A selected session's panes, read from SQLite on a worker."""

        bubble = False

        def __init__(self, sid: str, row: dict, seq: int, read: list[tuple[Pane, object]]):
            super().__init__()
            self.sid, self.row, self.seq, self.read = sid, row, seq, read

    def __init__(self, focus: str | None = None, id: str | None = None) -> None:
        super().__init__(id=id)
        self.focus_id = focus
        # the table highlights its first row by itself: go on to the session asked for once it appears
        self._focus_pending = focus is not None
        self.selected: str | None = None
        self.loaded_seq: int | None = 0  # None while the selected session's panes are being read
        self._followed: int | None = None  # the store's data_version when the panes last read on
        self._summary = ""
        self._counts: dict[str, int] = {}
        self._table: SessionsTable | None = None
        self.panes: list[Pane] = []
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
        self.panes = [pane() for pane in PANES]
        with Grid(id="panes"):
            yield from (p for p in self.panes if p.slot == "main")  # type: ignore[misc]  # each a widget
            with Vertical(id="side"):
                yield from (p for p in self.panes if p.slot == "side")  # type: ignore[misc]
            yield from (p for p in self.panes if p.slot == "right")  # type: ignore[misc]
        yield KeyFooter()

    def on_mount(self) -> None:
        self._table = self.query_one(SessionsTable)  # held: a query fails once the app starts taking its widgets down
        self.query_one("#session-filter").display = False  # opened by \\
        self._mounted_at = time.monotonic()
        # the first page of the table, in the first frame: the app opened its store on load
        self._table.open()
        host(self).refresh_sessions()
        self.call_after_refresh(settle)

    @property
    def widgets_up(self) -> bool:
        """Mounted, and not being taken down (as the app closes). Textual's shutdown clears the
        app's ``is_running`` first, before it removes any widget: a beat that came meanwhile
        found the table still attached and the transcript's log gone (a NoMatches, seen once in a
        loaded test run)."""
        return self._table is not None and self._table.is_attached and self.app.is_running

    @property
    def table(self) -> SessionsTable:
        if self._table is None:
            raise RuntimeError("the dashboard is not mounted yet")
        return self._table

    @property
    def marked(self) -> list[str]:
        return self.table.marked

    def on_dashboard_screen_second(self, _: Second) -> None:
        if self.widgets_up:
            for pane in self.panes:
                pane.tick()

    def on_dashboard_screen_beat(self, _: Beat) -> None:
        if self.widgets_up:
            self.follow(store_of(self))

    def on_dashboard_screen_focus(self, msg: Focus) -> None:
        """Go to ``msg.sid`` once it appears in the table (a session started from the form)."""
        self.focus_id, self._focus_pending = msg.sid, True

    # ------------------------------------------------------------------ the sessions table
    def on_dashboard_screen_sessions(self, msg: Sessions) -> None:
        """Bring the sessions table up to date: the rows ``changed`` since the app last looked, the
        countdowns of the running sessions (``moving``); then the summary line and the selection.
        ``caught_up``: the ingester had caught up with the session folders when the app read the
        rows. The table reads again only the rows it holds, and only when some changed."""
        if not self.widgets_up or (not msg.changed and not msg.moving and self._summary):
            return
        table = self.table
        with self.app.batch_update():
            table.take(msg.changed, msg.moving)
        if msg.changed or not self._summary:
            self._show_summary(recount=True)
        if self.selected is None and table.total:
            focus = self.focus_id
            waiting = focus and table.row(focus) is None and time.monotonic() - self._mounted_at < FOCUS_WAIT_S
            if not waiting:
                # on attach: the session asked for, else the top row (the most recent running one)
                first = table.row_at(0)
                target = focus if focus and table.go_to(focus) else first["session_id"] if first else None
                if target is not None:
                    self.select(target)
                    table.go_to(target)
        elif self.focus_id and self.focus_id != self.selected and self._focus_pending and table.go_to(self.focus_id):
            self._focus_pending = False  # the session asked for (or started from the form): the cursor is on it
        if self._auto_pick and msg.caught_up and table.total:
            # the store may lag the session folders when no monitor ran: once the ingester has
            # caught up, the top row (the most recent running session) is the one to show, unless
            # the user has moved since
            self._auto_pick = False
            top = table.row_at(0)
            if top is not None and top["session_id"] != self.selected and not self.focus_id:
                self.select(top["session_id"])
                table.go_to(top["session_id"])

    def _show_summary(self, recount: bool = False) -> None:
        table = self.table
        if recount or not self._counts:
            self._counts = state_counts(store_of(self))
        counts = self._counts
        order = f"sorted by {table.sort_by} {sort_arrow(table.sort_by, table.sort_reverse)}"
        marks = f" · {len(self.marked)} marked for replay" if self.marked else ""
        shown = f" · filter “{table.filter_text}”: {table.total} shown" if table.row_filter else ""
        runs = host(self).home / "runs"
        none = (f"No sessions under {runs} yet: they show here as they start (a read-only view)." if host(self).read_only
                else f"No sessions under {runs} yet: press n, or run 'onegc demo' or 'onegc run'.")
        summary = (f"{count(counts[''], 'session')} · {counts['running']} running · {counts['paused']} paused{shown} · "
                   f"{order}{marks}" if counts[""] else none)
        if summary != self._summary:  # an update relayouts the screen: only when the text changes
            self._summary = summary
            self.query_one("#summary", Static).update(summary, layout=False)

    # ------------------------------------------------------------------ the selected session
    def follow(self, store: Store) -> None:
        """Draw what the store gained for the selected session since its panes read it, whoever
        ingested it: this monitor, another one, a browser tab's or ``onegc sessions`` (issue 29:
        panes fed by this process's own ingest showed complementary halves of the stream). Each
        pane reads its own typed rows after the seq drawn (its reader bounds what it reads). Asked
        every beat; a look costs a ``data_version`` read unless something was committed."""
        sid, after = self.selected, self.loaded_seq
        if sid is None or after is None:
            return  # nothing selected, or its panes are being read (up to a seq, then this goes on)
        version = store_queries.data_version(store)
        if version == self._followed:
            return
        readers = [(pane, pane.reader()) for pane in self.panes]
        with store_queries.snapshot(store):  # the rows and the seq agree
            top = store.max_seq(sid)
            row = store.session(sid)
            read = [(pane, reader(store, sid, after) if reader is not None and top > after else None)
                    for pane, reader in readers]
        self._followed = version
        if row is None:
            return
        self.loaded_seq = max(after, top)
        with self.app.batch_update():
            for (pane, reader), (_, data) in zip(readers, read, strict=True):
                if reader is None or data is not None:
                    pane.extend(row, data)

    @on(SessionsTable.Highlighted, "#sessions")
    def _highlighted(self, event: SessionsTable.Highlighted) -> None:
        if event.sid is not None and event.sid != self.selected:
            self._auto_pick = False  # the user moved: their choice stands
            self.select(event.sid)

    @on(SessionsTable.Chosen, "#sessions")
    def _chosen(self, event: SessionsTable.Chosen) -> None:
        self.action_detail()

    def select(self, sid: str) -> None:
        """Show one session: the panes drawn from its row at once, the others when the worker has read them."""
        row = self.table.row(sid)
        if row is None:
            return
        self.selected = sid
        host(self).sub_title = sid
        self.post_message(self.Selected(sid))
        self.loaded_seq = None  # its panes are read first; then follow() draws what comes after
        readers: list[tuple[Pane, Reader]] = []
        for pane in self.panes:
            reader = pane.reader()
            if reader is None:
                pane.show(row, None)
            else:
                readers.append((pane, reader))
        self._fetch_selected(sid, row, readers)

    @work(thread=True, exit_on_error=False, exclusive=True, group="select")
    def _fetch_selected(self, sid: str, row: dict, readers: list[tuple[Pane, Reader]]) -> None:
        store = Store.open(host(self).home)
        try:
            with store_queries.snapshot(store):  # the panes and the sequence number agree
                seq = store.max_seq(sid)
                read = [(pane, reader(store, sid, 0)) for pane, reader in readers]
        finally:
            store.close()
        self.post_message(self.Loaded(sid, row, seq, read))

    def on_dashboard_screen_loaded(self, msg: Loaded) -> None:
        # after the next frame: the header and budget of the new selection show first, the
        # heavier panes a moment later (a key press must not wait for 500 transcript lines)
        self.call_after_refresh(self._show_loaded, msg)

    def _show_loaded(self, msg: Loaded) -> None:
        if msg.sid != self.selected or not self.widgets_up:
            return  # the user moved on: a newer fetch is on its way
        with self.app.batch_update():
            for pane, data in msg.read:
                pane.show(msg.row, data)
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

    def _selected_row(self) -> dict | None:
        """The selected session's summary row, as the store has it now."""
        row = self.table.row(self.selected) if self.selected else None
        if row is None:
            self.notify("select a session first", severity="warning")
        return row

    def action_toggle_pause(self) -> None:
        row, sid = self._selected_row(), self.selected
        if row is None or sid is None:
            return
        paths, state = SessionPaths(Path(row["folder"])), row["state"]
        if state not in ("running", "paused"):
            self.notify(f"{sid} is {state}: nothing to pause", severity="warning")
            return
        action: Action = "resume" if state == "paused" else "pause"
        if refused(self, f"{action} {sid}"):
            return
        request(paths, action, source="monitor")
        self.notify(f"{action} requested for {sid}")

    def action_abort(self) -> None:
        row, sid = self._selected_row(), self.selected
        if row is None or sid is None:
            return
        paths = SessionPaths(Path(row["folder"]))
        if row["state"] in ("ended", "failed", "queued"):
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
        if (self._counts.get("") or 0) <= self.LIVE_FILTER_MAX:
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
        if self.selected is not None and table.go_to(self.selected):
            return
        first = table.row_at(0)
        if first is not None:  # the selection was filtered out: the first that matches
            self.select(first["session_id"])
            table.go_to(first["session_id"])

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
        if not sid:
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
