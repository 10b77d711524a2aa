"""Durations as people type them: ``90s``, ``2m``, ``1.5h``; a bare number is minutes.

One unit everywhere budgets are given (``onegc run --budget``, ``onegc demo --budget``, a study
file's ``[budget]``, the monitor's new-session form): minutes, as the paper and ``task.toml`` state
budgets.

Bounds: a budget runs from :data:`MIN_BUDGET_S` (10 s: the shortest session that still starts its
agent and scores a checkpoint of the demo task, and what quick tests use) to :data:`MAX_BUDGET_S`
(7 days: ten times the longest task's budget, and longer than any cluster's job limit). Outside
them a typo (``0.001``, ``1e9h``) would make a session that ends before it starts, or one that
never ends, so it is refused in one line instead.
"""

from __future__ import annotations

import math
import re

from runner.errors import OnegcError

_UNITS = {"s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "hr": 3600.0}
DURATION_RE = re.compile(r"^\s*(?P<n>\d+(?:\.\d*)?|\.\d+)\s*(?P<unit>s|sec|m|min|h|hr)?\s*$", re.IGNORECASE)
MIN_BUDGET_S = 10.0
MAX_BUDGET_S = 7 * 24 * 3600.0
HINT = "give a duration from 10s to 7 days (168h), like 90s, 2m or 1h (a bare number is minutes)"


class BadDuration(OnegcError, ValueError):
    """A duration that is not one, or outside the bounds of a budget."""


def duration_s(value: str | float | int, what: str = "budget") -> float:
    """Seconds from ``"90s"``, ``"2m"``, ``"1h"`` or a number of minutes, within the bounds of a
    budget; raises :class:`BadDuration`."""
    if isinstance(value, bool):
        raise BadDuration(f"{what} {value!r}: {HINT}")
    if isinstance(value, int | float):
        seconds = float(value) * 60.0
    else:
        m = DURATION_RE.match(str(value))
        if not m:
            raise BadDuration(f"{what} {str(value)!r}: {HINT}")
        seconds = float(m["n"]) * _UNITS[(m["unit"] or "m").lower()]
    if not math.isfinite(seconds) or not MIN_BUDGET_S <= seconds <= MAX_BUDGET_S:
        raise BadDuration(f"{what} {value!r}: {HINT}")
    return seconds


def to_minutes(value: str | float | int) -> float:
    """A study file's budget field: the same forms, in minutes (pydantic before-validator)."""
    if value is None:
        return value
    try:
        return duration_s(value, "minutes") / 60.0
    except BadDuration as exc:
        raise ValueError(str(exc).removeprefix("minutes ")) from None
