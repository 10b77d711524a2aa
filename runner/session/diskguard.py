"""Room to finish a session when the disk fills up: a reserve, and the one verdict "disk full".

At its start the runner sets aside :data:`RESERVE_BYTES` of the session folder's filesystem in a
preallocated file (``.reserve``). When a write of the runner finds no room, or the free space
(the reserve aside) drops under :data:`LOW_WATER_BYTES`, :meth:`DiskGuard.trip` records the
first path that failed and the runner stops the agent (harness error, "disk full: …" naming that
path). Only once the agent's tree is gone — it cannot take the room back — does the runner
:meth:`~DiskGuard.release` the reserve, and write what it held (runner/wire/jsonl.py), the official
scores, ``result.json`` and ``session_ended`` into it.

Whose doing a full disk was decides whether a study runs the session again
(runner/wire/end_reasons.py): :meth:`DiskGuard.end` measures what the agent's own folders (its
workspace, its home, its raw output) grew by since :meth:`~DiskGuard.mark_start`. When that is at
least :data:`AGENT_SHARE` of the room that was free then, or a folder of the agent's cannot be
read (it hid what it wrote), the agent filled the disk: ``agent_failed``, the session's result.
Otherwise something else filled it (another tenant of the disk, the harness's own files):
``harness_error``, and a study runs the session again.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from runner.errors import NO_SPACE_ERRNOS, DiskFull
from runner.wire.untrusted import clean

RESERVE_NAME = ".reserve"
# the end of a session: held events (≤ 1 MiB, runner/wire/jsonl.py), official scores, result.json
# (a row per evaluated checkpoint), session_ended, a line in runner.log: well under this
RESERVE_BYTES = 4 << 20
LOW_WATER_BYTES = 1 << 20  # less free space than this and the next write would fail: stop now
# The agent's folders grew by at least this share of the room free at its start: the agent filled the
# disk (an honest run that needs most of a disk is told so, and its end is still its own result)
AGENT_SHARE = 0.5
WALK_LIMIT = 500_000  # entries counted at most; more files than this is the agent's doing on its own


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
        self._agent_folders: tuple[Path, ...] = ()
        self._start: tuple[int, Usage] | None = None
        self._verdict: tuple[str, str] | None = None

    def mark_start(self, agent_folders: Iterable[Path]) -> None:
        """Note the room free and what the agent's folders hold, just before the agent starts."""
        self._agent_folders = tuple(agent_folders)
        self._start = (_free(self.root), usage(self._agent_folders))

    def end(self) -> tuple[str, str]:
        """The session's end reason and detail for a full disk: whose doing it was (module docstring);
        measured once, at the first call."""
        if self._verdict is None:
            self._verdict = self._judge()
        return self._verdict

    def _judge(self) -> tuple[str, str]:
        if self._start is None:
            return "harness_error", self.reason
        free, before = self._start
        now = usage(self._agent_folders)
        grown = now.bytes - before.bytes
        head = f"disk full: {self.path}: {self.cause}"
        if now.hidden:
            return "agent_failed", f"{head}; the agent hid its files from the runner ({now.hidden}): the agent's doing"
        if now.entries >= WALK_LIMIT or (free and grown >= AGENT_SHARE * free):
            return "agent_failed", (f"{head}; the agent's own files grew by {grown >> 20} MiB ({now.entries} entries) "
                                    f"of the {free >> 20} MiB free when it started: the agent's doing")
        return "harness_error", (f"{self.reason} (the agent's files grew by {grown >> 20} MiB of the "
                                 f"{free >> 20} MiB free when it started: not its doing)")

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


@dataclass(frozen=True)
class Usage:
    bytes: int  # allocated (sparse files count what they hold)
    entries: int
    hidden: str  # the first folder that could not be read, or ""


def usage(folders: Iterable[Path], limit: int = WALK_LIMIT) -> Usage:
    """What ``folders`` hold on disk, walked without following links, at most ``limit`` entries."""
    total = entries = 0
    hidden = ""
    todo = [str(f) for f in folders]
    while todo and entries < limit:
        top = todo.pop()
        try:
            with os.scandir(top) as it:
                for entry in it:
                    entries += 1
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    total += st.st_blocks * 512
                    if stat.S_ISDIR(st.st_mode):
                        todo.append(entry.path)
                    if entries >= limit:
                        break
        except NotADirectoryError:
            try:
                total += os.stat(top, follow_symlinks=False).st_blocks * 512
            except OSError:
                pass
        except FileNotFoundError:
            continue
        except OSError:
            hidden = hidden or clean(os.fsdecode(top), 300)
    return Usage(total, entries, hidden)


def _free(root: Path) -> int:
    try:
        st = os.statvfs(root)
    except OSError:
        return 0
    return st.f_bavail * st.f_frsize
