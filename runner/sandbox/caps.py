"""Memory and process caps for one session's agent tree (issue 28: ``--memory``, ``--max-processes``).

Without caps a fork bomb or a RAM hog in the sandbox reaches the host. Two layers:

- **the session's cgroups**, where this machine lets the runner make them: a memory cgroup whose
  limit is the memory cap (the kernel's OOM killer then kills inside the tree only) and a pids
  cgroup whose ``pids.max`` is the process cap (``fork`` fails with EAGAIN past it). They are
  made *below the runner's own* cgroups (cgroup v1: per controller; v2: beside the freezer's), so
  whatever limits the runner has hold for the agent too. The agent joins them before ``exec``;
- **rlimits** on the sandboxed tree, inherited by every process: ``RLIMIT_NPROC`` (processes and
  threads of the agent's uid: the sandbox runs the agent as a uid of its own where the runner is
  root; under a runner that is not root the agent shares the person's uid, and the kernel counts
  the person's other processes against the cap too, so there it is set only where no pids cgroup
  could be made) and, only where no memory cgroup could be made, ``RLIMIT_DATA`` at the memory cap (a
  per-process bound: CUDA's large address-space reservations are not data, so unlike
  ``RLIMIT_AS`` it does not break GPU code). ``RLIMIT_FSIZE`` is not set: the disk guard
  (runner/session/diskguard.py) watches the room left, and one big checkpoint is honest.

A cap reached is read from the cgroups' own counters (``oom_kill``, ``pids.events max``): the
runner emits one warning per new hit (code ``oom`` or ``process_cap``) and says so in the end
detail; the session goes on to its normal end. Defaults come from the machine
(:func:`default_caps`); ``onegc run --memory 512M --max-processes 64`` or a study's ``memory`` and
``max_processes`` set them per session.
"""

from __future__ import annotations

import os
import re
import resource
from dataclasses import dataclass
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
MEMORY_SHARE = 0.8  # of the machine's memory, by default: the host keeps the rest
PROCESSES_PER_CPU = 256  # threads count too (RLIMIT_NPROC, pids): torch starts one per core
MIN_PROCESSES = 4096
MIN_MEMORY = 64 << 20  # below this nothing (a Python, a shell) starts
MIN_PROCESS_CAP = 16
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str) -> int:
    """``512M``, ``2G``, ``1.5GiB``, ``1073741824`` -> bytes (binary units); ValueError otherwise."""
    m = _SIZE.match(str(text))
    if not m:
        raise ValueError(f"{text!r} is not a size: give bytes or a number with K, M, G or T (512M, 2G)")
    value = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if value < MIN_MEMORY:
        raise ValueError(f"{text!r} is below the {MIN_MEMORY >> 20} MiB an agent needs to start")
    return value


def human(size: int) -> str:
    for unit, factor in (("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if size >= factor and size % factor == 0:
            return f"{size // factor}{unit}"
    return f"{size / (1 << 20):.0f}M" if size >= 1 << 20 else str(size)


def machine_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 8 << 30


@dataclass(frozen=True)
class Caps:
    memory_bytes: int
    max_processes: int

    def describe(self) -> str:
        return f"memory {human(self.memory_bytes)}, {self.max_processes} processes"


def default_caps(memory_bytes: int | None = None, max_processes: int | None = None) -> Caps:
    """The caps given, the rest from this machine: 80% of its memory; 256 processes (or threads)
    per CPU, at least 4096."""
    memory = memory_bytes if memory_bytes is not None else int(machine_memory() * MEMORY_SHARE)
    procs = max_processes if max_processes is not None else max(MIN_PROCESSES, PROCESSES_PER_CPU * (os.cpu_count() or 1))
    return Caps(memory, procs)


def _own_cgroups() -> dict[str, str]:
    """``{controller: path}`` of this process (v1 lines; ``""`` for the v2 one)."""
    out: dict[str, str] = {}
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for c in controllers.split(",") if controllers else [""]:
                out[c] = path
    except (OSError, ValueError):
        pass
    return out


class CapGroup:
    """The session's memory and pids cgroups (either may be missing), and their counters."""

    def __init__(self, name: str, caps: Caps):
        self.caps = caps
        self.memory: tuple[Path, bool] | None = None  # (folder, v2)
        self.pids: tuple[Path, bool] | None = None
        self._seen = {"oom": 0, "pids": 0}
        own = _own_cgroups()
        # the runner's pid in the name: two sessions of one id (tests in two homes) never share caps
        name = f"{name}-{os.getpid()}"
        v2_root = CGROUP_ROOT if (CGROUP_ROOT / "cgroup.controllers").exists() else CGROUP_ROOT / "unified"
        for controller, limit_file, value in (("memory", "memory.limit_in_bytes", caps.memory_bytes),
                                              ("pids", "pids.max", caps.max_processes)):
            made = None
            if controller in own and (CGROUP_ROOT / controller).is_dir():  # v1
                made = _make(CGROUP_ROOT / controller / own[controller].lstrip("/") / f"onegc-{name}",
                             {limit_file: value}, False)
            if made is None and "" in own and (v2_root / "cgroup.controllers").exists():
                parent = v2_root / own[""].lstrip("/")
                try:  # enable the controller for the children of the runner's parent, where allowed
                    (parent.parent / "cgroup.subtree_control").write_text(f"+{controller}")
                except OSError:
                    pass
                v2_file = "memory.max" if controller == "memory" else "pids.max"
                made = _make(parent.parent / f"onegc-caps-{name}", {v2_file: value}, True)
            setattr(self, controller, made)

    @property
    def _nproc(self) -> bool:
        """RLIMIT_NPROC where it counts the agent alone (a root runner gives it its own uid), or
        where nothing else caps processes."""
        return os.geteuid() == 0 or self.pids is None

    @property
    def enforced_by(self) -> list[str]:
        out = []
        if self.memory:
            out.append("memory cgroup")
        if self.pids:
            out.append("pids cgroup")
        if self._nproc:
            out.append("RLIMIT_NPROC")
        if not self.memory:
            out.append("RLIMIT_DATA")
        return out

    def contract(self) -> dict:
        return {"memory_bytes": self.caps.memory_bytes, "max_processes": self.caps.max_processes,
                "enforced_by": self.enforced_by}

    def enter(self) -> None:
        """In the child between fork and exec: join the cgroups, set the rlimits."""
        for made in {self.memory, self.pids} - {None}:
            assert made is not None
            with open(made[0] / "cgroup.procs", "w") as f:
                f.write("0")
        if self._nproc:
            _lower(resource.RLIMIT_NPROC, self.caps.max_processes)
        if self.memory is None:
            _lower(resource.RLIMIT_DATA, self.caps.memory_bytes)

    def hits(self) -> list[tuple[str, str]]:
        """``(code, message)`` for each cap reached since the last call."""
        out = []
        oom = self._count(self.memory, "memory.events" if self.memory and self.memory[1] else "memory.oom_control",
                          "oom_kill")
        if oom > self._seen["oom"]:
            out.append(("oom", f"the agent's processes reached the session's memory cap ({human(self.caps.memory_bytes)}): "
                               f"the kernel killed {_n(oom - self._seen['oom'], 'process')} (out of memory)"))
            self._seen["oom"] = oom
        refused = self._count(self.pids, "pids.events", "max")
        if refused > self._seen["pids"]:
            out.append(("process_cap", f"the agent reached the session's cap of {self.caps.max_processes} processes: "
                                       f"{_n(refused - self._seen['pids'], 'new process')} refused"))
            self._seen["pids"] = refused
        return out

    def summary(self) -> str | None:
        """What the caps did over the session, for the end detail; None if never reached."""
        parts = []
        if self._seen["oom"]:
            parts.append(f"{_n(self._seen['oom'], 'process')} killed at the memory cap ({human(self.caps.memory_bytes)})")
        if self._seen["pids"]:
            parts.append(f"{_n(self._seen['pids'], 'process')} refused at the cap of {self.caps.max_processes}")
        return "; ".join(parts) or None

    @staticmethod
    def _count(made: tuple[Path, bool] | None, file: str, key: str) -> int:
        if made is None:
            return 0
        try:
            for line in (made[0] / file).read_text().splitlines():
                name, _, value = line.partition(" ")
                if name == key:
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def close(self) -> None:
        for made in (self.memory, self.pids):
            if made is not None:
                try:
                    made[0].rmdir()
                except OSError:
                    pass


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("es" if count != 1 and noun.endswith("s") else "s" if count != 1 else "")


def _make(path: Path, limits: dict[str, int], v2: bool) -> tuple[Path, bool] | None:
    try:
        path.mkdir(exist_ok=True)
        for file, value in limits.items():
            (path / file).write_text(str(value))
        return path, v2
    except OSError:
        try:
            path.rmdir()
        except OSError:
            pass
        return None


def _lower(which: int, value: int) -> None:
    soft, hard = resource.getrlimit(which)
    new_hard = value if hard == resource.RLIM_INFINITY else min(hard, value)
    resource.setrlimit(which, (min(value, new_hard), new_hard))
