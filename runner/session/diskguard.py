"""Room to finish a session when the disk fills up: a reserve, and the one verdict "disk full".

At its start the runner sets aside :data:`RESERVE_BYTES` of the session folder's filesystem in a
preallocated file (``.reserve``). When a write of the runner finds no room, or the free space
(the reserve aside) drops under :data:`LOW_WATER_BYTES`, :meth:`DiskGuard.trip` records the
first path that failed and the runner stops the agent (harness error, "disk full: …" naming that
path). Only once the agent's tree is gone — it cannot take the room back — does the runner
:meth:`~DiskGuard.release` the reserve, and write what it held (runner/wire/jsonl.py), the official
scores, ``result.json`` and ``session_ended`` into it.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from runner.errors import NO_SPACE_ERRNOS, DiskFull

RESERVE_NAME = ".reserve"
# the end of a session: held events (≤ 1 MiB, runner/wire/jsonl.py), official scores, result.json
# (a row per evaluated checkpoint), session_ended, a line in runner.log: well under this
RESERVE_BYTES = 4 << 20
LOW_WATER_BYTES = 1 << 20  # less free space than this and the next write would fail: stop now


class DiskReserve:
    """A preallocated file whose blocks the runner gives back when it needs them."""

    def __init__(self, path: Path, size: int = RESERVE_BYTES):
        self.path = path
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            _allocate(fd, size)
        except OSError as exc:
            os.close(fd)
            path.unlink(missing_ok=True)
            if exc.errno in NO_SPACE_ERRNOS:
                raise DiskFull(path.parent, f"no room for the runner's {size >> 20} MiB reserve") from None
            raise
        os.close(fd)

    def release(self) -> None:
        self.path.unlink(missing_ok=True)


def _allocate(fd: int, size: int) -> None:
    """Real blocks, not a sparse file (written zeros where fallocate is not supported)."""
    try:
        os.posix_fallocate(fd, 0, size)
        return
    except OSError as exc:
        if exc.errno in NO_SPACE_ERRNOS:
            raise
    block = b"\0" * (1 << 20)
    for _ in range(0, size, len(block)):
        if os.write(fd, block) != len(block):
            raise OSError(28, "No space left on device")
    os.fsync(fd)


class DiskGuard:
    """Watches the filesystem of a session folder; trips once, on the first sign it is full."""

    def __init__(self, root: Path, reserve_bytes: int = RESERVE_BYTES, low_water: int = LOW_WATER_BYTES):
        self.root = root
        self.low_water = low_water
        self.reserve = DiskReserve(root / RESERVE_NAME, reserve_bytes)
        self._tripped = threading.Event()
        self._lock = threading.Lock()
        self.path: str | None = None
        self.cause = ""

    @property
    def full(self) -> bool:
        return self._tripped.is_set()

    def trip(self, exc: DiskFull | OSError) -> None:
        """Record a write that found no room (any thread; never writes anything itself)."""
        with self._lock:
            if self._tripped.is_set():
                return
            if isinstance(exc, DiskFull):
                self.path, self.cause = exc.path, exc.cause
            else:
                self.path = str(getattr(exc, "filename", None) or self.root)
                self.cause = (exc.strerror or str(exc)).lower()
            self._tripped.set()

    def check(self) -> bool:
        """Trip when the free space has run low, before a write fails; True once tripped."""
        if not self._tripped.is_set():
            try:
                st = os.statvfs(self.root)
            except OSError:
                return self.full
            free = st.f_bavail * st.f_frsize
            if free < self.low_water:
                self.trip(DiskFull(self.root, f"no space left on the device ({free >> 10} KiB free)"))
        return self.full

    @property
    def reason(self) -> str:
        """The session's end detail: one line naming the path."""
        return f"disk full: {self.path}: {self.cause}; the agent was stopped: free space there and run again"

    def release(self) -> None:
        """Give the reserve back for the session's last writes (the agent must be gone by now)."""
        self.reserve.release()
