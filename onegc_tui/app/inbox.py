"""What the ingest thread tells the monitor between two beats: how many events it stored, whether
any of them changes a sessions row, and its errors. Thread-safe.

The events themselves are not kept: everything shown is read from the store (whoever ingested
it), and this process's own ingest only says when to look sooner.
"""

from __future__ import annotations

import threading
from collections import deque
from operator import itemgetter
from typing import Any

_TYPE = itemgetter("type")

URGENT = {"checkpoint_scored", "control", "session_ended", "budget", "warning"}  # worth a look now, not at the beat
ROW_MOVERS = {"session_started", "session_ended", "budget", "checkpoint_scored", "warning"}  # change a sessions row


class Inbox:
    def __init__(self, max_errors: int = 100) -> None:
        self._lock = threading.Lock()
        self._count = 0
        self._rows_moved = False
        self._errors: deque[str] = deque(maxlen=max_errors)

    def put(self, events: list[dict[str, Any]]) -> bool:  # ingest thread
        """Count ``events`` (the ingest's records of them); True when one of them is urgent (the app
        wakes for it)."""
        types = set(map(_TYPE, events))
        with self._lock:
            self._count += len(events)
            self._rows_moved = self._rows_moved or bool(types & ROW_MOVERS)
        return bool(types & URGENT)

    def error(self, message: str) -> None:  # ingest thread
        self._errors.append(message)

    def take(self) -> tuple[int, bool, list[str]]:
        """Since the last take: the events stored, whether a sessions row moved, the errors."""
        with self._lock:
            count, moved, self._count, self._rows_moved = self._count, self._rows_moved, 0, False
        errors = []
        while self._errors:
            errors.append(self._errors.popleft())
        return count, moved, errors
