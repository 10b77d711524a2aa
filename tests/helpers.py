"""Helpers shared by the tests that run real sessions: start a runner as `onegc run` does, read a
session's events, wait for one (by event, never by a fixed time), write a command agent, find a
session's processes. Fixtures live in conftest.py."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def start_session(home: Path, session_id: str = "s1", **fields):
    """Create a session and start its runner detached, as `onegc run` does."""
    from runner.launch.spawn import create_session, spawn_local
    from runner.wire.session_config import SessionConfig

    fields.setdefault("task", "t0")
    fields.setdefault("agent", "scripted")
    fields.setdefault("budget_s", 120)
    fields.setdefault("pace_s", 0.0)
    config = SessionConfig(session_id=session_id, **fields)
    paths = create_session(config, home)
    spawn_local(paths)
    return paths


SHORT_DEMO = ["--runs", "2", "--epochs", "3"]
"""The scripted agent's arguments for a short demo session (runner/agents/scripted_agent.py): two of
the demo's three runs, three epochs each, so six checkpoints scored live rather than 42, and a
session that ends in seconds, not a minute. For tests about what any session does (its record, its
store rows, its viewers), not about the demo's own numbers."""

ROOMY_BUDGET_S = 900
"""The budget of a test session that is meant to end on its own (the agent exits): never reached on
a quiet machine (these sessions end in 5-40 s), and still not with a second test suite beside this
one on 2 cores (about 4x slower). A test that is about the budget sets its own, short one."""

MAX_SLACK = 4.0


def slack() -> float:
    """How much longer than on a quiet machine a wait may take now: the load average per core,
    from 1 (quiet) to MAX_SLACK. A wait is bounded by what the machine can do, not by a fixed time."""
    try:
        load = os.getloadavg()[0] / (os.cpu_count() or 1)
    except OSError:
        return 1.0
    return min(MAX_SLACK, max(1.0, load))


class Patience:
    """A wait's clock: ``timeout`` is what a quiet machine needs (with room); on a loaded one it
    stretches with :func:`slack`, the largest seen while waiting."""

    def __init__(self, timeout: float):
        self.timeout = timeout
        self.start = time.monotonic()
        self.stretch = slack()

    def left(self) -> bool:
        self.stretch = max(self.stretch, slack())
        return time.monotonic() - self.start < self.timeout * self.stretch

    def __str__(self) -> str:
        return (f"{time.monotonic() - self.start:.0f} s ({self.timeout:.0f} s on a quiet machine "
                f"× {self.stretch:.1f} for the load)")


def wait_for(predicate, timeout: float, what: str, interval: float = 0.1):
    """Poll ``predicate`` until it is true, for as long as :class:`Patience` allows."""
    patience = Patience(timeout)
    while patience.left():
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {patience} waiting for {what}")


UNTIL_TOLD = """
import pathlib, time
while not pathlib.Path("go").exists():  # the test says when (tests/helpers.py let_go_after_gpu_samples)
    time.sleep(0.1)
"""
"""A command agent that runs until the test lets it go: a wait for what the runner does meanwhile,
never a fixed time (a fixed 3 s once gave the GPU thread one tick under load)."""


def let_go_after_gpu_samples(paths, n: int = 3) -> None:
    """Wait for ``n`` of the session's ``gpu`` events, then let an :data:`UNTIL_TOLD` agent end."""
    wait_for(lambda: sum(e["type"] == "gpu" for e in events(paths)) >= n, 120, f"{n} GPU samples")
    (paths.workspace / "go").touch()


def events(paths) -> list[dict]:
    if not paths.events.exists():
        return []
    out = []
    for line in paths.events.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            pass
    return out


def wait_event(paths, type_: str, timeout: float = 60, **match) -> dict:
    def find():
        for e in events(paths):
            if e["type"] == type_ and all(e.get(k) == v for k, v in match.items()):
                return e
        return None

    return wait_for(find, timeout, f"a {type_} event {match or ''} in {paths.events}")


def write_agent(tmp_path: Path, name: str, body: str) -> list[str]:
    """A command-agent script; returns its command line."""
    script = tmp_path / name
    script.write_text(textwrap.dedent(body))
    return [sys.executable, str(script)]


def tree_pids(paths) -> list[int]:
    """Every live process whose cwd or command line belongs to this session's workspace."""
    import psutil

    ws = str(paths.workspace)
    found = []
    for proc in psutil.process_iter(["pid", "cmdline", "cwd", "status"]):
        try:
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if (proc.info["cwd"] or "").startswith(ws) or ws in " ".join(proc.info["cmdline"] or []):
                found.append(proc.info["pid"])
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def cpu_seconds(pids: list[int]) -> float:
    """The CPU time (user + system) the live processes among ``pids`` have used so far."""
    import psutil

    total = 0.0
    for pid in pids:
        try:
            t = psutil.Process(pid).cpu_times()
            total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total


def verdicts_of(record) -> list:
    """The typed verdicts of a ``checkpoint_scored`` event (a dict), a result.json row or a Score."""
    from runner.wire.verdicts import read

    if isinstance(record, dict):
        return read(record.get("verdicts"), record.get("flags"))
    return list(record.verdicts)


def checks_of(record) -> set[tuple[str, str]]:
    """``{(check, strength)}`` of a record's verdicts (see :func:`verdicts_of`)."""
    return {(v.check, v.strength) for v in verdicts_of(record)}


def evidence_of(record, check: str | None = None) -> list[str]:
    """The evidence of a record's verdicts (of ``check`` only, when given)."""
    return [v.evidence for v in verdicts_of(record) if check is None or v.check == check]
