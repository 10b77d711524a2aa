"""Is a session without ``session_ended`` still alive? Ask whoever launched it.

:func:`reconcile` is what the ingester and ``onegc study`` call for a session whose event stream
has no end: it returns None while the session is (or may be) alive or waiting, and a one-line
failure reason once its runner is gone for good, e.g.

    runner (pid 4242 on node7) died before the session ended: MemoryError
    runner (pid 4242 on node7) died before the session started (see runner.log)
    slurm job 123 ended (CANCELLED) before the session did: *** JOB 123 CANCELLED AT ... ***
    its folder runs/x was deleted or moved before the session ended

Liveness itself is runner.wire.liveness's (a lock, never the wall clock). A session folder that was
created and never handed to a launcher (the command that made it died first) is judged by age:
:data:`UNLAUNCHED_S` after ``session.json`` was written with no launcher record, it is failed.
"""

from __future__ import annotations

import json
import time

from runner.launch.records import has_started, read_record, session_ended
from runner.wire.liveness import runner_alive
from runner.wire.paths import SessionPaths

RUNNER_LOG_TAIL = 8 << 10  # enough of runner.log for the traceback's last line
# onegc writes session.json and the launcher record in one go: this long without a record, the
# command that created the session died before launching it (minutes: no clock step matters)
UNLAUNCHED_S = 600.0


def reconcile(paths: SessionPaths) -> str | None:
    """None while the session lives, waits in a queue, has ended, or cannot be judged from this
    host; otherwise why it ended without ``session_ended``."""
    if session_ended(paths) is not None:
        return None
    if not paths.config.exists():
        return f"its folder {paths.root} was deleted or moved before the session ended"
    record = read_record(paths) or {}
    if record.get("kind") == "slurm":
        from runner.launch import slurm

        reason = slurm.failure_reason(paths, record)
    else:
        reason = _local_reason(paths, record)
    if reason is not None and session_ended(paths) is not None:
        return None  # it ended while we were asking
    return reason


def clean_up_after(paths: SessionPaths) -> None:
    """Undo what a runner that died without ending (killed with -9, its machine rebooted) left
    behind on this host: its freezer cgroup, once empty, and its disk reserve. Whoever finds a runner dead through
    :func:`reconcile` calls this; a runner that ends removes its own."""
    from runner.sandbox.proctree import Freezer
    from runner.session.diskguard import RESERVE_NAME

    Freezer.remove_stale(paths.session_id)
    try:
        (paths.root / RESERVE_NAME).unlink(missing_ok=True)  # nor could it give back its disk reserve
    except OSError:  # another user's folder: its owner's next clean-up does it
        pass


def _local_reason(paths: SessionPaths, record: dict) -> str | None:
    state = record.get("state")
    if state == "cancelled" and not has_started(paths):
        return "removed from the local queue before it started"
    if state in ("queued", "starting") and not has_started(paths):
        return None
    if not has_started(paths) and not record:
        return _unlaunched(paths)
    alive = runner_alive(paths)
    if alive is not False:
        return None
    info = _runner_info(paths) or record
    who = f"runner (pid {info.get('pid', '?')} on {info.get('host', '?')})"
    when = "the session ended" if paths.events.exists() else "the session started"
    last = _last_log_line(paths)
    return f"{who} died before {when}" + (f": {last}" if last else " (see runner.log)")


def _unlaunched(paths: SessionPaths) -> str | None:
    try:
        age = time.time() - paths.config.stat().st_mtime
    except OSError:
        return None
    if age < UNLAUNCHED_S:
        return None  # just created; its launcher is about to claim it
    return f"created {age / 60:.0f} min ago and never launched (the command that created it stopped first)"


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
