"""The line-oriented display, for when stdout is not a terminal (CI, nohup, Slurm logs).

One line per notable event, in the words the monitor's transcript pane uses
(onegc_tui/views/transcript_view.py ``event_words``), and a progress line per session every
``PROGRESS_EVERY_S``. It reads each session's own ``events.jsonl`` (so it prints every event
whoever else ingests the same home: a monitor, ``onegc sessions``, a second run), and ingests into
SQLite as it goes, so the history is the same as with the monitor. From that store it reads the
monitor's live feed (onegc_tui/views/live_feed.py) and prints the alerts no event says by itself
(``ALERT``: the budget running low), as the monitor notifies it. A store that cannot
be written (a full disk, a damaged file) is said once and does not stop the following (nor the
alerts' feed, which then stops): the session folders are the source of truth.
"""

from __future__ import annotations

import io
import os
import signal
import sqlite3
import sys
import threading
import time
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

from onegc_tui.store import Store
from onegc_tui.store.ingest import Ingester
from onegc_tui.views.format import clock
from onegc_tui.views.live_feed import LiveFeed
from onegc_tui.views.task_facts import metric_label
from onegc_tui.views.transcript_view import ended_words, event_words, official_words  # noqa: F401 (official_words: the result's words, for callers here)
from runner.errors import OnegcError
from runner.launch.reconcile import reconcile
from runner.wire.events import Event
from runner.wire.jsonl import JsonlTail
from runner.wire.paths import SessionPaths, runs_dir
from runner.wire.score_terms import best_name
from runner.wire.summary import Summary
from runner.wire.textsafe import safe_text

PROGRESS_EVERY_S = 10.0
POLL_S = 0.5
LIVENESS_EVERY_S = 2.0  # how often a session without session_ended is asked whether its runner lives
FEED_ALERTS = ("low_budget",)  # the feed's alerts no event line says (a stall is the runner's warning: an event line)


def describe(event: Event, task: str | None = None) -> str | None:
    """The line --plain prints for an event (after the time and the session), or None."""
    said = event_words(event, task)
    return said.line if said else None


def row(line: str, width: int | None) -> str:
    """One printed row: terminal controls removed, on one line, and — when the output is a
    terminal ``width`` columns wide — cut to fit it (INTEGRITY.md R4). A row that wrapped would
    let an agent's padded text (a scoring error, a tool call) start the next screen row with
    words that read as the harness's own ``[12:00:00] s1: ended: completed, score …``; a row
    that never wraps cannot. Every character counts as one column at least and a wide or
    ambiguous one (CJK, most emoji, East Asian "ambiguous") as two, so the estimate is never short of what the terminal draws."""
    text = safe_text(line, one_line=True)
    if width is None or len(text) * 2 <= width or _cells(text) <= width:
        return text
    kept, used = 0, 0
    while used + _cells(text[kept]) <= width - 2:  # "…" may be drawn two columns wide (East Asian "ambiguous")
        used += _cells(text[kept])
        kept += 1
    return text[:kept] + "…"


def _cells(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(ch) in "WFA" else 1 for ch in text)


def terminal_width(out: TextIO) -> int | None:
    """The width of the terminal ``out`` writes to (or, when ``out`` is a pipe, say into ``tee``,
    the terminal of stderr), read at each row so a resize is followed; None when none is."""
    for stream in (out, sys.stderr):
        try:
            return os.get_terminal_size(stream.fileno()).columns or None
        except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
            continue
    return None


def still_running(session_ids: list[str]) -> str:
    """What to tell someone who stops watching (Ctrl-C, a monitor that failed): the sessions run on
    without a viewer, and the commands that watch and end them."""
    if len(session_ids) == 1:
        sid = session_ids[0]
        return (f"; session {sid} goes on: 'onegc monitor --session {sid}' watches it, "
                f"'onegc abort {sid}' ends it")
    return (f"; the {len(session_ids)} sessions go on: 'onegc sessions' lists them, "
            "'onegc abort ID' ends one")


class Progress(Summary):
    """What the progress line and the final line say about one session, from its own events."""

    @property
    def reason(self) -> str | None:
        """Why the session ended (None while it runs): its ``session_ended``, or a liveness verdict."""
        return self.end_reason


class _StoreCopy:
    """Ingests the home into SQLite beside the following, and reads the live feed from it on a
    connection of its own (a connection does not see its own commits in ``data_version``, which
    the feed looks at first); gives up, saying so once, if it cannot."""

    def __init__(self, home: Path, say):
        self.say = say
        self.store: Store | None = None
        self.reader: Store | None = None
        self.ingester: Ingester | None = None
        try:
            self.store = Store.open(home)
            self.ingester = Ingester(home, self.store)
            self.reader = Store.open(home)
        except (OnegcError, sqlite3.Error, OSError) as exc:
            self._give_up(exc)

    def update(self, liveness: bool = False) -> None:
        """Ingest what is new (and, with ``liveness``, mark sessions whose runner is gone)."""
        if self.ingester is None:
            return
        try:
            self.ingester.ingest_all()
            if liveness:
                self.ingester.check_liveness()
        except (OnegcError, sqlite3.Error, OSError) as exc:
            self._give_up(exc)

    def _give_up(self, exc: Exception) -> None:
        self.say(f"warning: the store is not updated ({' '.join(str(exc).split())[:200]}); the session goes on, "
                 "and 'onegc reindex' rebuilds the store from the session folders later")
        self.close()

    def alerts(self, feed: LiveFeed, sessions: Iterable[str]) -> list[tuple[str, str]]:
        """The feed's alerts on ``sessions`` that no event line says, as (session, words)."""
        if self.reader is None:
            return []
        try:
            feed.read(self.reader)  # its alerts on events repeat the event lines: only the clock's are new
        except (sqlite3.Error, OSError) as exc:
            self._give_up(exc)
            return []
        wanted = set(sessions)
        return [(a.session_id, a.message.removeprefix(a.session_id).lstrip(": ")) for a in feed.due(time.time())
                if a.session_id in wanted and a.kind in FEED_ALERTS]

    def close(self) -> None:
        for store in (self.store, self.reader):
            if store is not None:
                try:
                    store.close()
                except sqlite3.Error:
                    pass
        self.store = self.reader = self.ingester = None


class _CtrlC:
    """Ctrl-C as a flag the following loop reads between its passes, not an exception raised
    wherever the main thread happens to be: a KeyboardInterrupt raised inside a library (pydantic
    building a validator on a lazy import, SQLite mid-commit) can come out as that library's own
    error, and the CLI then dies with a traceback instead of saying how to end the sessions (CI
    caught it once). A second Ctrl-C while a pass is still running raises at once."""

    def __init__(self) -> None:
        self.pressed = threading.Event()
        self.installed = False
        self.previous: signal._HANDLER = None

    def _on_sigint(self, signum, frame) -> None:
        if self.pressed.is_set():
            raise KeyboardInterrupt
        self.pressed.set()

    def __enter__(self) -> _CtrlC:
        if threading.current_thread() is threading.main_thread():  # only there can a handler be set
            self.previous = signal.signal(signal.SIGINT, self._on_sigint)
            self.installed = True
        return self

    def __exit__(self, *exc) -> None:
        if self.installed:  # as it was (None: a handler not set from Python, which signal() cannot restore)
            signal.signal(signal.SIGINT, self.previous if self.previous is not None else signal.SIG_DFL)

    def wait(self, seconds: float) -> None:
        """Sleep ``seconds``; raise KeyboardInterrupt if Ctrl-C came before or meanwhile."""
        if self.pressed.wait(seconds):
            raise KeyboardInterrupt


def follow(home: Path, session_ids: Iterable[str], out: TextIO = sys.stdout) -> dict[str, Progress]:
    """Print the sessions' progress until all have ended; returns how each one ended. Ctrl-C
    raises KeyboardInterrupt here, between two passes (``_CtrlC``)."""
    def say(line: str) -> None:  # one screen row each, whatever an agent put in its text
        print(row(line, terminal_width(out)), file=out, flush=True)

    paths = {sid: SessionPaths(runs_dir(home) / sid) for sid in session_ids}
    tails = {sid: JsonlTail(p.events) for sid, p in paths.items()}
    seen = {sid: Progress() for sid in paths}
    feed = LiveFeed()
    next_progress = time.monotonic() + PROGRESS_EVERY_S
    next_liveness = time.monotonic() + LIVENESS_EVERY_S
    with _CtrlC() as ctrl_c:
        store = _StoreCopy(home, say)
        try:
            while True:
                for sid, tail in tails.items():
                    events, bad = tail.read_events()
                    for b in bad:
                        say(f"warning: {b}")
                    for e in events:
                        if e.session_id != sid:
                            continue  # only its runner writes this file (the reader reports the rest)
                        seen[sid].see(e)
                        said = event_words(e, seen[sid].task)
                        if said:
                            say(f"[{time.strftime('%H:%M:%S', time.localtime(e.ts))}] {sid}: {said.line}")
                now = time.monotonic()
                store.update(liveness=now >= next_liveness)
                for sid, words in store.alerts(feed, paths):
                    say(f"[{time.strftime('%H:%M:%S')}] {sid}: ALERT {words}")
                if all(p.reason is not None for p in seen.values()):
                    return seen
                if now >= next_liveness:
                    for sid, p in seen.items():
                        if p.reason is None and tails[sid].at_end and (why := reconcile(paths[sid])):
                            p.end("harness_error", why)
                            say(f"[{time.strftime('%H:%M:%S')}] {sid}: {ended_words('harness_error', None, why).line}")
                    next_liveness = now + LIVENESS_EVERY_S
                if now >= next_progress:
                    for sid, p in seen.items():
                        if p.reason is None:
                            best = f"{p.best_live:.4f}" if p.best_live is not None else "-"
                            say(f"[{time.strftime('%H:%M:%S')}] {sid}: {p.state}, {clock(p.remaining_s)} left, "
                                f"{p.n_checkpoints} checkpoints, {best_name(metric_label(p.task))} {best}")
                    next_progress = now + PROGRESS_EVERY_S
                ctrl_c.wait(POLL_S)
        finally:
            store.close()
