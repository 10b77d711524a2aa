"""The GPU contention guard: what made a session's conditions unlike a clean one, for its contract.

Two sessions compare only when each had its GPU and its host to itself (the paper: one agent,
one A100, 16 cores). The runner watches, beside its utilisation samples (runner/session/gpu.py):

- **foreign processes on the session's GPU**: NVML's running compute (and graphics) processes,
  host PIDs, that are neither the runner, nor anything it started (the agent's tree, the scorer);
- **memory in use at start**: what the GPU held before the agent ran (over :data:`MEM_AT_START_MB`
  is someone else's: a CUDA context alone is a few hundred MB);
- **throttling**: NVML's clock throttle reasons; thermal and hardware slowdowns and the power
  brake count (for at least :data:`THROTTLE_MIN_S`), while idle, application-clock and display
  settings never do and the software power cap is recorded only (a GPU at its power limit
  under full load is normal, the paper's A100 too);
- **clock drops**: busy samples (utilisation >= :data:`BUSY_PCT`) whose SM clock is under
  :data:`CLOCK_DROP_RATIO` of its maximum, for at least :data:`CLOCK_DROP_MIN_S`, not explained by the
  power cap alone;
- **concurrency**: other live sessions on this host (under the same runs folder: a runner that
  holds its lock, on this host), at start and every :data:`CONCURRENCY_PERIOD_S`, and at the end
  those that ended meanwhile and recorded this one (:func:`finished_that_saw`): both of two
  overlapping sessions record the other, whichever polled while the other ran;
- **operator pauses**: the budget clock's pauses (count and seconds).

:meth:`ContentionWatch.summary` is the ``conditions`` event at the session's end (and
``result.json``'s ``conditions``): ``contended`` is true when any of the above applies, with one
reason per cause. The history matrix marks cells that pool contended and clean sessions.

Limits: NVML lists processes only where the driver lets this user see them (in a container,
other containers' processes may be hidden; their memory still shows in the memory figures);
sessions of another onegc home on the same host are seen only through the GPU, not through
concurrency; a foreign process that lives between two polls (:data:`POLL_S`) is missed.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from runner.wire.untrusted import clean

POLL_S = 5.0  # NVML process and clock queries (the utilisation sampler runs every second)
CONCURRENCY_PERIOD_S = 30.0
MEM_AT_START_MB = 1024.0
BUSY_PCT = 50.0
CLOCK_DROP_RATIO = 0.8
CLOCK_DROP_MIN_S = 30.0
THROTTLE_MIN_S = 10.0
MAX_LISTED = 20  # foreign processes and sessions kept by name in the record
RESULT_READ_MAX = 16 << 20  # a result.json larger than this is not read for its conditions

# nvmlClocksThrottleReason* bits (nvml.h; "clocks event reasons" in newer drivers, same bits)
THROTTLE_BITS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
CONTENDING_THROTTLE = frozenset({"hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"})
NVML_CLOCK_SM = 1


def throttle_names(mask: int) -> list[str]:
    return [name for bit, name in THROTTLE_BITS.items() if mask & bit]


@dataclass
class ContentionWatch:
    """Polled by the runner's GPU thread; ``own_pids`` gives the PIDs that are the session's."""

    nvml: object
    handles: list[tuple[int, object]]  # (NVML index, handle) of the session's GPUs
    own_pids: Callable[[], set[int]]
    runs_dir: Path | None = None
    session_id: str = ""
    mem_at_start_mb: dict[int, float] = field(default_factory=dict)
    foreign: dict[int, dict] = field(default_factory=dict)  # pid -> {gpu, name, mem_mb, seen}
    throttle_s: dict[str, float] = field(default_factory=dict)
    clock_drop_s: float = 0.0
    min_clock_ratio: float | None = None
    sessions: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)
    started_at: float = field(default_factory=time.time)  # a session ended since then may have seen this one

    # ------------------------------------------------------------------ at start
    def start(self) -> dict:
        """Memory in use and foreign processes before the agent runs, and the other sessions."""
        self.started_at = time.time()
        for i, h in self.handles:
            mem = self._call(lambda h=h: self.nvml.nvmlDeviceGetMemoryInfo(h), "memory")  # type: ignore[attr-defined]
            if mem is not None:
                self.mem_at_start_mb[i] = round(mem.used / 2**20, 1)
        self.poll_processes()
        self.poll_sessions()
        return {"mem_used_at_start_mb": dict(self.mem_at_start_mb), "foreign_processes": len(self.foreign),
                "other_sessions": len(self.sessions)}

    # ------------------------------------------------------------------ polls
    def poll(self, util_by_gpu: dict[int, float], period_s: float) -> None:
        """One poll: processes, throttle reasons and clocks (``period_s``: what it stands for)."""
        self.poll_processes()
        for i, h in self.handles:
            mask = self._call(lambda h=h: self._throttle_mask(h), "throttle reasons")
            reasons = throttle_names(mask) if isinstance(mask, int) else []
            for name in reasons:
                if name in CONTENDING_THROTTLE or name == "sw_power_cap":
                    self.throttle_s[name] = self.throttle_s.get(name, 0.0) + period_s
            clock = self._call(lambda h=h: self.nvml.nvmlDeviceGetClockInfo(h, NVML_CLOCK_SM), "clocks")  # type: ignore[attr-defined]
            top = self._call(lambda h=h: self.nvml.nvmlDeviceGetMaxClockInfo(h, NVML_CLOCK_SM), "clocks")  # type: ignore[attr-defined]
            if not clock or not top or util_by_gpu.get(i, 0.0) < BUSY_PCT:
                continue
            ratio = float(clock) / float(top)
            self.min_clock_ratio = ratio if self.min_clock_ratio is None else min(self.min_clock_ratio, ratio)
            if ratio < CLOCK_DROP_RATIO and set(reasons) != {"sw_power_cap"}:  # the power cap alone is normal
                self.clock_drop_s += period_s

    def poll_processes(self) -> None:
        # the session's own PIDs are read before and after NVML's lists: a process the agent starts
        # between the two reads is in the second, one that ends between them in the first (on a
        # loaded machine that window is wide)
        before = self.own_pids()
        listed = [(i, p) for i, h in self.handles for p in self._processes(h)]
        if not listed:
            return
        own = before | self.own_pids() | {os.getpid()}
        for i, p in listed:
            pid = int(getattr(p, "pid", -1))
            if pid <= 0 or pid in own:
                continue
            used = getattr(p, "usedGpuMemory", None)
            mem_mb = round(used / 2**20, 1) if isinstance(used, int) and used >= 0 else None
            seen = self.foreign.get(pid)
            if seen is None and len(self.foreign) < 10 * MAX_LISTED:
                self.foreign[pid] = {"pid": pid, "gpu": i, "name": _name(pid), "mem_mb": mem_mb}
            elif seen is not None and mem_mb is not None:
                seen["mem_mb"] = max(seen.get("mem_mb") or 0.0, mem_mb)

    def poll_sessions(self, final: bool = False) -> None:
        """The other live sessions on this host; ``final`` (at the session's end) also those that
        ended meanwhile and recorded this one among theirs: a session that started and ended between
        two polls (or before this one's end, with no GPU thread polling) saw this one at its start,
        and the overlap is recorded on both sides."""
        if self.runs_dir is not None:
            self.sessions |= other_live_sessions(self.runs_dir, self.session_id)
            if final:
                self.sessions |= finished_that_saw(self.runs_dir, self.session_id, self.started_at)

    # ------------------------------------------------------------------ the record
    def summary(self, pauses: int = 0, paused_s: float = 0.0) -> dict:
        """The ``conditions`` record: ``contended``, one reason per cause, and the figures."""
        reasons = []
        if self.foreign:
            names = ", ".join(f"{p['pid']} ({p['name']})" for p in list(self.foreign.values())[:5])
            reasons.append(f"{len(self.foreign)} foreign process(es) on the session's GPU: {names}")
        busy = {i: mb for i, mb in self.mem_at_start_mb.items() if mb > MEM_AT_START_MB}
        if busy:
            reasons.append("GPU memory in use at start: " + ", ".join(f"GPU {i} {mb:.0f} MB" for i, mb in busy.items()))
        slow = {k: s for k, s in self.throttle_s.items() if k in CONTENDING_THROTTLE and s >= THROTTLE_MIN_S}
        if slow:
            reasons.append("throttled: " + ", ".join(f"{k} {s:.0f} s" for k, s in sorted(slow.items())))
        if self.clock_drop_s >= CLOCK_DROP_MIN_S:
            reasons.append(f"SM clock under {CLOCK_DROP_RATIO:.0%} of its maximum while busy for {self.clock_drop_s:.0f} s")
        if self.sessions:
            reasons.append(f"shared the host with {len(self.sessions)} other session(s)")
        if pauses:
            reasons.append(f"paused by the operator {pauses} time(s), {paused_s:.0f} s in all")
        return {
            "contended": bool(reasons),
            "reasons": reasons,
            "foreign_processes": list(self.foreign.values())[:MAX_LISTED],
            "mem_used_at_start_mb": {str(i): mb for i, mb in self.mem_at_start_mb.items()},
            "throttle_s": {k: round(s, 1) for k, s in sorted(self.throttle_s.items())},
            "clock_drop_s": round(self.clock_drop_s, 1),
            "min_sm_clock_ratio": None if self.min_clock_ratio is None else round(self.min_clock_ratio, 3),
            "other_sessions": sorted(self.sessions)[:MAX_LISTED],
            "pauses": pauses,
            "paused_s": round(paused_s, 1),
            "problems": self.problems[:5],
        }

    # ------------------------------------------------------------------ NVML, defensively
    def _processes(self, h) -> list:
        out: list = []
        for call in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
            fn = getattr(self.nvml, call, None)
            if fn is not None:
                got = self._call(lambda fn=fn: fn(h), "processes")
                out += list(got or [])
        return out

    def _throttle_mask(self, h) -> int | None:
        for call in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"):
            fn = getattr(self.nvml, call, None)
            if fn is not None:
                return int(fn(h))
        return None

    def _call(self, read: Callable, what: str):
        try:
            return read()
        except Exception as exc:  # an NVML without the call, or a driver that refuses it: noted once
            note = f"{what}: {type(exc).__name__}: {exc}"[:200]
            if note not in self.problems:
                self.problems.append(note)
            return None


def _name(pid: int) -> str:
    try:
        return clean(psutil.Process(pid).name(), 40)  # another session's agent names its processes
    except (psutil.Error, OSError):
        return "?"


def other_live_sessions(runs_dir: Path, session_id: str, limit: int = 2000) -> set[str]:
    """Sessions under ``runs_dir`` other than ``session_id`` whose runner lives on this host
    (holds its lock; runner.json names this host). Finished sessions (with result.json) are skipped
    without a lock check."""
    from runner.wire.liveness import lock_held
    from runner.wire.paths import SessionPaths

    host = socket.gethostname()
    found: set[str] = set()
    try:
        folders: Iterable[Path] = sorted(runs_dir.iterdir())
    except OSError:
        return found
    for k, folder in enumerate(folders):
        if k >= limit:
            break
        if folder.name == session_id or (folder / "result.json").exists():
            continue
        try:
            info = json.loads((folder / "runner.json").read_text())
        except (OSError, ValueError):
            continue
        if isinstance(info, dict) and info.get("host") == host and lock_held(SessionPaths(folder)):
            found.add(folder.name)
    return found


def finished_that_saw(runs_dir: Path, session_id: str, since: float, limit: int = 2000) -> set[str]:
    """Sessions under ``runs_dir`` whose ``result.json`` was written after ``since`` and whose
    conditions list ``session_id`` among the other sessions they shared the host with: they
    overlapped it, whichever of the two happened to poll while the other ran."""
    found: set[str] = set()
    try:
        folders: Iterable[Path] = sorted(runs_dir.iterdir())
    except OSError:
        return found
    for k, folder in enumerate(folders):
        if k >= limit:
            break
        result = folder / "result.json"
        try:
            stat = result.stat()
        except OSError:
            continue
        if folder.name == session_id or stat.st_mtime < since or stat.st_size > RESULT_READ_MAX:
            continue
        try:
            record = json.loads(result.read_bytes())
        except (OSError, ValueError):
            continue
        conditions = record.get("conditions") if isinstance(record, dict) else None
        others = conditions.get("other_sessions") if isinstance(conditions, dict) else None
        if isinstance(others, list) and session_id in others:
            found.add(folder.name)
    return found
