"""The live monitor: every session at a glance, and four panes for the selected one.

Threads only fetch: the ingest thread (watchdog + SQLite writes) queues new events, and the
app drains the queue into the widgets on a clock (``FLUSH_HZ``), with an immediate wake for
checkpoint and control events. Tables are updated by key, never cleared.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from pathlib import Path

from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Vertical
from textual.message import Message
from textual.widgets import DataTable, Footer, Header, Static

from onegc_tui.app.confirm import ConfirmScreen
from onegc_tui.app.panes import BudgetPane, CheckpointsPane, GpuPane, TranscriptPane
from onegc_tui.ingest import LiveIngest
from onegc_tui.store import Store
from onegc_tui.view import session_cells
from runner.config import SessionPaths
from runner.control import request
from runner.events import Event

FLUSH_HZ = 10  # drain new events into the panes this often (PERFORMANCE.md: frames, not lines)
TABLE_REFRESH_S = 1.0  # the sessions table repaints every visible row on any change: 1 Hz
MAX_PENDING = 20_000  # events buffered between flushes before the oldest are dropped from view
COLUMNS = [("session", "Session", 36), ("task", "Task", 4), ("agent", "Agent", 12), ("state", "State", 8),
           ("left", "Budget left", 16), ("best", "Best", 7), ("gpu", "GPU", 5), ("ckpts", "Ckpts", 5),
           ("scripts", "Scripts", 7), ("tokens", "Tokens", 7), ("cost", "Cost", 7)]
FOCUS_WAIT_S = 10.0  # a session started with the monitor appears within this; select nothing else before
URGENT = {"checkpoint_scored", "control", "session_ended", "budget", "warning"}


class MonitorApp(App):
    CSS_PATH = "app.tcss"
    TITLE = "onegc monitor"
    BINDINGS = [
        Binding("p", "toggle_pause", "Pause/resume"),
        Binding("a", "abort", "Abort"),
        Binding("f", "follow", "Follow"),
        Binding("q", "quit", "Quit"),
    ]

    class Wake(Message):
        """Something urgent arrived: flush now rather than at the next tick."""

    def __init__(self, home: Path, focus: str | None = None, live: bool = True, show_clock: bool = True):
        super().__init__()
        self.show_clock = show_clock
        self.home = home
        self.focus_id = focus
        self.live = live
        self.selected: str | None = None
        self.loaded_seq = 0
        self.rows: dict[str, dict] = {}
        self._pending: deque[tuple[str, Event]] = deque(maxlen=MAX_PENDING)
        self._pending_lock = threading.Lock()
        self._errors: deque[str] = deque(maxlen=100)
        self._ingest: LiveIngest | None = None
        self.store: Store | None = None

    # ------------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield Header(show_clock=self.show_clock)
        with Vertical(id="top"):
            yield Static("", id="summary")
            yield DataTable(id="sessions", cursor_type="row", zebra_stripes=True)
        with Grid(id="panes"):
            yield TranscriptPane(id="transcript")
            with Vertical(id="side"):
                yield BudgetPane(id="budget")
                yield GpuPane(id="gpu")
            yield CheckpointsPane(id="checkpoints")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#sessions", DataTable)
        for key, label, width in COLUMNS:
            table.add_column(label, key=key, width=width)
        self.store = Store.open(self.home)
        self._mounted_at = time.monotonic()
        if self.live:
            self._ingest = LiveIngest(self.home, on_events=self._queue_events, on_error=self._queue_error)
            self._ingest.start()
        self.refresh_sessions()
        self.set_interval(1 / FLUSH_HZ, self.flush)
        self.set_interval(TABLE_REFRESH_S, self.refresh_sessions)
        self.set_interval(1.0, self.tick)

    def on_unmount(self) -> None:
        if self._ingest:
            self._ingest.stop()
        if self.store:
            self.store.close()

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
        while self._errors:
            self.notify(self._errors.popleft(), severity="warning", timeout=8)
        if not batch:
            return
        mine = [e for sid, e in batch if sid == self.selected and e.seq > self.loaded_seq]
        if mine:
            self.query_one(TranscriptPane).add_events(mine)
            self.query_one(BudgetPane).apply(mine)
            self.query_one(GpuPane).apply(mine)
            self.query_one(CheckpointsPane).apply(mine)
        for sid, e in batch:
            if e.type == "session_ended":
                self.notify(f"{sid}: {e.reason}" + (f", score {e.score:.4f}" if e.score is not None else ", no score"),
                            severity="information" if e.score is not None else "warning")
            elif e.type == "checkpoint_scored" and e.error and not e.official:
                self.notify(f"{sid}: {e.name} failed scoring: {e.error}", severity="error", timeout=10)
        if any(e.type in ("session_started", "session_ended", "budget", "checkpoint_scored") for _, e in batch):
            self.refresh_sessions()

    def refresh_sessions(self) -> None:
        if self.store is None:
            return
        rows = {r["session_id"]: r for r in self.store.sessions()}
        table = self.query_one("#sessions", DataTable)
        now = time.time()
        with self.batch_update():
            for sid, row in rows.items():
                cells = session_cells(row, now)
                if sid not in self.rows:
                    table.add_row(*(cells[k] for k, _, _ in COLUMNS), key=sid)
                else:
                    old = session_cells(self.rows[sid], now)
                    for key, _, _ in COLUMNS:
                        if cells[key] != old[key] or key == "left":
                            table.update_cell(sid, key, cells[key])
        self.rows = rows
        running = sum(1 for r in rows.values() if r["state"] == "running")
        paused = sum(1 for r in rows.values() if r["state"] == "paused")
        self.query_one("#summary", Static).update(
            f"{len(rows)} sessions · {running} running · {paused} paused · p pause/resume · a abort · f follow"
            if rows else f"No sessions under {self.home / 'runs'} yet: start one with 'onegc demo' or 'onegc run'.")
        if self.selected is None and rows:
            waiting = self.focus_id and self.focus_id not in rows and time.monotonic() - self._mounted_at < FOCUS_WAIT_S
            if not waiting:
                target = self.focus_id if self.focus_id in rows else next(iter(rows))
                self.select(target)
                table.move_cursor(row=table.get_row_index(target))
        elif self.selected in rows:
            self.query_one(BudgetPane).update_row(rows[self.selected])

    def tick(self) -> None:
        self.query_one(BudgetPane).tick()

    @on(DataTable.RowHighlighted, "#sessions")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key and event.row_key.value != self.selected:
            self.select(event.row_key.value)

    def select(self, sid: str) -> None:
        """Show one session in the panes, loaded from SQLite; live events follow."""
        assert self.store is not None
        self.selected = sid
        row = self.rows.get(sid) or self.store.session(sid)
        if row is None:
            return
        self.loaded_seq = self.store.max_seq(sid)  # queued events up to here are already in what we load
        with self.batch_update():
            self.query_one(TranscriptPane).load(sid, self.store)
            self.query_one(BudgetPane).load(row)
            self.query_one(GpuPane).load(sid, self.store)
            self.query_one(CheckpointsPane).load(sid, row, self.store)
        self.sub_title = sid

    # ------------------------------------------------------------------ actions
    def _selected_paths(self) -> SessionPaths | None:
        if not self.selected or self.selected not in self.rows:
            self.notify("select a session first", severity="warning")
            return None
        return SessionPaths(Path(self.rows[self.selected]["folder"]))

    def action_toggle_pause(self) -> None:
        paths = self._selected_paths()
        if paths is None:
            return
        state = self.rows[self.selected]["state"]
        if state not in ("running", "paused"):
            self.notify(f"{self.selected} is {state}: nothing to pause", severity="warning")
            return
        action = "resume" if state == "paused" else "pause"
        request(paths, action, source="monitor")
        self.notify(f"{action} requested for {self.selected}")

    def action_abort(self) -> None:
        paths = self._selected_paths()
        if paths is None:
            return
        if self.rows[self.selected]["state"] in ("ended", "failed", "queued"):
            self.notify(f"{self.selected} is not running", severity="warning")
            return
        sid = self.selected

        def confirmed(yes: bool | None) -> None:
            if yes:
                request(paths, "abort", source="monitor")
                self.notify(f"abort requested for {sid}", severity="warning")

        self.push_screen(ConfirmScreen(f"Abort session {sid}?\nIts whole process tree is stopped; the checkpoints "
                                       "saved so far are still scored."), confirmed)

    def action_follow(self) -> None:
        self.query_one(TranscriptPane).follow()


def make_app(home: Path, focus: str | None = None, live: bool = True, show_clock: bool = True) -> MonitorApp:
    """The one factory the CLI and the tests share (tests: ``live=False``, no clock)."""
    return MonitorApp(home, focus=focus, live=live, show_clock=show_clock)
