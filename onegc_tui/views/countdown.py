"""The budget left of one session as a countdown, advanced between events.

Pure, and light: the sessions listing (``onegc sessions``) draws it without importing the event
models (start-up, README).
"""

from __future__ import annotations

import time

from runner.wire.summary import ENDED_STATES, Summary


class Countdown(Summary):
    """The budget left of one session, advanced locally between events (the figure in the
    store is as of its last heartbeat; the screen counts down from there). Its events change it
    by the rules of every summary (:meth:`~runner.wire.summary.Summary.see`)."""

    @classmethod
    def of_row(cls, row: dict) -> Countdown:
        countdown = cls()
        countdown.update_from_row(row)
        return countdown

    def update_from_row(self, row: dict) -> None:
        self.budget_s = row.get("budget_s")
        self.state = row.get("state") or "queued"
        self.remaining_s = row.get("remaining_s")
        self.remaining_ts = row.get("remaining_ts")
        self.active_s = row.get("active_s")
        self.ended_ts = row.get("ended_ts")

    def remaining_now(self, now: float | None = None) -> float | None:
        """The budget left at ``now``: an ended session has what its active time did not use."""
        if self.state in ENDED_STATES and self.budget_s is not None:
            return max(0.0, self.budget_s - (self.active_s or 0.0))
        if self.remaining_s is None:
            return None
        if self.state != "running" or self.remaining_ts is None:
            return self.remaining_s
        return max(0.0, self.remaining_s - ((now or time.time()) - self.remaining_ts))

    def fraction_left(self, now: float | None = None) -> float:
        left = self.remaining_now(now)
        if left is None or not self.budget_s:
            return 0.0
        return left / self.budget_s
