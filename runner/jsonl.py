"""Append-only JSONL: the event writer (one flushed line per event) and a whole-line tail reader.

The reader keeps a byte offset, returns only complete lines (a trailing partial line waits for
its newline) and reports a corrupt line by file and line number without stopping.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runner.events import Event
# runner.events (pydantic) is imported by the writer and by read_events: a reader of whole lines
# (the ingest, the CLI's start-up) needs neither

Clock = Callable[[], float]


class EventWriter:
    """Stamps ``session_id``/``seq``/``ts`` and appends one line per event; thread-safe.

    Re-opening an existing file continues the sequence after its last whole line.
    """

    def __init__(self, path: Path, session_id: str, clock: Clock = time.time):
        self.path = path
        self.session_id = session_id
        self.clock = clock
        self._lock = threading.Lock()
        self._seq = _last_seq(path)
        self._file = open(path, "ab", buffering=0)
        from runner.events import EVENT_TYPES, dump_event

        self._types, self._dump = EVENT_TYPES, dump_event

    @property
    def seq(self) -> int:
        return self._seq

    def emit(self, type_: str, **fields: Any) -> Event:
        cls = self._types[type_]
        with self._lock:
            event = cls(session_id=self.session_id, seq=self._seq + 1, ts=self.clock(), **fields)
            self._file.write(self._dump(event).encode() + b"\n")
            self._seq += 1
        return event

    def close(self) -> None:
        with self._lock:
            self._file.close()


def _last_seq(path: Path) -> int:
    if not path.exists():
        return 0
    last = 0
    for line in path.read_bytes().splitlines():
        try:
            last = max(last, int(json.loads(line)["seq"]))
        except (ValueError, KeyError, TypeError):
            continue
    return last


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
        yield from zip(range(first, first + len(lines)), lines)

    def read_block(self, max_bytes: int = 8 << 20) -> tuple[int, list[bytes | None]]:
        """The complete new lines as one list, and the line number of the first (``None`` for a
        line longer than ``max_bytes``, skipped); advances the offset. A reader of millions of
        lines (a reindex) takes them without a step of Python per line."""
        first = self.state.line_no + 1
        try:
            with open(self.path, "rb") as f:
                f.seek(self.state.offset)
                if self.state.in_long_line and not self._skip_long_line(f):
                    self.at_end = True
                    return first, []
                chunk = f.read(max_bytes if max_bytes > 0 else -1)
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
        lines: list[bytes | None] = chunk[: end + 1].splitlines()
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

        from runner.events import parse_event

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
    """Append one JSON object as a line with a single ``write`` (atomic for small lines)."""
    data = (json.dumps(record, separators=(",", ":")) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
