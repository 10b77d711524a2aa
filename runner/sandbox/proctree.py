"""Containment of an agent's whole process tree: start, list, pause, resume, stop.

Real agent CLIs run their tools under ``setsid``, so a process group is not enough. Layers, best
available first (the chosen ones are recorded in the session contract):

- ``bwrap``: the agent's sandbox (runner/sandbox/bwrap.py) has a PID namespace of its own whose init
  is ``nsinit``; the tree dies with it, and bubblewrap's ``--die-with-parent`` ties it to the
  runner. What follows is for sessions run ``--unsealed``.
- ``pidns``: the agent runs as PID 1's child in a new PID namespace
  (``unshare --pid --fork --kill-child``). Every descendant, ``setsid`` or not, stays inside;
  when the namespace's init dies the kernel kills them all. ``unshare`` gets ``PDEATHSIG=SIGKILL``
  so the tree dies with the runner, even on ``kill -9``.
- ``freezer``: a cgroup (v1 freezer, or v2 ``cgroup.freeze``) that the agent joins before
  ``exec``; pause freezes the cgroup atomically, so a process forked mid-pause cannot escape.
- ``subreaper``: without namespaces the runner becomes a child subreaper, so re-parented
  descendants stay its children and are swept at the end.
Without a freezer, pause sends SIGSTOP to every process of the tree, repeatedly until no new
process appears.
"""

from __future__ import annotations

import ctypes
import glob
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from runner.sandbox.caps import CapGroup

NSINIT = Path(__file__).with_name("nsinit.py")  # PID 1 in the namespace: forwards signals, reaps
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
FREEZER_V1 = Path("/sys/fs/cgroup/freezer")
CGROUP_V2 = Path("/sys/fs/cgroup")
STOP_SWEEPS = 5  # SIGSTOP passes until the tree stops changing


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _die_with_parent() -> None:  # runs in the child between fork and exec
    _libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def pidns_available() -> bool:
    if not shutil.which("unshare"):
        return False
    try:
        probe = ["unshare", "--pid", "--fork", "--kill-child", "true"]
        return subprocess.run(probe, capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class Freezer:
    """One cgroup used to freeze and list a tree (v1 freezer or v2 cgroup.freeze)."""

    def __init__(self, path: Path, v2: bool):
        self.path = path
        self.v2 = v2

    @classmethod
    def create(cls, name: str) -> Freezer | None:
        candidates = []
        if (FREEZER_V1 / "freezer.state").exists() or FREEZER_V1.is_dir():
            candidates.append((FREEZER_V1 / "onegc" / name, False))
        own = _own_v2_cgroup()
        if own is not None:
            candidates.append((own.parent / f"onegc-{name}", True))
        for path, v2 in candidates:
            try:
                path.mkdir(parents=True, exist_ok=True)
                probe = path / ("cgroup.freeze" if v2 else "freezer.state")
                if probe.exists() and os.access(probe, os.W_OK):
                    return cls(path, v2)
                path.rmdir()
            except OSError:
                continue
        return None

    def join_self(self) -> None:  # runs in the child between fork and exec
        with open(self.path / "cgroup.procs", "w") as f:
            f.write("0")

    def pids(self) -> list[int]:
        try:
            return [int(x) for x in (self.path / "cgroup.procs").read_text().split()]
        except OSError:
            return []

    def set_frozen(self, frozen: bool) -> None:
        if self.v2:
            (self.path / "cgroup.freeze").write_text("1" if frozen else "0")
        else:
            (self.path / "freezer.state").write_text("FROZEN" if frozen else "THAWED")

    def wait_state(self, frozen: bool, timeout: float = 5.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.v2:
                events = (self.path / "cgroup.events").read_text()
                if f"frozen {1 if frozen else 0}" in events:
                    return True
            elif (self.path / "freezer.state").read_text().strip() == ("FROZEN" if frozen else "THAWED"):
                return True
            time.sleep(0.02)
        return False

    def remove(self) -> None:
        try:
            self.set_frozen(False)
            self.path.rmdir()
        except OSError:
            pass

    @staticmethod
    def remove_stale(name: str) -> None:
        """Remove the cgroups of a session whose runner died (kill -9) once they are empty. A runner
        names its cgroup ``<session id>.<its pid>``: two runners of one session id on a host (a
        retried attempt, the same test in two checkouts) never share one, nor freeze or count each
        other's processes."""
        base = FREEZER_V1 / "onegc"
        for path in (base / name, *(base.glob(f"{glob.escape(name)}.*") if base.is_dir() else ())):
            try:
                if path.is_dir() and not (path / "cgroup.procs").read_text().split():
                    (path / "freezer.state").write_text("THAWED")
                    path.rmdir()
            except OSError:
                pass


def _own_v2_cgroup() -> Path | None:
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                rel = line[3:].strip().lstrip("/")
                base = CGROUP_V2 if (CGROUP_V2 / "cgroup.controllers").exists() else CGROUP_V2 / "unified"
                path = base / rel
                return path if (path / "cgroup.procs").exists() else None
    except OSError:
        return None
    return None


@dataclass
class ProcessTree:
    """The agent's process tree, however it is contained."""

    popen: subprocess.Popen
    mode: str  # e.g. "pidns+freezer", "pidns+signals", "subreaper+signals"
    freezer: Freezer | None = None
    exclude: set[int] = field(default_factory=set)  # runner helpers (scorer) when subreaping

    @property
    def root_pid(self) -> int:
        return self.popen.pid

    def pids(self) -> list[int]:
        """Every live process of the tree (the root included while it lives)."""
        found: set[int] = set(self.freezer.pids()) if self.freezer else set()
        roots = [self.root_pid]
        if self.mode.startswith("subreaper"):
            roots.append(os.getpid())  # re-parented orphans land on the runner
        for pid in roots:
            try:
                proc = psutil.Process(pid)
                if pid != os.getpid():
                    found.add(pid)
                found.update(c.pid for c in proc.children(recursive=True))
            except psutil.NoSuchProcess:
                continue
        found -= self.exclude
        found.discard(os.getpid())
        return sorted(p for p in found if psutil.pid_exists(p) and not _is_zombie(p))

    def signal_all(self, sig: int) -> int:
        count = 0
        for pid in self.pids():
            try:
                os.kill(pid, sig)
                count += 1
            except ProcessLookupError:
                pass
        return count

    def pause(self) -> None:
        if self.freezer:
            self.freezer.set_frozen(True)
            self.freezer.wait_state(True)
            return
        seen: set[int] = set()
        for _ in range(STOP_SWEEPS):
            current = set(self.pids())
            for pid in current - seen:
                try:
                    os.kill(pid, signal.SIGSTOP)
                except ProcessLookupError:
                    pass
            if current <= seen:
                break
            seen |= current

    def resume(self) -> None:
        if self.freezer:
            self.freezer.set_frozen(False)
            self.freezer.wait_state(False)
            return
        self.signal_all(signal.SIGCONT)

    def interrupt_root(self, sig: int = signal.SIGINT) -> None:
        """``sig`` to the agent itself: on SIGINT Claude Code and Codex end their tools cleanly."""
        target = self._agent_pid()
        if target:
            try:
                os.kill(target, sig)
            except ProcessLookupError:
                pass

    def _agent_pid(self) -> int | None:
        """Who gets the agent's SIGINT: in a PID namespace its init (the child of ``unshare`` or of
        ``bwrap``), which forwards it to the agent; else the agent itself."""
        if not self.mode.startswith(("pidns", "bwrap")):
            return self.root_pid
        try:
            kids = psutil.Process(self.root_pid).children()
            return kids[0].pid if kids else None
        except psutil.NoSuchProcess:
            return None

    def kill_all(self) -> None:
        """SIGKILL everything, frozen or not, and reap."""
        if self.freezer:
            self.freezer.set_frozen(True)  # nothing forks while we kill
        for _ in range(10):
            pids = self.pids()
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            if self.freezer:
                self.freezer.set_frozen(False)  # frozen tasks die only once thawed
            time.sleep(0.05)
        self.reap()

    def reap(self) -> None:
        try:
            self.popen.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        if self.mode.startswith("subreaper"):
            while True:  # collect orphans that were re-parented to us
                try:
                    pid, _ = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid == 0:
                    break

    def alive(self) -> bool:
        return bool(self.pids())

    def close(self) -> None:
        if self.freezer:
            self.freezer.remove()


def _is_zombie(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def start_tree(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    stdin,
    stdout,
    stderr,
    name: str,
    sandboxed: bool = False,
    caps: CapGroup | None = None,
) -> ProcessTree:
    """Start ``argv`` as a contained tree. ``sandboxed``: ``argv`` is already a bubblewrap command
    line (runner/sandbox/bwrap.py), whose PID namespace holds the tree; else a PID namespace of
    ``unshare`` where the machine allows one, or a child subreaper."""
    freezer = Freezer.create(name)
    if sandboxed:
        full, mode = list(argv), "bwrap"
    elif pidns_available():
        full = ["unshare", "--pid", "--fork", "--kill-child", "--", sys.executable, "-I", str(NSINIT), "--", *argv]
        mode = "pidns"
    else:
        _libc().prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        full = list(argv)
        mode = "subreaper"
    mode += "+freezer" if freezer else "+signals"

    def preexec() -> None:
        _die_with_parent()
        if freezer:
            freezer.join_self()
        if caps is not None:
            caps.enter()  # its memory and process caps (runner/sandbox/caps.py), inherited by the whole tree

    popen = subprocess.Popen(
        full, cwd=cwd, env=env, stdin=stdin, stdout=stdout, stderr=stderr, preexec_fn=preexec, start_new_session=True
    )
    return ProcessTree(popen=popen, mode=mode, freezer=freezer)
