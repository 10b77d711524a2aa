"""Append-only JSONL: whole-line writes, the event writer, and a whole-line tail reader.

Every line is written by one ``write`` that lands whole or not at all (:func:`append_whole`): a
short write, which is what a filling disk gives, is cut back off the file and raised as
:class:`~runner.errors.DiskFull`, so a reader never meets half a line the runner wrote.

The reader keeps a byte offset, returns only complete lines (a trailing partial line waits for
its newline) and reports a corrupt line by file and line number without stopping.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from runner.errors import NO_SPACE_ERRNOS, DiskFull
from runner.wire import chain

if TYPE_CHECKING:
    from runner.wire.coalesce import WarningFolder
    from runner.wire.events import Event
    from runner.wire.record_caps import RecordLimits, StreamCap
# runner.wire.events (pydantic) is imported by the writer and by read_events: a reader of whole lines
# (the ingest, the CLI's start-up) needs neither

Clock = Callable[[], float]
OnNoSpace = Callable[[DiskFull], None]
APPEND_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
# While the disk is full these wait in memory (in order) until the runner has room again; the
# routine streams (transcript, GPU samples, heartbeats) are dropped and counted instead.
ROUTINE_TYPES = frozenset({"transcript", "gpu", "heartbeat"})
HELD_LIMIT_BYTES = 1 << 20  # beyond this much held, even essential events are dropped (and counted)


def append_whole(fd: int, data: bytes, path: Path | str, end: int | None = None) -> int:
    """Append ``data`` to ``fd`` (opened ``O_APPEND``) with one ``write``: all of it or none.

    ``end`` is the file's size before the write when the caller is its only writer (else it is
    read with ``fstat``; concurrent writers hold a lock around the call). Returns the new size.
    Raises :class:`DiskFull` for no room (nothing of ``data`` stays in the file)."""
    start = os.fstat(fd).st_size if end is None else end
    try:
        written = os.write(fd, data)
    except OSError as exc:
        if exc.errno in NO_SPACE_ERRNOS:
            raise DiskFull(path, (exc.strerror or "no space").lower()) from None
        raise
    if written != len(data):
        os.ftruncate(fd, start)  # the part that landed goes: never half a line
        raise DiskFull(path, f"no space left on the device (only {written} of {len(data)} bytes fitted)")
    return start + written


class EventWriter:
    """Stamps ``session_id``/``seq``/``ts``/``prev`` and appends one whole line per event; thread-safe.

    Every line carries the link of the line before it (``prev``: runner/wire/chain.py; the first
    line the session's genesis), so the file is a hash chain that only this writer extends.
    Re-opening an existing file continues the sequence and the chain after its last whole line. With ``fold``,
    warnings are coalesced per cause (runner/wire/coalesce.py). When a write finds no room,
    ``on_no_space`` is told once and the writer *holds*: essential events wait in memory, in
    order, for :meth:`release_held` (the runner calls it once it has made room); routine ones
    are dropped and counted in :attr:`dropped`. With ``limits``, transcript events past the
    session's caps are left out and counted in ``truncated`` events (runner/wire/record_caps.py),
    as are the raw copies' lines left out (:class:`RawLog`).
    """

    def __init__(self, path: Path, session_id: str, clock: Clock = time.time, fold: WarningFolder | None = None,
                 on_no_space: OnNoSpace | None = None, limits: RecordLimits | None = None):
        self.path = path
        self.session_id = session_id
        self.clock = clock
        self.fold = fold
        self.limits = limits
        self.on_no_space = on_no_space
        self.dropped: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._seq, self._head, lines = _tail_state(path, session_id)  # _head: the link the next line carries
        self.written_head = self._head  # the link of the last line in the file (held lines are not yet in it)
        self.written_lines = lines  # whole lines in the file
        self._fd = os.open(path, APPEND_FLAGS, 0o644)
        self._end = os.fstat(self._fd).st_size
        self._held: list[bytes] | None = None  # not None while the disk is full
        self._held_bytes = 0

    @property
    def seq(self) -> int:
        return self._seq

    @property
    def holding(self) -> bool:
        return self._held is not None

    def emit(self, type_: str, **fields: Any) -> Event | None:
        """Write one event; returns it, or None when it was folded into a later warning or dropped."""
        with self._lock:
            now = self.clock()
            if self.fold is not None:
                for code, message, count in (self.fold.drain() if type_ == "session_ended" else self.fold.due(now)):
                    self._put("warning", now, {"code": code, "message": message, "count": count})
                if type_ == "warning" and not self.fold.admit(fields["code"], fields["message"], now):
                    return None
            if self.limits is None:
                return self._put(type_, now, fields)
            for counted in (self.limits.drain() if type_ == "session_ended" else self.limits.due(now)):
                self._put("truncated", now, counted)
            if type_ == "transcript":
                cap, event = self.limits.transcript, self._put_transcript(now, fields, self.limits)
            elif type_ == "process":  # the scripts an agent starts: capped too (a loop starts them without end)
                cap = self.limits.process
                event = self._put(type_, now, fields, cap)
            else:
                return self._put(type_, now, fields)
            if event is None and (counted_now := cap.due(now)):  # the first drop: at once
                self._put("truncated", now, counted_now)
            return event

    def _put_transcript(self, now: float, fields: dict, limits: RecordLimits) -> Event | None:
        from runner.wire.record_caps import carries_usage

        keep = carries_usage(fields)
        if keep and limits.transcript.reached and fields.get("text"):
            fields = {**fields, "text": ""}  # past the cap a usage record keeps its figures, not its text
        return self._put("transcript", now, fields, limits.transcript, keep)

    def _put(self, type_: str, now: float, fields: dict, cap: StreamCap | None = None, keep: bool = False) -> Event | None:
        if self._held is not None and type_ in ROUTINE_TYPES:
            self.dropped[type_] += 1
            return None
        from runner.wire.events import EVENT_TYPES, dump_event

        event = EVENT_TYPES[type_](session_id=self.session_id, seq=self._seq + 1, ts=now, prev=self._head, **fields)
        try:
            line = dump_event(event).encode() + b"\n"
        except ValueError:  # a lone surrogate that a boundary let through (runner/wire/untrusted.py)
            from runner.wire.untrusted import recordable

            event = EVENT_TYPES[type_](session_id=self.session_id, seq=self._seq + 1, ts=now, prev=self._head,
                                       **recordable(fields))
            line = dump_event(event).encode() + b"\n"
        if cap is not None and not cap.admit(len(line), keep):
            return None
        if self._held is None:
            try:
                self._write(line)
                self._seq += 1
                self._head = self.written_head
                return cast("Event", event)  # an instance of one of the union's classes
            except DiskFull as exc:
                self._held = []
                if self.on_no_space is not None:
                    self.on_no_space(exc)
                if type_ in ROUTINE_TYPES:
                    self.dropped[type_] += 1
                    return None
        if self._held_bytes + len(line) > HELD_LIMIT_BYTES:
            self.dropped[type_] += 1
            return None
        self._held.append(line)
        self._held_bytes += len(line)
        self._seq += 1
        self._head = chain.link(line[:-1])  # held lines are written in order: the next one follows it
        return cast("Event", event)

    def _write(self, line: bytes) -> None:
        self._end = append_whole(self._fd, line, self.path, self._end)
        self.written_head = chain.link(line[:-1])
        self.written_lines += 1

    def release_held(self) -> None:
        """Write the events held while the disk was full, in order, and write normally again;
        raises :class:`DiskFull` (and keeps holding the rest) if there is still no room."""
        with self._lock:
            while self._held:
                self._write(self._held[0])
                self._held_bytes -= len(self._held.pop(0))
            self._held = None

    def close(self) -> None:
        with self._lock:
            os.close(self._fd)


def _tail_state(path: Path, session_id: str) -> tuple[int, str, int]:
    """An existing file's last ``seq``, the link of its last whole line and its number of whole
    lines (a new file: 0, the session's genesis, 0)."""
    last, head, lines = 0, chain.genesis(session_id), 0
    if not path.exists():
        return last, head, lines
    with open(path, "rb") as f:  # line by line: a record of any size in bounded memory
        for line in f:
            if not line.endswith(b"\n"):
                break  # a torn last line: the next write follows the last whole one
            head = chain.link(line[:-1])
            lines += 1
            try:
                last = max(last, int(json.loads(line)["seq"]))
            except (ValueError, KeyError, TypeError):
                continue
    return last, head, lines


@dataclass(frozen=True)
class BadLine:
    """A line that is not a valid event; reported, never fatal."""

    path: Path
    line_no: int
    error: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line_no}: corrupt event line ({self.error})"


@dataclass
class TailState:
    offset: int = 0
    line_no: int = 0
    in_long_line: bool = False  # skipping the rest of an oversized line (not persisted: a restart reports its tail)


SCAN_CHUNK = 1 << 20


class JsonlTail:
    """Reads new whole lines from ``path`` starting at a byte offset.

    A line longer than one read (``max_bytes``) is not one the runner writes (its events are
    bounded); it is skipped up to its newline and reported, so it can never freeze the reader
    the way a line that waits forever for its end would.
    """

    def __init__(self, path: Path, state: TailState | None = None):
        self.path = path
        self.state = state or TailState()
        self.at_end = False  # the last read reached the end of the file: nothing more to read now

    def read_lines(self, max_bytes: int = 8 << 20) -> Iterator[tuple[int, bytes | None]]:
        """Yield ``(line_no, line)`` for each complete new line, ``(line_no, None)`` for one that
        was longer than ``max_bytes`` (skipped); advances the offset."""
        first, lines = self.read_block(max_bytes)
        yield from zip(range(first, first + len(lines)), lines, strict=True)

    def read_block(self, max_bytes: int = 8 << 20) -> tuple[int, list[bytes | None]]:
        """The complete new lines as one list, and the line number of the first (``None`` for a
        line longer than ``max_bytes``, skipped); advances the offset. A reader of millions of
        lines (a reindex) takes them without a step of Python per line."""
        first = self.state.line_no + 1
        try:
            # unbuffered, and no more asked for than the file holds: a buffered read of max_bytes
            # sized a buffer of max_bytes for the few lines a live session adds (~60 µs a read,
            # a quarter of an idle monitor's ingest thread; now ~15 µs)
            with open(self.path, "rb", buffering=0) as f:
                f.seek(self.state.offset)
                if self.state.in_long_line and not self._skip_long_line(f):
                    self.at_end = True
                    return first, []
                there = max(0, os.fstat(f.fileno()).st_size - self.state.offset)
                chunk = f.read(min(max_bytes, there) if max_bytes > 0 else -1) or b""
                end = chunk.rfind(b"\n")
                if end < 0 and max_bytes > 0 and len(chunk) == max_bytes:
                    self.state.line_no += 1
                    self.state.offset += len(chunk)
                    self.state.in_long_line = True
                    self._skip_long_line(f)
                    self.at_end = False
                    return first, [None]
        except FileNotFoundError:
            self.at_end = True
            return first, []
        self.at_end = max_bytes <= 0 or len(chunk) < max_bytes
        if end < 0:
            return first, []
        lines: list[bytes | None] = list(chunk[: end + 1].splitlines())
        self.state.line_no += len(lines)
        self.state.offset += end + 1
        return first, lines

    def _skip_long_line(self, f) -> bool:
        """Move past the newline that ends an oversized line; False while it has not come yet."""
        while True:
            block = f.read(SCAN_CHUNK)
            if not block:
                return False
            nl = block.find(b"\n")
            if nl >= 0:
                self.state.offset += nl + 1
                self.state.in_long_line = False
                f.seek(self.state.offset)
                return True
            self.state.offset += len(block)

    def read_records(self, max_bytes: int = 1 << 20) -> tuple[list[dict], list[str]]:
        """New whole lines as JSON objects, plus a message for each line that is not one."""
        records: list[dict] = []
        bad: list[str] = []
        for line_no, line in self.read_lines(max_bytes):
            if line is None:
                bad.append(f"{self.path}:{line_no}: {too_long(max_bytes)}")
                continue
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                if not isinstance(record, dict):
                    raise ValueError("not an object")
                records.append(record)
            except ValueError as exc:
                bad.append(f"{self.path}:{line_no}: not a JSON object ({exc})"[:300])
        return records, bad

    def read_events(self, max_bytes: int = 8 << 20) -> tuple[list[Event], list[BadLine]]:
        from pydantic import ValidationError

        from runner.wire.events import parse_event

        events: list[Event] = []
        bad: list[BadLine] = []
        for line_no, line in self.read_lines(max_bytes):
            if line is None:
                bad.append(BadLine(self.path, line_no, too_long(max_bytes)))
                continue
            if not line.strip():
                continue
            try:
                events.append(parse_event(line))
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                bad.append(BadLine(self.path, line_no, f"{where}: {first['msg']}"[:200]))
        return events, bad


def too_long(max_bytes: int) -> str:
    return f"a line of over {max_bytes >> 10} KiB (no event is that long): skipped"


def read_all_events(path: Path) -> tuple[list[Event], list[BadLine]]:
    return JsonlTail(path).read_events(max_bytes=-1)


def append_json_line(path: Path, record: dict) -> None:
    """Append one JSON object as a whole line (several processes may append: each holds the
    file's lock for its write, so a line cut short by a full disk is taken back off whole)."""
    data = (json.dumps(record, separators=(",", ":")) + "\n").encode()
    fd = os.open(path, APPEND_FLAGS, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        append_whole(fd, data, path)
    finally:
        os.close(fd)


class RawLog:
    """An append-only copy of a stream the runner must keep reading (the agent's stdout and
    stderr): whole lines, and a write that finds no room never stops the reading — the rest is
    counted in :attr:`lost_bytes`, and ``on_no_space`` is told once. With ``cap``, lines past the
    session's byte cap for the stream are not copied; the cap counts them for a ``truncated``
    event (runner/wire/record_caps.py)."""

    def __init__(self, path: Path, on_no_space: OnNoSpace | None = None, cap: StreamCap | None = None):
        self.path = path
        self.on_no_space = on_no_space
        self.cap = cap
        self.lost_bytes = 0
        self._open = False  # the last line written has no newline yet: its pieces follow
        self._fd = os.open(path, APPEND_FLAGS, 0o644)
        self._end = os.fstat(self._fd).st_size

    def write(self, data: bytes, continued: bool = False) -> None:
        """Append ``data``: a line, or with ``continued`` the next piece of the line before it (a line
        longer than the runner reads at once, runner/wire/lines.py). A piece goes where its line's
        head went; a cap reached inside a line closes it with a newline, so the copy stays whole lines."""
        if continued and not self._open:
            return  # the rest of a line that was left out
        if self.cap is not None and not self.cap.admit(len(data)):
            if not continued:
                return
            data = b"\n"
        self._open = not data.endswith(b"\n")
        if self.lost_bytes:
            self.lost_bytes += len(data)
            return
        try:
            self._end = append_whole(self._fd, data, self.path, self._end)
        except (DiskFull, OSError) as exc:  # any failure: the copy stops, the reading does not
            self.lost_bytes += len(data)
            if isinstance(exc, DiskFull) and self.on_no_space is not None:
                self.on_no_space(exc)

    def close(self) -> None:
        os.close(self._fd)
