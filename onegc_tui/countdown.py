"""The budget left of one session as a countdown, advanced between events.

Pure, and light: the sessions listing (``onegc sessions``) draws it without importing the event
models (start-up, README).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from runner.summary import end_state

if TYPE_CHECKING:
    from runner.events import Event


@dataclass
class Countdown:
    """The budget left of one session, advanced locally between events (the figure in the
    store is as of its last heartbeat; the screen counts down from there)."""

    budget_s: float | None = None
    remaining_s: float | None = None
    as_of: float | None = None  # wall time of the figure above
    state: str = "queued"

    @classmethod
    def of_row(cls, row: dict) -> Countdown:
        countdown = cls()
        countdown.update_from_row(row)
        return countdown

    def update_from_row(self, row: dict) -> None:
        self.budget_s = row.get("budget_s")
        self.state = row.get("state") or "queued"
        self.remaining_s = row.get("remaining_s")
        self.as_of = row.get("remaining_ts")
        if self.state in ("ended", "failed") and self.budget_s is not None:
            self.remaining_s = max(0.0, self.budget_s - (row.get("active_s") or 0.0))

    def apply(self, event: Event) -> None:
        if event.type == "session_started":
            self.budget_s, self.remaining_s, self.as_of, self.state = event.budget_s, event.budget_s, event.ts, "running"
        elif event.type == "heartbeat":
            self.remaining_s, self.as_of = event.remaining_s, event.ts
        elif event.type == "budget":
            self.remaining_s, self.as_of = event.remaining_s, event.ts
            if event.state == "paused":
                self.state = "paused"
            elif event.state in ("running", "resumed"):
                self.state = "running"
        elif event.type == "session_ended":
            self.state = end_state(event.reason)
            self.remaining_s = max(0.0, (self.budget_s or 0) - event.active_s)
            self.as_of = event.ts

    def remaining_now(self, now: float | None = None) -> float | None:
        if self.remaining_s is None:
            return None
        if self.state != "running" or self.as_of is None:
            return self.remaining_s
        return max(0.0, self.remaining_s - ((now or time.time()) - self.as_of))

    def fraction_left(self, now: float | None = None) -> float:
        left = self.remaining_now(now)
        if left is None or not self.budget_s:
            return 0.0
        return left / self.budget_s
