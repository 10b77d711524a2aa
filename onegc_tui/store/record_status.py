"""How a session's record stands, as the store keeps it: the check against its chain and seal
(runner/scoring/seal.py), what ``onegc verify`` found, and its re-score with a newer harness.

``onegc verify`` writes what it found beside the record, in the session's folder, so that
``onegc reindex`` keeps it: ``verify.json`` (reproduced, or the differences) and, with
``--rescore``, ``rescore.json`` (the re-derived result, kept beside the original, never over it).
Each is bound to the record it was made from (the digests of ``seal.json`` and ``result.json``):
a record changed since reads as not verified. The ingest applies :func:`apply` when a session's
end is read, ``onegc reindex`` with it, and ``onegc verify`` after each session.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from runner.scoring import seal
from runner.wire.paths import SessionPaths

if TYPE_CHECKING:
    from onegc_tui.store import Store

VERIFY_FILE = "verify.json"
RESCORE_FILE = "rescore.json"
MAX_FILE_BYTES = 16 << 20
MAX_LINES = 50  # differences kept in verify.json (the first ones: the place that differs first)
Verified = Literal["reproduced", "differs", "tampered"]


@dataclass(frozen=True)
class RecordStatus:
    """One session's row of record facts (the store's columns ``record`` … ``rescore_by``)."""

    record: str  # sealed, chained, unchained, tampered
    record_detail: str = ""
    verified: str | None = None  # reproduced, differs, tampered; None: never verified (or the record changed since)
    verified_detail: str = ""
    rescore: float | None = None  # the official score a newer harness re-derived (None: not re-scored)
    rescore_by: str | None = None  # which harness, when

    def columns(self) -> tuple:
        return (self.record, self.record_detail or None, self.verified, self.verified_detail or None, self.rescore,
                self.rescore_by)


def bound_to(paths: SessionPaths) -> str:
    """The record a verify or re-score is of: its seal's and its result's digests."""
    return f"{seal.digest(paths.root / seal.SEAL) or '-'}:{seal.digest(paths.result) or '-'}"


def write_verify(paths: SessionPaths, outcome: Verified, detail: str, lines: list[str], facts: dict[str, Any]) -> None:
    """Record what verify found beside the record (written whole: a temporary file renamed)."""
    _write(paths, VERIFY_FILE, {"v": 1, "at": time.time(), "bound_to": bound_to(paths), "outcome": outcome,
                                "detail": detail, "differences": lines[:MAX_LINES], **facts})


def write_rescore(paths: SessionPaths, result: dict, harness: str, lines: list[str]) -> None:
    """Keep a re-score beside the original result (``verify --rescore``)."""
    _write(paths, RESCORE_FILE, {"v": 1, "at": time.time(), "bound_to": bound_to(paths), "harness": harness,
                                 "result": result, "changed": lines[:MAX_LINES]})


def _write(paths: SessionPaths, name: str, doc: dict) -> None:
    tmp = paths.root / f".{name}.tmp"
    tmp.write_text(json.dumps(doc, indent=1))
    os.replace(tmp, paths.root / name)


def read(paths: SessionPaths, name: str) -> dict | None:
    """``verify.json`` or ``rescore.json`` where it is of the record as it is now; else None."""
    try:
        if (paths.root / name).stat().st_size > MAX_FILE_BYTES:
            return None
        doc = json.loads((paths.root / name).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("bound_to") != bound_to(paths):
        return None
    return doc


def status(paths: SessionPaths, home_id: str | None, check: seal.RecordCheck | None = None) -> RecordStatus:
    """The session's record facts, from its folder (``check``: already made)."""
    check = check or seal.check(paths, home_id)
    verified = read(paths, VERIFY_FILE)
    rescored = read(paths, RESCORE_FILE)
    outcome = verified.get("outcome") if verified else None
    value = (rescored.get("result") or {}).get("value") if rescored else None
    return RecordStatus(
        record=check.state, record_detail=check.detail,
        verified=outcome if outcome in ("reproduced", "differs", "tampered") else None,
        verified_detail=str(verified.get("detail") or "")[:500] if verified else "",
        rescore=float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None,
        rescore_by=f"{str(rescored.get('harness'))[:80]}, {_day(rescored.get('at'))}" if rescored else None)


def _day(at: object) -> str:
    ok = isinstance(at, int | float) and not isinstance(at, bool) and 0 <= at < 1e11
    return time.strftime("%Y-%m-%d", time.gmtime(float(at))) if ok else "?"  # type: ignore[arg-type]


def apply(store: Store, sid: str, paths: SessionPaths, home_id: str | None) -> RecordStatus:
    """Check the session's record and keep what stands in the store."""
    found = status(paths, home_id)
    store.set_record(sid, found.columns())
    return found
