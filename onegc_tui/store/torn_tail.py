"""A session whose ``events.jsonl`` ends in a torn line is read as it is.

Readers take whole lines only, so when the last line of a finished session's log is cut (a disk
that filled, a copy stopped half-way, a hand that trimmed it) its ``session_ended`` is not read,
and the session looked like one whose runner died: a harness error with no score, although its
``result.json`` (written once, at the end, by the runner) holds the official result. Here such a
session takes its end from ``result.json``, with a detail that says the log is torn, and
``onegc reindex`` says which sessions it found so.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, get_args

from runner.wire.end_reasons import EndReason
from runner.wire.paths import SessionPaths

if TYPE_CHECKING:
    from onegc_tui.store import Store

MAX_RESULT_BYTES = 16 << 20  # result.json is a few KiB; a bigger one is not read
REASONS = frozenset(get_args(EndReason))


@dataclass(frozen=True)
class ResultEnd:
    """A session's end as its ``result.json`` states it."""

    reason: str
    detail: str
    score: float | None
    checkpoint: str | None
    val: float | None


def torn_bytes(paths: SessionPaths) -> int:
    """How many bytes follow the last whole line of the session's ``events.jsonl`` (0: none)."""
    try:
        with open(paths.events, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            back = min(size, 1 << 16)
            f.seek(size - back)
            tail = f.read(back)
    except OSError:
        return 0
    if not tail or tail.endswith(b"\n"):
        return 0
    cut = tail.rfind(b"\n")
    return len(tail) - cut - 1 if cut >= 0 else (size if size <= back else back)


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _text(value: object, limit: int = 500) -> str | None:
    return value[:limit] if isinstance(value, str) else None


def result_end(paths: SessionPaths) -> ResultEnd | None:
    """The end ``result.json`` states, or None when there is none to read (no file, too big, not
    JSON, no known end reason)."""
    try:
        if paths.result.stat().st_size > MAX_RESULT_BYTES:
            return None
        doc = json.loads(paths.result.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("end_reason") not in REASONS:
        return None
    return ResultEnd(reason=doc["end_reason"], detail=_text(doc.get("end_detail")) or "",
                     score=_number(doc.get("value")), checkpoint=_text(doc.get("checkpoint"), 200),
                     val=_number(doc.get("val")))


def torn_detail(detail: str, torn: int) -> str:
    """The end detail of a session whose end came from ``result.json``."""
    why = f"its event log ends in a torn line ({torn} bytes)" if torn else "its event log has no end"
    return f"{detail} ({why}: the end is taken from result.json)" if detail else f"{why}: the end is taken from result.json"


def settle_from_result(store: Store, paths: SessionPaths) -> ResultEnd | None:
    """Give a session the store has not seen end the end its ``result.json`` states; None (and
    nothing changed) where there is no such file."""
    end = result_end(paths)
    if end is None:
        return None
    store.mark_ended(paths.session_id, end.reason, torn_detail(end.detail, torn_bytes(paths)), end.score,
                     end.checkpoint, end.val)
    from onegc_tui.store import record_status
    from runner.scoring.seal import home_id

    record_status.apply(store, paths.session_id, paths, home_id(paths.root.parent.parent))  # its end, dropped?
    return end


@dataclass(frozen=True)
class Settled:
    """A session given the end its ``result.json`` states."""

    session_id: str
    task: str | None
    end: ResultEnd
    torn: int  # the bytes after the log's last whole line


def settle_unended(store: Store, home: Path) -> list[Settled]:
    """Every session the store holds as not ended, whose runner is gone and whose ``result.json``
    states an end, given that end (``onegc reindex``)."""
    from runner.wire.liveness import lock_held
    from runner.wire.paths import runs_dir

    settled = []
    for row in store.sessions("state IN ('queued', 'running', 'paused')"):
        paths = SessionPaths(runs_dir(home) / row["session_id"])
        if lock_held(paths):
            continue  # its runner lives: its session_ended is still to come
        end = settle_from_result(store, paths)
        if end is not None:
            settled.append(Settled(paths.session_id, row.get("task"), end, torn_bytes(paths)))
    return settled
