"""Disqualifications of a session's result: ``runs/<id>/verdicts.jsonl``, the latest line wins.

A session is *disqualified* — in n/N of its cell, not in the mean, as the paper counts protocol
violations — by a person (``onegc disqualify SESSION --reason …``, undone with ``--clear``) or by
the runner's integrity rule (a disqualifying verdict on the official checkpoint:
runner/scoring/official_phase.py). The file sits in the session folder
(out of the agent's reach); the store reads it, so ``onegc reindex`` keeps every verdict.
"""

from __future__ import annotations

import getpass
import json
import time

from runner.wire.jsonl import append_json_line
from runner.wire.paths import SessionPaths

FILE = "verdicts.jsonl"


def record(paths: SessionPaths, reason: str | None, by: str | None = None) -> None:
    """Disqualify the session with ``reason``, or clear its disqualification (``reason=None``)."""
    who = by or _user()
    append_json_line(paths.root / FILE, {"ts": time.time(), "disqualified": reason, "by": who})


def current(paths: SessionPaths) -> tuple[bool, str | None]:
    """(any verdict on file, the standing disqualification reason or None)."""
    try:
        lines = (paths.root / FILE).read_text().splitlines()
    except (FileNotFoundError, UnicodeDecodeError):
        return False, None
    latest: str | None = None
    found = False
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and "disqualified" in entry:
            found = True
            reason = entry["disqualified"]
            latest = f"{reason} ({entry.get('by') or '?'})" if reason else None
    return found, latest


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no login name (a container): still a person's verdict
        return "a person"
