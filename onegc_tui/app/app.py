"""The live monitor: the app holds the store, the live ingest and the one clock, and its first
screen is the dashboard (screens/dashboard.py: every session at a glance, and four panes plus
a score plot for the selected one), as Textualize's toolong does.

Threads only fetch: the ingest thread (watchdog + SQLite writes) queues new events, and the
app drains the queue on a clock (``FLUSH_HZ``), with an immediate wake for checkpoint and
control events. Everything shown is read from the store, whoever ingested it (this monitor,
another one, a browser tab's, ``onegc sessions``; issue 29): each beat the dashboard's panes read
what the selected session gained; once a second the app reads the sessions rows changed since
its last look, hands them to the dashboard's table, and feeds the events those sessions gained to
the alerts, which become notifications. This process's own queue only says when to look sooner.

Screens (keys): the dashboard; ``h`` history (agent × task matrix, paper beside it); ``d``/Enter
session detail (replay on one budget-time axis); ``r`` side-by-side replay of marked sessions
(space marks); ``n`` new session.

``read_only``: a home this user cannot write (the CLI has redirected its store to a private copy,
onegc_tui/store/readonly_home.py ``private_store``). The monitor is then a view: the sessions stream as
ever, the header says so, and the keys that would write (pause, resume, abort, new session, the
history's export) say why not in one line (host.py ``refused``).
"""

from __future__ import annotations

import sys
import threading
import time
import weakref
from collections import deque
from pathlib import Path

from textual import events as tx_events
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.message import Message
from textual.reactive import Reactive
from textual.screen import Screen
from textual.widget import AwaitMount
from textual.widgets import Input

from onegc_tui.app.gcpace import FullCollections, settle
from onegc_tui.app.host import refused, store_of
from onegc_tui.app.screens.dashboard import DashboardScreen
from onegc_tui.app.screens.help import HelpScreen, key_sections, pane_name
from onegc_tui.app.screens.history import ALL, HistoryScreen, HistoryViews
from onegc_tui.app.widgets.header import CLOCK_FORMAT, BeatClock
from onegc_tui.app.widgets.sessions import SessionsTable
from onegc_tui.store import Store
from onegc_tui.store import queries as store_queries
from onegc_tui.store.live import LiveIngest
from onegc_tui.views.alerts import Alert, Alerts, Coalescer, Note
from runner.wire.events import Event, parse_event
from runner.wire.textsafe import safe_text
from tasks import direction_of

GIL_SWITCH_S = 0.001
FLUSH_HZ = 5  # drain new events into the panes this often: CPU follows frames, not lines (../shared/PERFORMANCE.md);
# each drain redraws the transcript pane, and at 10 Hz that was a third of the streaming monitor's CPU
MAX_PENDING = 20_000  # events buffered between flushes before the oldest are dropped from view
ALERT_READ_MAX = 5_000  # events of one session the alerts read per look (a backlog is read over a few)
URGENT = {"checkpoint_scored", "control", "session_ended", "budget", "warning"}
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
    # in the footer's order; a narrow footer drops keys from the end (? and q always stay). The
    # dashboard's keys are bound here too, in that order and under "Everywhere" in help:
    # check_action shows them on the dashboard only, and the dashboard runs them
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
                 now=None, read_only: bool = False):
        super().__init__()
        self.show_clock = show_clock
        self.home = home
        self.live = live
        self.read_only = read_only
        if read_only:  # at a glance, on every screen: nothing here acts on the sessions
            self.title = f"{self.TITLE} · read-only view of {home}"
        self.now = now or time.time  # injectable: snapshots freeze the countdowns
        self.running: set[str] = set()  # the running sessions: their countdowns move, the alerts watch them
        self._unchecked: set[str] = set()  # rows changed since the alerts last looked
        self._alerted: dict[str, int] = {}  # per session, the seq up to which the alerts have read the store
        self._opened = False  # the first read of the sessions is done: a session seen later is new
        self.alerts = Alerts(direction=lambda sid: direction_of(self.rows.get(sid, {}).get("task")))
        self.coalescer = Coalescer()
        self.history = HistoryViews(home)  # the history screen's data; dropped when sessions start or end
        self._pending: deque[tuple[str, Event]] = deque(maxlen=MAX_PENDING)
        self._pending_lock = threading.Lock()
        self._errors: deque[str] = deque(maxlen=100)
        self._ingest: LiveIngest | None = None
        self._data_version = -1
        self.store: Store | None = None
        self.dashboard = DashboardScreen(focus, id="_default")

    # ------------------------------------------------------------------ start and stop
    def get_default_screen(self) -> Screen:
        # the dashboard: laid out once for its first frame, and not again for the terminal's own
        # report of the same size (over 10 000 sessions it came seconds later, and its relayout held
        # the first key ~150 ms)
        return self.dashboard

    def on_load(self) -> None:
        """The store, the live ingest and the history prefetch, before any screen: the dashboard
        composes in a task of its own (``on_mount`` waits for it) and reads them as it mounts: its
        first table, in its first frame."""
        self.store = Store.open(self.home)
        # the ingest thread parses while we draw: hand the GIL over sooner so a key press is not
        # kept waiting behind a batch (Python's default switch interval is 5 ms)
        sys.setswitchinterval(GIL_SWITCH_S)
        if self.live:
            self._ingest = LiveIngest(self.home, on_events=self._queue_events, on_error=self._queue_error,
                                      read_only=self.read_only)
            self._ingest.start()
        # on a thread beside the first table (over 10 000 sessions, seconds of drawing): the history
        # matrix is ready before anyone can press h (after the first frame, h pressed the moment
        # the dashboard showed waited for it)
        self._prefetch_history()

    async def on_mount(self) -> None:
        # the dashboard composes and mounts in a task of its own: its first frame (the table, the
        # keyboard on it, the footer) comes before anything in the app's queue, as when the app
        # composed it (a web page's first blur, handled before, left it no focus and no footer)
        await AwaitMount(self.dashboard, [self.dashboard])
        self._gc = FullCollections(time.monotonic())
        self._clocks = weakref.WeakKeyDictionary()
        self._gc.start()
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
        """Drain the queue: ingest errors and alerts become notifications, the dashboard draws the
        batch, and the sessions rows it changed are read again."""
        if not self.dashboard.widgets_up:
            return  # not mounted yet, or the app is closing: the queue waits
        self.dashboard.follow(store_of(self))  # the panes: what the store gained, whoever ingested it
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
        if any(e.type in ("session_started", "session_ended", "budget", "checkpoint_scored", "warning")
               for _, e in batch):
            self.refresh_sessions()  # now rather than at the next second: the table and the alerts

    # the dashboard's, read through (tests and the alerts use them)
    @property
    def table(self) -> SessionsTable:
        return self.dashboard.table

    @property
    def rows(self) -> dict[str, dict]:
        """Every session's summary row (the table's, filtered or not)."""
        return self.dashboard.rows

    @property
    def marked(self) -> list[str]:
        return self.dashboard.marked

    @property
    def selected(self) -> str | None:
        return self.dashboard.selected

    @property
    def loaded_seq(self) -> int | None:
        return self.dashboard.loaded_seq

    def refresh_sessions(self) -> None:
        """Bring the sessions up to date: read the rows changed since the last look, track them for
        the alerts, and hand them to the dashboard's table with the countdowns of the running
        sessions. Over a store of 10 000 finished sessions this reads only what moved (reading
        every row each second was ~170 ms of the drawing thread)."""
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
        moving = [sid for sid in self.running if sid not in changed]  # their countdowns
        shown = self.rows
        if self._opened and any(sid not in shown or shown[sid]["state"] != row["state"] for sid, row in changed.items()):
            # a session appeared, started or ended since the first read: the matrix is computed again
            # when asked (not at the first read: the history prefetched from the start is current)
            self.history.invalidate()
        for sid, row in changed.items():
            self._track(sid, row, first=sid not in shown)
        self._notify([alert for sid, row in changed.items() for alert in self._alerts_from_store(sid, row)])
        self._opened = True
        self._unchecked.update(changed)
        self.dashboard.show_sessions(changed, moving, caught_up)

    def _alerts_from_store(self, sid: str, row: dict) -> list[Alert]:
        """What the session's new events in the store say (a new best, a failed score, a blocked
        connection, the end), whoever ingested them: every monitor on a home notifies, not only
        the one whose ingest happened to read the line."""
        after = self._alerted.get(sid, 0)
        if (row.get("last_seq") or 0) <= after:
            return []
        out: list[Alert] = []
        rows = store_queries.events_for_alerts(store_of(self), sid, after, ALERT_READ_MAX)
        for _seq, _ts, _type, data in rows:
            if data is None:  # not an event the alerts read
                continue
            try:
                event = parse_event(data)
            except ValueError:  # the store holds what the ingest validated; a row it did not is no alert
                continue
            out += self.alerts.feed(sid, event)
        if rows:
            self._alerted[sid] = rows[-1][0]
        return out

    _rev = 0  # the newest sessions-row revision read

    def _track(self, sid: str, row: dict, first: bool) -> None:
        if first:
            self._first_sight(sid, row)
        if row["state"] == "running":
            self.running.add(sid)
        else:
            self.running.discard(sid)

    def _first_sight(self, sid: str, row: dict) -> None:
        if not self._opened:  # there when the monitor opened: its past is no news (its best is the one to beat)
            self._alerted[sid] = row.get("last_seq") or 0
            if row.get("best_live") is not None:
                self.alerts.best[sid] = row["best_live"]
        self.alerts.states[sid] = row["state"]

    _beats = 0
    _clocks: weakref.WeakKeyDictionary[Screen, tuple[str, list[BeatClock]]]  # the minute shown; a closed screen is let go

    def _beat(self) -> None:
        """The app's one clock: new events at FLUSH_HZ, and every FLUSH_HZ-th beat, in the same
        frame, what changes once a second (the sessions table's changed rows, the countdowns,
        the GPU pane, the clock). Separate 1 Hz timers would each
        cost a frame, and an idle monitor's CPU is mostly frames."""
        if not self.dashboard.widgets_up:
            return  # the app is closing: its widgets are being taken down
        self.flush()
        self._beats += 1
        if self._beats % FLUSH_HZ == 0:
            self.tick()

    def tick(self) -> None:
        """The once-a-second work, drawn in one frame."""
        self.refresh_sessions()
        self.dashboard.tick()
        screen = self.screen
        minute = time.strftime(CLOCK_FORMAT)
        shown, clocks = self._clocks.get(screen, (None, []))
        if shown != minute:  # each screen's header clock, as the minute turns
            clocks = clocks or list(screen.query(BeatClock))  # found once it is there (a query walks the screen)
            for clock in clocks:
                clock.refresh()
            self._clocks[screen] = (minute, clocks)
        watched = self._unchecked | self.running
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

    # ------------------------------------------------------------------ the dashboard's keys, run there
    def action_toggle_pause(self) -> None:
        self.dashboard.action_toggle_pause()

    def action_abort(self) -> None:
        self.dashboard.action_abort()

    def action_filter_sessions(self) -> None:
        self.dashboard.action_filter_sessions()

    def action_search(self) -> None:
        self.dashboard.action_search()

    def action_detail(self) -> None:
        self.dashboard.action_detail()

    def action_filter(self) -> None:
        self.dashboard.action_filter()

    def action_follow(self) -> None:
        self.dashboard.action_follow()

    def action_sort(self) -> None:
        self.dashboard.action_sort()

    def action_reverse(self) -> None:
        self.dashboard.action_reverse()

    def action_mark(self) -> None:
        self.dashboard.action_mark()

    def action_replay(self) -> None:
        self.dashboard.action_replay()

    def action_dismiss(self) -> None:
        """Esc on the dashboard: close the notifications."""
        self.clear_notifications()

    # ------------------------------------------------------------------ help
    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        note = (f"A read-only view of {self.home}: this user cannot write it. The sessions stream as they run; "
                "pause, resume, abort, new session and export say why not instead of acting.") if self.read_only else ""
        self.push_screen(HelpScreen(key_sections(self.screen), pane_name(self.screen.focused), note=note))

    def get_system_commands(self, screen):
        """The palette's "Keys" opens the same help as ``?`` (Textual's panel did not close on Esc)."""
        for command in super().get_system_commands(screen):
            if command.title == "Keys":
                yield SystemCommand("Keys", "Every key for the focused pane, and what the marks mean (?)",
                                    self.action_help)
            else:
                yield command

    # ------------------------------------------------------------------ history and new sessions
    def _prefetch_history(self) -> None:
        """The default history view, computed ahead of the first ``h`` (kept until sessions change),
        on a thread of its own started at once: a Textual worker starts only after the mount
        handlers return, which over 10 000 sessions is after seconds of building the table, so an
        ``h`` pressed the moment the dashboard showed waited for the whole computation."""
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
                self.dashboard.ask_for(ids[0])
                self.notify(f"started {', '.join(ids)}")

        if refused(self, "start a session"):
            return
        if not isinstance(self.screen, NewSessionScreen):
            self.push_screen(NewSessionScreen(self.home), started)


def make_app(home: Path, focus: str | None = None, live: bool = True, show_clock: bool = True,
             now=None, read_only: bool = False) -> MonitorApp:
    """The one factory the CLI and the tests share (tests: ``live=False``, no clock, a fixed ``now``;
    ``read_only``: inside readonly_home ``private_store``, which says whether the home is)."""
    return MonitorApp(home, focus=focus, live=live, show_clock=show_clock, now=now, read_only=read_only)
