"""Is a session without ``session_ended`` still alive? Ask whoever launched it.

:func:`reconcile` is what the ingester and ``onegc study`` call for a session whose event stream
has no end: it returns None while the session is (or may be) alive or waiting, and a one-line
failure reason once its runner is gone for good, e.g.

    runner (pid 4242 on node7) died before the session ended: MemoryError
    slurm job 123 ended (CANCELLED) before the session did: *** JOB 123 CANCELLED AT ... ***
"""

from __future__ import annotations

import json

from runner.config import SessionPaths
from runner.launch import runner_alive
from runner.launchers import has_started, read_record, session_ended

RUNNER_LOG_TAIL = 8 << 10  # enough of runner.log for the traceback's last line


def reconcile(paths: SessionPaths) -> str | None:
    """None while the session lives, waits in a queue, has ended, or cannot be judged from this
    host; otherwise why it ended without ``session_ended``."""
    if session_ended(paths) is not None:
        return None
    record = read_record(paths) or {}
    if record.get("kind") == "slurm":
        from runner.launchers import slurm

        reason = slurm.failure_reason(paths, record)
    else:
        reason = _local_reason(paths, record)
    if reason is not None and session_ended(paths) is not None:
        return None  # it ended while we were asking
    return reason


def clean_up_after(paths: SessionPaths) -> None:
    """Undo what a runner that died without ending (killed with -9, its machine rebooted) left
    behind on this host: its freezer cgroup, once empty. Whoever finds a runner dead through
    :func:`reconcile` calls this; a runner that ends removes its own."""
    from runner.proctree import Freezer

    Freezer.remove_stale(paths.session_id)


def _local_reason(paths: SessionPaths, record: dict) -> str | None:
    state = record.get("state")
    if state == "cancelled" and not has_started(paths):
        return "removed from the local queue before it started"
    if state in ("queued", "starting") and not has_started(paths):
        return None
    if not has_started(paths) and not record:
        return None  # just created; no launcher has claimed it yet
    alive = runner_alive(paths)
    if alive is not False:
        return None
    info = _runner_info(paths) or record
    who = f"runner (pid {info.get('pid', '?')} on {info.get('host', '?')})"
    last = _last_log_line(paths)
    return f"{who} died before the session ended" + (f": {last}" if last else " (see runner.log)")


def _runner_info(paths: SessionPaths) -> dict | None:
    try:
        return json.loads(paths.runner_info.read_text())
    except (FileNotFoundError, ValueError):
        return None


def _last_log_line(paths: SessionPaths) -> str:
    try:
        with open(paths.runner_log, "rb") as f:
            size = f.seek(0, 2)
            f.seek(max(0, size - RUNNER_LOG_TAIL))
            lines = f.read().decode("utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return ""
    line = next((x.strip() for x in reversed(lines) if x.strip()), "")
    return line[:200]
