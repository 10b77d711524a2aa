"""The ingester: tails every session's ``events.jsonl`` into SQLite, exactly once.

A watchdog observer over ``runs/`` marks sessions dirty (inotify locally; the polling observer
where ``runs/`` lives on a network filesystem); each drain reads to the end of the file from
the persisted byte offset, takes whole lines only, and commits the batch together with its new
offset. A corrupt line is recorded with its file and line number and skipped. Watchdog calls
are only "something changed" hints (it drops repeats under load), and a periodic rescan backs
them up. Sessions whose runner died without ``session_ended`` (or whose folder vanished) are
marked failed in the store; that verdict is lifted if the session's own events later show it
alive (a session created, then launched late).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, cast

from onegc_tui.store import IngestBatch, Store
from runner import verdicts
from runner.config import SessionPaths
from runner.jsonl import JsonlTail, TailState, too_long
from runner.liveness import lock_held
from runner.reconcile import clean_up_after, reconcile

if TYPE_CHECKING:
    from watchdog.events import FileSystemEvent
    from watchdog.observers.api import BaseObserver

    from runner.events import Event
# The parsers (pydantic) are imported with the first new line, watchdog with the first LiveIngest:
# `onegc sessions` over a store that is current starts without either (start-up, README)

MAX_BATCH_BYTES = 4 << 20  # one transaction per ~4 MiB of new lines (and no event line is longer)
MAX_CONFIG_BYTES = 1 << 20  # session.json is a few hundred bytes
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

OnEvents = Callable[[str, list["Event"]], None]
_TYPE, _SESSION = itemgetter("type"), itemgetter("session_id")
_FIELDS = attrgetter("__dict__")  # an event model's fields, as the store takes them


@dataclass
class Ingester:
    """Ingests ``home/runs/*``; ``on_events(session_id, new_events)`` sees every new event once."""

    home: Path
    store: Store
    on_events: OnEvents | None = None
    on_error: Callable[[str], None] | None = None
    _known: dict[str, SessionPaths] = field(default_factory=dict)
    _live: set[str] = field(default_factory=set)  # known and not ended: the ones looked at every poll
    _tails: dict[str, JsonlTail] = field(default_factory=dict)
    _held: list[tuple[str, list[Event]]] | None = None  # hold(): new events wait for deliver()
    _files: dict[str, _Watched] = field(default_factory=dict)

    def hold(self) -> None:
        """Keep the new events from ``on_events`` until :meth:`deliver`: the caller writes in one
        transaction, and what it shows must be what was committed (exactly once, even if the
        commit fails and the lines are read again)."""
        self._held = []

    def deliver(self) -> None:
        held, self._held = self._held or [], None
        if self.on_events is not None:
            for sid, events in held:
                self.on_events(sid, events)

    def discard(self) -> None:
        """The transaction of what was read did not commit: nothing of it is shown, and it is read again."""
        self._held = None
        self.forget_place()

    @property
    def runs(self) -> Path:
        return self.home / "runs"

    def discover(self, only: Collection[str] | None = None) -> list[str]:
        """Register session folders not seen before (of ``only``, where given); returns their ids."""
        added: list[str] = []
        if not self.runs.is_dir():
            return added
        for folder in sorted(self.runs.iterdir()):
            sid = folder.name
            if sid in self._known or (only is not None and sid not in only) or not is_session_folder(folder):
                continue
            paths = SessionPaths(folder)
            config = self._read_config(paths)
            self.store.register_session(sid, str(folder), config)
            self._apply_verdicts(sid, paths)
            self._known[sid] = paths
            if (self.store.session(sid) or {}).get("state") not in ("ended", "failed"):
                self._live.add(sid)  # an ended one: nothing more will come, the looks skip it
            added.append(sid)
        return added

    def _apply_verdicts(self, sid: str, paths: SessionPaths) -> None:
        found, reason = verdicts.current(paths)
        if found:
            self.store.set_disqualified(sid, reason)

    def _read_config(self, paths: SessionPaths) -> dict:
        """``session.json`` as written by onegc; anything else is reported, and the session is
        still shown (its ``session_started`` event says what it is): a bad file hides nothing."""
        try:
            with open(paths.config, "rb") as f:
                raw = f.read(MAX_CONFIG_BYTES + 1)
            if len(raw) > MAX_CONFIG_BYTES:
                raise ValueError(f"over {MAX_CONFIG_BYTES >> 10} KiB")
            config = json.loads(raw)
            if not isinstance(config, dict):
                raise ValueError("not a JSON object")
            return config
        except (OSError, ValueError) as exc:
            self._error(f"{paths.config}: unreadable ({str(exc)[:120]}); the session is shown from its events")
            return {}

    def ingest_session(self, sid: str) -> int:
        """Read everything new of one session; returns how many new events were stored."""
        paths = self._known.get(sid)
        if paths is None:
            return 0
        watched = self._files.get(sid)
        if watched is None:
            watched = self._files[sid] = _Watched(str(paths.events))
        key = watched.key
        ident, size = _file_state(key)
        tail = self._tails.get(sid)
        if tail is None or ident != watched.ident:
            # first look at this file (or again, after a write that did not commit): where the
            # store has it; then this ingester's own place in it, which it only moves as it commits
            known = self.store.ingested_file(key)
            if known is not None and ident is not None and known != _file_id(ident):
                self._start_over(sid, paths)  # another attempt in this folder (a study retry)
            offset, line_no = self.store.offset(key)
            if tail is None or (tail.state.offset, tail.state.line_no) != (offset, line_no):
                tail = self._tails[sid] = JsonlTail(paths.events, TailState(offset, line_no))
            watched.ident = ident
        elif size == tail.state.offset and not tail.state.in_long_line:
            return 0  # nothing new since it was read (and stored): no query, no open
        try:
            return self._read_new(sid, paths, key, _file_id(ident), tail)
        except BaseException:
            self.forget_place(sid)  # what was read may not be stored: the store's place counts
            raise

    def unread(self, sid: str) -> int:
        """How many bytes of a session's file this ingester has not read (a stat, no query); a
        file it has not looked at, or another file in its place, counts as more than any batch."""
        tail, watched = self._tails.get(sid), self._files.get(sid)
        if tail is None or watched is None or tail.state.in_long_line:
            return MAX_BATCH_BYTES
        ident, size = _file_state(watched.key)
        if ident != watched.ident or size < tail.state.offset:
            return MAX_BATCH_BYTES
        return size - tail.state.offset

    def forget_place(self, sid: str | None = None) -> None:
        """Take the place in a session's file (all of them: ``None``) from the store next time: a
        write of what was read did not commit."""
        if sid is None:
            self._tails.clear()
            self._files.clear()
        else:
            self._tails.pop(sid, None)
            self._files.pop(sid, None)

    def _read_new(self, sid: str, paths: SessionPaths, key: str, file_id: str | None, tail: JsonlTail) -> int:
        offset = tail.state.offset
        # the store needs each event's fields; only a caller of on_events needs the models (the
        # monitor, a few thousand lines a second at most): a catch-up or a reindex parses to dicts
        typed = self.on_events is not None
        total = 0
        while True:
            first, block = tail.read_block(MAX_BATCH_BYTES)
            batch = self._fast_batch(sid, first, block, typed)
            if batch is None:
                batch = self._parse_lines(sid, first, block, typed)
            records, raws, models, lines, bad = batch
            if tail.state.offset == offset:
                break
            new = self.store.ingest(IngestBatch(key, sid, records, raws, tail.state.offset, tail.state.line_no, bad, lines,
                                                file_id))
            for n, err in new.rejected:
                self._error(f"{paths.events}:{n}: event line skipped ({err})")
            offset = tail.state.offset
            total += len(new.new)
            if new.new and self.on_events is not None:
                events = models if len(new.new) == len(models) else [models[i] for i in new.new]
                if self._held is None:
                    self.on_events(sid, events)
                else:
                    self._held.append((sid, events))
            if "session_ended" in map(_TYPE, records) and (  # (every line new: no look at each)
                    len(new.new) == len(records) or any(records[i]["type"] == "session_ended" for i in new.new)):
                self._apply_verdicts(sid, paths)  # the runner's own (an integrity rule) comes with its end
                self._live.discard(sid)
            if tail.at_end:
                break  # no second open just to find nothing more
        return total

    def _start_over(self, sid: str, paths: SessionPaths) -> None:
        self.store.forget_session(sid)
        self.store.register_session(sid, str(paths.root), self._read_config(paths))
        self._tails.pop(sid, None)
        self._live.add(sid)

    @staticmethod
    def _fast_batch(sid: str, first: int, lines: list[bytes | None], typed: bool) -> tuple | None:
        """A batch of good lines of this session, validated by maps in C (a catch-up or reindex
        reads millions, the monitor thousands a second): the fields of each, and where ``typed``
        the models; ``None`` when any line is not good, to be read line by line."""
        if not lines:
            return [], [], [], [], []
        if None in lines:
            return None
        good = cast("list[bytes]", lines)
        from onegc_tui.records import validate_event, validate_record

        try:
            if typed:
                models = list(map(validate_event, good))
                records = list(map(_FIELDS, models))
            else:
                models, records = [], list(map(validate_record, good))
            raws = list(map(bytes.decode, good))
        except ValueError:  # a corrupt or blank line (ValidationError), or one not UTF-8
            return None
        if set(map(_SESSION, records)) != {sid}:
            return None
        return records, raws, models, range(first, first + len(lines)), []

    @staticmethod
    def _parse_lines(sid: str, first: int, block: list[bytes | None], typed: bool) -> tuple:
        """Each line on its own: the models where ``typed``; every bad line with its reason."""
        from pydantic import ValidationError

        from onegc_tui.records import parse_record
        from runner.events import parse_event

        records: list[dict] = []
        raws: list[str] = []
        models: list[Event] = []
        lines: list[int] = []
        bad: list[tuple[int, str]] = []
        for n, line in enumerate(block, first):
            if line is None:
                bad.append((n, too_long(MAX_BATCH_BYTES)))
                continue
            try:
                event = parse_event(line) if typed else None
                record = event.__dict__ if event is not None else parse_record(line)
            except ValidationError as exc:
                if not line.strip():
                    continue
                err = exc.errors()[0]
                bad.append((n, f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}"[:200]))
                continue
            if record["session_id"] != sid:  # only this session's runner writes this file
                bad.append((n, f"an event of session {record['session_id'][:60]!r} in {sid}'s file: skipped"))
                continue
            records.append(record)
            raws.append(line.decode("utf-8", errors="replace"))
            lines.append(n)
            if event is not None:
                models.append(event)
        return records, raws, models, lines, bad

    def ingest_all(self, only: Collection[str] | None = None) -> int:
        if only is None and not self._known and not self.store.conn.in_transaction:  # from scratch: two cores
            from onegc_tui.reindex import catch_up_in_two

            events = catch_up_in_two(self)
            if events is not None:
                return events
        self.discover(only)
        return sum(self.ingest_session(sid) for sid in list(self._known))

    @property
    def live(self) -> frozenset[str]:
        """The sessions not ended (kept as they change: a poll over 10 000 finished sessions
        copies none of them)."""
        return frozenset(self._live)

    def catch_up(self) -> int:
        """Everything new in every session folder, then the liveness check (the CLI's one-shot view)."""
        n = self.ingest_all()
        self.check_liveness()
        return n

    def check_liveness(self) -> list[str]:
        """Mark sessions failed whose runner is gone (runner/reconcile.py): running ones, and
        queued ones too — a runner that died before its first event, a folder deleted before it
        started; returns their ids."""
        failed = []
        for row in self.store.sessions("state IN ('queued', 'running', 'paused')"):
            sid = row["session_id"]
            if sid not in self._known:
                continue
            if lock_held(self._known[sid]):
                continue  # its runner holds the session's lock: alive (an open and a flock, every RESCAN_S)
            self.ingest_session(sid)  # a runner that just ended has written session_ended
            if (self.store.session(sid) or {}).get("state") in ("ended", "failed"):
                continue
            reason = reconcile(self._known[sid])
            if reason:
                self.store.mark_failed(sid, reason)
                clean_up_after(self._known[sid])
                failed.append(sid)
        return failed

    def _error(self, message: str) -> None:
        if self.on_error:
            self.on_error(message)


@dataclass
class _Watched:
    """One session's ``events.jsonl`` as this ingester last read it."""

    key: str  # its path, as the store keys its offset
    ident: tuple[int, int] | None = None  # (device, inode): another file under the same path is another attempt


def is_session_folder(folder: Path) -> bool:
    """A session's folder under ``runs`` (an earlier attempt's, ``<id>.attempt-<n>``, is its
    record, not a session)."""
    return ".attempt-" not in folder.name and (folder / "session.json").is_file()


def hold_back(unread: int, last_read: int, held_for: float) -> bool:
    """Whether what the live sessions wrote waits for the next look: at rest (the last look read
    ``BUSY_LINES`` events at most), less than ``BUSY_BYTES`` of it, for ``HOLD_S`` at most."""
    return last_read <= BUSY_LINES and unread < BUSY_BYTES and held_for < HOLD_S


def _file_state(path: str) -> tuple[tuple[int, int] | None, int]:
    """The file's identity (device, inode) and size; ``(None, 0)`` when it is not there. By its
    path as a str, with no text made: ten times a second for each live session, at rest."""
    try:
        st = os.stat(path)
    except OSError:
        return None, 0
    return (st.st_dev, st.st_ino), st.st_size


def _file_id(ident: tuple[int, int] | None) -> str | None:
    """The identity as the store keeps it ("device:inode")."""
    return None if ident is None else f"{ident[0]}:{ident[1]}"


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

    The store is opened on that thread (one connection per thread).
    """

    def __init__(self, home: Path, on_events: OnEvents | None = None, on_error: Callable[[str], None] | None = None,
                 on_sessions: Callable[[list[str]], None] | None = None, rescan_s: float = RESCAN_S, polling: bool | None = None):
        self.home = home
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

        (self.home / "runs").mkdir(parents=True, exist_ok=True)
        observer = PollingObserver(timeout=POLL_INTERVAL_S) if self.polling else Observer()
        # only writes and new files: the kernel then never reports our own reads to us
        observer.schedule(_Dirty(self._mark),  # type: ignore[arg-type]  # its dispatch is all watchdog calls
                          str(self.home / "runs"), recursive=True, event_filter=_appear_events())
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
            with store.transaction():  # one commit for every session that wrote
                for sid in sorted(targets):
                    try:
                        read += ingester.ingest_session(sid)
                    except Exception as exc:  # a broken folder must not stop the others
                        ingester._error(f"ingesting {sid} failed: {type(exc).__name__}: {exc}")
        except sqlite3.Error as exc:  # the commit: nothing is shown, and the lines are read again
            ingester.discard()
            ingester._error(f"writing {self.home / 'onegc.db'} failed: {exc}")
        else:
            ingester.deliver()
        return read

    def _run(self) -> None:
        try:  # below the drawing thread: on a busy machine a key press goes first (Linux: per-thread nice)
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), INGEST_NICE)
        except (OSError, AttributeError):
            pass
        store = Store.open(self.home)
        ingester = Ingester(self.home, store, self.on_events, self.on_error)
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
