"""Aborting a session whatever launched it: a queued one leaves its queue, a running one is asked
through ``control.jsonl`` and, past its grace, stopped through its launcher."""

from __future__ import annotations

import time

from runner.launch.records import has_started, read_record, session_ended
from runner.wire.paths import SessionPaths

ABORT_MARGIN_S = 30.0  # beyond the grace: official scoring of a few checkpoints after the stop


def cancel(paths: SessionPaths) -> str:
    """Stop a session through its launcher, without asking the runner; returns what was done."""
    record = read_record(paths) or {}
    kind = record.get("kind", "local")
    if kind == "slurm":
        from runner.launch import slurm

        return slurm.cancel(paths)
    from runner.launch import local

    return local.cancel(paths)


def abort_session(paths: SessionPaths, wait_s: float | None = None, poll_s: float = 0.5,
                  escalate: bool = True) -> str:
    """Abort a session: a queued one leaves the queue; a running one gets an abort request in
    ``control.jsonl`` and, if ``session_ended`` has not appeared after its grace period plus a
    margin (or ``wait_s``), is stopped through its launcher (SIGTERM, then SIGKILL; or scancel).

    Returns a one-line account of what happened.
    """
    from runner.wire.control import request

    if session_ended(paths) is not None:
        return f"{paths.session_id}: already ended"
    record = read_record(paths) or {}
    if not has_started(paths) and record.get("state") in ("queued", "starting", "submitted"):
        return cancel(paths)
    request(paths, "abort")
    if not escalate:
        return f"{paths.session_id}: abort requested"
    if wait_s is None:
        wait_s = paths.read_config().grace_s + ABORT_MARGIN_S
    end = time.monotonic() + wait_s
    while time.monotonic() < end:
        if session_ended(paths) is not None:
            return f"{paths.session_id}: aborted"
        time.sleep(poll_s)
    return f"{paths.session_id}: the runner did not end within {wait_s:.0f} s; " + cancel(paths)
