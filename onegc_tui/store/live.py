"""The live ingest: an :class:`~onegc_tui.store.ingest.Ingester` on a thread of its own, woken by
watchdog for what appears under ``runs/`` and by a stat of each live session's ``events.jsonl``
for what grew; a periodic rescan backs both up (watchdog drops repeats under load)."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from onegc_tui.store import Store
from onegc_tui.store.ingest import Ingester, OnEvents

if TYPE_CHECKING:
    from watchdog.events import FileSystemEvent
    from watchdog.observers.api import BaseObserver

POLL_INTERVAL_S = 0.5  # the polling observer's period (network filesystems)
INGEST_NICE = 5
# A live session's events.jsonl is looked at (one stat) this often, and what it gained is read in
# one transaction with every other session's: 1 600 lines/s become ~20 batches/s, and the 1 Hz GPU
# samples of 8 sessions share passes (append -> commit stays well under the 100 ms target). watchdog
# reports what appears (a session, its files); an inotify event per appended line was a tenth of
# the monitor's CPU while 8 sessions stream, in watchdog's own Python.
POLL_S = 0.05
# ... while they stream; when a look finds a few lines at most (GPU samples, heartbeats: sessions at
# rest), the next is this much later. A timed wait costs ~120 µs of CPU on this VM before any work.
# (At 0.25 s the first lines of a stream waited it out: append -> commit p99 163 ms.)
QUIET_POLL_S = 0.1
BUSY_LINES = 8  # a look that read more than this many events keeps the fast pace
# At rest, what the sessions wrote is read when it comes to BUSY_BYTES or has waited HOLD_S: the
# GPU samples and heartbeats of 8 sessions are ~10 lines a second, and a read and a commit for each
# was half the idle monitor's CPU. A stream passes BUSY_BYTES within a look, and is read at once.
# A second: the GPU pane and the countdowns are drawn once a second anyway, and each look at rest
# is a commit (0.5 s: two a second, ~0.1 % of a core more on this VM).
BUSY_BYTES = 4096
HOLD_S = 1.0
RESCAN_S = 5.0  # the safety net (and the liveness check): every live session read, whatever the stat said


def hold_back(unread: int, last_read: int, held_for: float) -> bool:
    """Whether what the live sessions wrote waits for the next look: at rest (the last look read
    ``BUSY_LINES`` events at most), less than ``BUSY_BYTES`` of it, for ``HOLD_S`` at most."""
    return last_read <= BUSY_LINES and unread < BUSY_BYTES and held_for < HOLD_S


def _appear_events() -> list[type]:
    """New files and folders only: a session appearing, its ``events.jsonl`` made or replaced. Not
    writes (the ingest loop stats the live sessions' files), nor opens and read-only closes, which
    watchdog >= 5 also reports: reacting to our own reads would read again, forever (the filter
    keeps them out of the kernel's mask too)."""
    from watchdog.events import DirCreatedEvent, FileCreatedEvent, FileMovedEvent

    return [FileCreatedEvent, FileMovedEvent, DirCreatedEvent]


class _Dirty:
    """watchdog's handler (an observer calls ``dispatch`` for each event, as on its own
    ``FileSystemEventHandler``)."""

    def __init__(self, mark: Callable[[str | None], None]):
        self.mark = mark

    def dispatch(self, event: FileSystemEvent) -> None:
        path = os.fsdecode(getattr(event, "dest_path", "") or event.src_path)
        parent, _, name = path.rpartition("/")
        if name == "events.jsonl":
            self.mark(parent.rpartition("/")[2])
        elif name == "session.json" or (event.is_directory and parent.rpartition("/")[2] == "runs"):
            self.mark(None)  # a new session: rediscover


class LiveIngest:
    """Runs an :class:`Ingester` on a thread: watchdog wakes it for what appears, a stat of each
    live session's file every ``POLL_S`` finds what grew (a little, at rest, waits up to
    ``HOLD_S`` for more), and a periodic rescan reads them all.

    The store is opened on that thread (one connection per thread). ``read_only``: the home is only
    read (the monitor's read-only view, whose store is a private copy): nothing is made or
    cleaned up in it, and where it has no ``runs/`` yet the rescan alone finds the sessions.
    """

    def __init__(self, home: Path, on_events: OnEvents | None = None, on_error: Callable[[str], None] | None = None,
                 on_sessions: Callable[[list[str]], None] | None = None, rescan_s: float = RESCAN_S, polling: bool | None = None,
                 read_only: bool = False):
        self.home = home
        self.read_only = read_only
        self.on_events = on_events
        self.on_error = on_error
        self.on_sessions = on_sessions
        self.rescan_s = rescan_s
        from runner.settings import observer_kind

        self.polling = observer_kind(home) == "polling" if polling is None else polling
        self._dirty: set[str] = set()
        self._rediscover = True
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="ingest", daemon=True)
        self._observer: BaseObserver | None = None
        self.ready = threading.Event()

    def start(self) -> None:
        from watchdog.observers import Observer
        from watchdog.observers.polling import PollingObserver

        runs = self.home / "runs"
        if not self.read_only:
            runs.mkdir(parents=True, exist_ok=True)
        if runs.is_dir():
            observer = PollingObserver(timeout=POLL_INTERVAL_S) if self.polling else Observer()
            # only writes and new files: the kernel then never reports our own reads to us
            observer.schedule(_Dirty(self._mark),  # type: ignore[arg-type]  # its dispatch is all watchdog calls
                              str(runs), recursive=True, event_filter=_appear_events())
            observer.start()
            self._observer = observer
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._observer:
            self._observer.stop()
            self._observer.join(timeout=5)
        self._thread.join(timeout=10)

    def _mark(self, sid: str | None) -> None:
        with self._lock:
            if sid is None:
                self._rediscover = True
            else:
                self._dirty.add(sid)
        self._wake.set()

    def _look(self, ingester: Ingester, store: Store, targets: set[str] | frozenset[str]) -> int:
        """Read what ``targets`` wrote, in one transaction; returns how many events were stored."""
        ingester.hold()
        read = 0
        try:
            # one commit for every session that wrote, the write lock taken first: a look that read in a
            # deferred transaction cannot write once another ingester (a second monitor, `onegc run`) has
            # committed since, and SQLite says "database is locked" at once, without its busy wait
            with store.transaction(immediate=True):
                for sid in sorted(targets):
                    try:
                        read += ingester.ingest_session(sid)
                    except Exception as exc:  # a broken folder must not stop the others
                        ingester._error(f"ingesting {sid} failed: {type(exc).__name__}: {exc}")
        except sqlite3.Error as exc:  # the commit: nothing is shown, and the lines are read again
            ingester.discard()
            ingester._error(f"writing {store.path} failed: {exc}")
        else:
            ingester.deliver()
        return read

    def _run(self) -> None:
        try:  # below the drawing thread: on a busy machine a key press goes first (Linux: per-thread nice)
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), INGEST_NICE)
        except (OSError, AttributeError):
            pass
        store = Store.open(self.home)
        ingester = Ingester(self.home, store, self.on_events, self.on_error, read_only=self.read_only)
        last_full = 0.0
        read = 0  # events the last look read
        held_since: float | None = None  # when a look first left a little unread (at rest)
        try:
            while not self._stop.is_set():
                with self._lock:
                    dirty, self._dirty = self._dirty, set()
                    rediscover, self._rediscover = self._rediscover, False
                now = time.monotonic()
                full = now - last_full >= self.rescan_s
                added: list[str] = []
                if rediscover or full:
                    added = ingester.discover()
                    if added and self.on_sessions:
                        self.on_sessions(added)
                # live sessions only (10 000 finished ones are not 10 000 stats 20 times a second):
                # those whose file grew, and at the safety-net rescan every one of them
                live = ingester.live
                if full:
                    targets: set[str] | frozenset[str] = live
                else:
                    unread = {sid: n for sid in live if (n := ingester.unread(sid))}
                    targets = dirty | set(added) | unread.keys()
                    if unread and not dirty and not added:
                        held_since = held_since if held_since is not None else now
                        if hold_back(sum(unread.values()), read, now - held_since):
                            targets = set()
                read = 0
                if targets or full:
                    held_since = None
                    read = self._look(ingester, store, targets)
                    if full:
                        failed = ingester.check_liveness()
                        if failed and self.on_sessions:
                            self.on_sessions(failed)
                        last_full = now
                self.ready.set()
                # a new session or file wakes it sooner
                self._wake.wait(timeout=POLL_S if read > BUSY_LINES else QUIET_POLL_S)
                self._wake.clear()
        finally:
            store.close()
