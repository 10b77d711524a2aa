"""Is a session's runner alive? One answer, from a lock and the kernel, never from the wall clock.

The runner holds an exclusive ``flock`` on ``runs/<id>/runner.lock`` for its whole life. The
file is opened close-on-exec and nothing the runner starts is forked without an exec (the
agent's sandbox, the scorer, the network gate's helpers), so no other process ever shares the
lock: the kernel drops it the moment the runner dies, ``kill -9`` included. A checker asks for
a shared lock without waiting; refused means a runner holds it.

Before the runner has its lock (Python is still importing), the launcher's record
(``launcher.json``) names the process it started by pid, boot id and start time in clock ticks
since boot (``/proc/PID/stat``): no step of the wall clock moves those, and a reused pid does
not match them. The runner writes ``runner.json`` only once it holds the lock, so a
``runner.json`` seen before the lock was found free means the runner has died.

:func:`runner_alive` is the one check every caller uses: the ingester and ``onegc study``
(through runner.launch.reconcile), the local GPU queue, and the CLI.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from runner.errors import OnegcError
from runner.wire.paths import SessionPaths

LOCK_NAME = "runner.lock"
TAKE_WAIT_S = 5.0  # a checker holds its shared lock for microseconds; another runner holds it for good
TAKE_POLL_S = 0.02


class RunnerAlreadyRunning(OnegcError):
    """A second runner for a session whose runner lives."""


def lock_path(paths: SessionPaths) -> Path:
    return paths.root / LOCK_NAME


@cache
def boot_id() -> str:
    """This kernel's boot id: the same in every container of the machine, new after a reboot."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown"


@dataclass(frozen=True)
class ProcessId:
    """A process named so that neither a clock step nor a reused pid confuses it."""

    pid: int
    boot_id: str
    start_ticks: int  # clock ticks after boot at which it started (field 22 of /proc/PID/stat)

    @classmethod
    def of(cls, pid: int) -> ProcessId | None:
        stat = _proc_stat(pid)
        return cls(pid, boot_id(), stat[1]) if stat else None

    def alive(self) -> bool:
        """True while this very process runs (a zombie has ended)."""
        if self.boot_id != boot_id():
            return False
        stat = _proc_stat(self.pid)
        return stat is not None and stat[1] == self.start_ticks and stat[0] not in "ZX"

    def record(self) -> dict:
        return {"pid": self.pid, "boot_id": self.boot_id, "start_ticks": self.start_ticks}


def _proc_stat(pid: int) -> tuple[str, int] | None:
    """``(state, start ticks)`` of a process, from ``/proc/PID/stat``; None if there is none."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2:].split()  # the name may hold spaces and parentheses
    try:
        return fields[0].decode(), int(fields[19])
    except (IndexError, ValueError):
        return None


def launch_record(pid: int) -> dict:
    """What a launcher records about the runner process it just started (``launcher.json``)."""
    ident = ProcessId.of(pid)
    return {"pid": pid, "host": socket.gethostname(), **(ident.record() if ident else {"boot_id": boot_id()})}


# ---------------------------------------------------------------------- the runner's side
class RunnerLock:
    """The runner's claim on its session folder, held from its first moment to its exit."""

    def __init__(self, paths: SessionPaths, fd: int):
        self.paths = paths
        self._fd = fd
        st = os.fstat(fd)
        self._file = (st.st_dev, st.st_ino)

    @classmethod
    def take(cls, paths: SessionPaths, wait_s: float = TAKE_WAIT_S) -> RunnerLock:
        """Take the lock, then write ``runner.json``; raises :class:`RunnerAlreadyRunning`."""
        fd = os.open(lock_path(paths), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        end = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= end:
                    os.close(fd)
                    raise RunnerAlreadyRunning(f"session {paths.session_id} already has a live runner "
                                               f"(it holds {lock_path(paths)}): see 'onegc sessions'") from None
                time.sleep(TAKE_POLL_S)
            except OSError:  # a filesystem without flock (Lustre without -o flock): checkers then go by
                break  # runner.json's pid, boot id and start ticks, which need no lock
        lock = cls(paths, fd)
        me = ProcessId.of(os.getpid())
        info = {**(me.record() if me else {"pid": os.getpid(), "boot_id": boot_id()}),
                "host": socket.gethostname(), "started": time.time()}
        tmp = paths.root / f".runner.json.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(info))
        os.replace(tmp, paths.runner_info)
        return lock

    def in_place(self) -> bool:
        """False once the session folder (with this lock file) was deleted or moved away."""
        try:
            st = os.stat(lock_path(self.paths))
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self._file

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # closing the only descriptor drops the lock
            self._fd = -1

    def __enter__(self) -> RunnerLock:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


# ---------------------------------------------------------------------- everyone else's side
def lock_held(paths: SessionPaths) -> bool | None:
    """True while a runner holds the session's lock, False when none does, None without a lock
    file (a runner from before locks, or a filesystem without ``flock``)."""
    try:
        fd = os.open(lock_path(paths), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:  # ENOLCK, EINVAL: locks do not work here
        return None
    finally:
        os.close(fd)  # also drops a shared lock we got
    return False


def _read(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def runner_alive(paths: SessionPaths) -> bool | None:
    """True/False when this machine can tell whether the session's runner lives; None if it
    cannot (the runner is on another machine: its launcher knows, e.g. Slurm)."""
    info = _read(paths.runner_info)  # before the lock: it is written only once the lock is held
    held = lock_held(paths)
    if held:
        return True
    started = info is not None
    info = info or _read(paths.launcher)
    if not info or "pid" not in info:
        return None
    if "boot_id" not in info:
        return _alive_before_locks(paths, info)
    if info["boot_id"] != boot_id():
        # the same host under another boot id has rebooted since: that runner is gone
        return False if info.get("host") == socket.gethostname() else None
    if started and held is False:
        return False  # it had the lock, and now nobody has
    if "start_ticks" not in info:
        return False  # the launcher could not even see the process it started
    return ProcessId(int(info["pid"]), info["boot_id"], int(info["start_ticks"])).alive()


def _alive_before_locks(paths: SessionPaths, info: dict) -> bool | None:
    """A session started by an onegc from before runner locks: its pid still runs the runner
    of this folder (command line), on this host."""
    if info.get("host") != socket.gethostname():
        return None
    try:
        pid = int(info["pid"])
        state = _proc_stat(pid)
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError, TypeError):
        return False
    return state is not None and state[0] not in "ZX" and os.fsencode(str(paths.root)) in cmdline


def live_runner_pid(paths: SessionPaths) -> int | None:
    """The pid of the session's live runner on this machine, or None."""
    if not runner_alive(paths):
        return None
    info = _read(paths.runner_info) or _read(paths.launcher) or {}
    try:
        return int(info["pid"])
    except (KeyError, ValueError, TypeError):
        return None


def main_with_lock(paths: SessionPaths, run) -> int:
    """Run ``run(lock)`` holding the session's lock (``python -m runner.session``'s first act)."""
    try:
        lock = RunnerLock.take(paths)
    except (OnegcError, OSError) as exc:
        print(f"onegc runner: {exc}", file=sys.stderr, flush=True)
        return 2
    with lock:
        try:
            return run(lock)
        except OnegcError as exc:  # a config it cannot use, no room for its reserve: one line in runner.log
            print(f"onegc runner: {exc}", file=sys.stderr, flush=True)
            return 2
