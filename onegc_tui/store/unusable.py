"""A store SQLite refuses, in one line: what it said, and the way out."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from runner.errors import OnegcError


class StoreUnusable(OnegcError):
    """``onegc.db`` cannot be opened or brought to this schema (the message names the fix)."""


def unusable(path: Path, exc: sqlite3.Error) -> str:
    """One line for a store SQLite refuses: what it said, and the way out."""
    said = str(exc) or type(exc).__name__
    if "locked" in said or "busy" in said:
        return f"{path}: {said}: another onegc holds it too long; try again"
    return (f"{path}: {said}: move it aside and run 'onegc reindex' (the session folders are the source of truth, "
            "nothing is lost)")
