"""The live monitor: the app holds the store, the live ingest and the one clock, and its first
screen is the dashboard (screens/dashboard.py: every session at a glance, and four panes plus
a score plot for the selected one), as Textualize's toolong does.

Threads only fetch: the ingest thread (watchdog + SQLite writes) queues new events, and the
app drains the queue on a clock (``FLUSH_HZ``), with an immediate wake for checkpoint and
control events. Everything shown is read from the store, whoever ingested it (this monitor,
another one, a browser tab's, ``onegc sessions``; issue 29): each beat the dashboard's panes read
what the selected session gained; once a second the app reads the live feed
(onegc_tui/views/live_feed.py, UI-free, which ``onegc run --plain`` reads too): the sessions rows
changed since its last look go to the dashboard's table, the alerts to notifications. This
process's own queue only says when to look sooner.

The app owns what every screen shares (the store, the ingest, the feed, the clock, the
notifications) and the keys that work everywhere (``?`` help, ``h`` history, ``n`` new session,
``q``); each screen owns its own keys and actions (the dashboard's: screens/dashboard.py), as
Textualize's toolong does. Nothing is forwarded from the app to a screen.

``read_only``: a home this user cannot write (the CLI has redirected its store to a private copy,
onegc_tui/store/readonly_home.py ``private_store``). The monitor is then a view: the sessions stream as
ever, the header says so, and the keys that would write (pause, resume, abort, new session, the
history's export) say why not in one line (host.py ``refused``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from textual import events as tx_events
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.message import Message
from textual.reactive import Reactive
from textual.screen import Screen
from textual.widget import AwaitMount

from onegc_tui.app.gcpace import FullCollections, settle
from onegc_tui.app.host import refused, store_of
from onegc_tui.app.inbox import Inbox
from onegc_tui.app.screens.dashboard import DashboardScreen
from onegc_tui.app.screens.help import HelpScreen, help_for
from onegc_tui.app.screens.history import HistoryScreen, HistoryViews
from onegc_tui.app.widgets.header import MinuteTurn
from onegc_tui.store import Store
from onegc_tui.store.live import LiveIngest
from onegc_tui.views.alerts import Alert, Coalescer, Note
from onegc_tui.views.live_feed import LiveFeed
from runner.wire.textsafe import safe_text

GIL_SWITCH_S = 0.001
FLUSH_HZ = 5  # drain new events into the panes this often: CPU follows frames, not lines (../shared/PERFORMANCE.md);
# each drain redraws the transcript pane, and at 10 Hz that was a third of the streaming monitor's CPU
NOTE_TIMEOUT_S = {"information": 5, "warning": 8, "error": 10}


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
    # the keys of every screen; a screen's own come first in the footer (the dashboard lists these
    # among its own, in its footer's order: screens/dashboard.py)
    BINDINGS = [
        Binding("question_mark", "help", "Help"),
        Binding("h", "history", "History"),
        Binding("n", "new_session", "New session"),
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
        self.feed = LiveFeed()  # every session's row, the running ones, the alerts
        self.coalescer = Coalescer()
        self.history = HistoryViews(home)  # the history screen's data; dropped when sessions start or end
        self.inbox = Inbox()  # what the ingest thread says between beats
        self._ingest: LiveIngest | None = None
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
            self._ingest = LiveIngest(self.home, on_events=self._queue_events, on_error=self.inbox.error,
                                      read_only=self.read_only)
            self._ingest.start()
        # on a thread beside the first table (over 10 000 sessions, seconds of drawing): the history
        # matrix is ready before anyone can press h (after the first frame, h pressed the moment
        # the dashboard showed waited for it)
        self.history.prefetch(self._settle_soon)

    async def on_mount(self) -> None:
        # the dashboard composes and mounts in a task of its own: its first frame (the table, the
        # keyboard on it, the footer) comes before anything in the app's queue, as when the app
        # composed it (a web page's first blur, handled before, left it no focus and no footer)
        await AwaitMount(self.dashboard, [self.dashboard])
        self._gc = FullCollections(time.monotonic())
        self._minute = MinuteTurn()
        self._gc.start()
        self.set_interval(1 / FLUSH_HZ, self._beat)

    def on_unmount(self) -> None:
        if hasattr(self, "_gc"):  # absent when mounting failed: that error is the one to see
            self._gc.stop()
        if self._ingest:
            self._ingest.stop()
        if self.store:
            self.store.close()

    # ------------------------------------------------------------------ threads -> app
    def _queue_events(self, sid: str, events: list[dict[str, Any]]) -> None:  # ingest thread: the events' records
        if self.inbox.put(events):
            self.post_message(self.Wake())

    def on_monitor_app_wake(self, _: Wake) -> None:
        self.flush()

    # ------------------------------------------------------------------ drawing
    def flush(self) -> None:
        """What came since the last beat: the dashboard's panes draw what the store gained, ingest
        errors become notifications, and the sessions rows are read again if one moved."""
        if not self.dashboard.widgets_up:
            return  # not mounted yet, or the app is closing: the queue waits
        self.dashboard.follow(store_of(self))  # the panes: what the store gained, whoever ingested it
        count, rows_moved, errors = self.inbox.take()
        self._notify([Alert("", message, "warning", "ingest_error") for message in errors])
        if count:
            self._gc.fed(time.monotonic(), count)
        if rows_moved:
            self.refresh_sessions()  # now rather than at the next second: the table and the alerts

    def refresh_sessions(self) -> None:
        """Bring the sessions up to date: the feed's look at the store goes to the dashboard's
        table (the rows changed, the countdowns of the running sessions) and its alerts to
        notifications; a session that appeared, started or ended drops the history's matrix
        (computed again when asked)."""
        if self.store is None:
            return
        caught_up = self._ingest is None or self._ingest.ready.is_set()  # before reading: its rows are in
        look = self.feed.read(self.store)
        if look.sessions_moved:
            self.history.invalidate()
        self._notify(look.alerts)
        self.dashboard.show_sessions(look.changed, look.moving, caught_up)

    _beats = 0

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
        self._minute.tick(self.screen)  # each screen's header clock, as the minute turns
        self._notify(self.feed.due(self.now()))
        for note in self.coalescer.due(time.monotonic(), self.dashboard.selected):
            self._show_note(note)
        self._gc.tick(time.monotonic())  # a full collection, if one is due and no one is pressing keys

    async def on_event(self, event: tx_events.Event) -> None:
        if isinstance(event, (tx_events.Key, tx_events.MouseDown)):
            self._gc.touched(time.monotonic())
        await super().on_event(event)

    def _notify(self, alerts: list[Alert]) -> None:
        """Alerts become at most one notification per kind every few seconds (view.Coalescer)."""
        if alerts:
            for note in self.coalescer.add(alerts, time.monotonic(), self.dashboard.selected):
                self._show_note(note)

    def _show_note(self, note: Note) -> None:
        self.notify(safe_text(note.message), severity=note.severity, timeout=NOTE_TIMEOUT_S[note.severity],
                    markup=False)  # an alert can quote an agent (a warning, an error)

    # ------------------------------------------------------------------ help
    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(help_for(self.screen, self.home, self.read_only))

    def get_system_commands(self, screen):
        """The palette's "Keys" opens the same help as ``?`` (Textual's panel did not close on Esc)."""
        for command in super().get_system_commands(screen):
            if command.title == "Keys":
                yield SystemCommand("Keys", "Every key for the focused pane, and what the marks mean (?)",
                                    self.action_help)
            else:
                yield command

    # ------------------------------------------------------------------ history and new sessions
    def _settle_soon(self) -> None:  # history-prefetch thread
        try:
            self.call_from_thread(settle)
        except RuntimeError:  # the app has closed meanwhile
            pass

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
