"""Launcher records: how a session's runner gets a machine (``local`` queue or ``slurm`` job).

Every launcher records itself in ``runs/<id>/launcher.json`` so any process (the CLI, the
monitor, a later ``onegc study``) can find the session's runner again:

    {"kind": "local", "state": "queued" | "starting" | "running" | "ended" | "cancelled",
     "gpu": "0", "pid": 123, "host": "...", "queued_at": ..., "started_at": ..., "ended_at": ...}
    {"kind": "slurm", "state": "submitted" | "cancelled", "job_id": "123", "submitted_at": ...}

A session folder with ``session.json`` and ``launcher.json`` but no ``events.jsonl`` is waiting
for its launcher. This module holds what is common: reading and writing the record and finding
the ``session_ended`` event (aborting a session whatever launched it: runner/launch/abort.py).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from runner.wire.paths import SessionPaths

TAIL_BYTES = 64 << 10  # session_ended is the last line; this much of the file always holds it


def read_record(paths: SessionPaths) -> dict | None:
    try:
        record = json.loads(paths.launcher.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return record if isinstance(record, dict) else None


def write_record(paths: SessionPaths, record: dict) -> None:
    """Replace ``launcher.json`` atomically (temp file + rename)."""
    tmp = paths.root / f".launcher.json.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(record, indent=1))
    os.replace(tmp, paths.launcher)


def update_record(paths: SessionPaths, **changes) -> dict:
    record = read_record(paths) or {}
    record.update(changes)
    write_record(paths, record)
    return record


def session_ended(paths: SessionPaths) -> dict | None:
    """The ``session_ended`` event of a session as a dict, or None while it has none."""
    try:
        with open(paths.events, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - TAIL_BYTES))
            tail = f.read()
    except FileNotFoundError:
        return None
    for line in reversed(tail.splitlines()):
        if b'"session_ended"' not in line:
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("type") == "session_ended":
            return event
    return None


def has_started(paths: SessionPaths) -> bool:
    """True once the runner has written anything (its first act is ``runner.json``)."""
    return paths.runner_info.exists() or paths.events.exists()


def is_attempt_folder(folder: Path) -> bool:
    """``runs/<id>.attempt-<n>``: an earlier, failed attempt kept for the record (see runner.launch.study)."""
    name = folder.name
    head, _, n = name.rpartition(".attempt-")
    return bool(head) and n.isdigit()
