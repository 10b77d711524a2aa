"""A session's time: the budget left as a countdown, and its budget-time axis.

:class:`Countdown` is the budget left, advanced between events; :class:`BudgetAxis` maps wall
time onto budget time (active seconds, standing still while paused); :class:`Timeline` is one
session laid out on that axis for the detail and replay views. Pure; the store's read queries
fill them.
"""

from __future__ import annotations

import bisect
import time
from dataclasses import dataclass, field

from onegc_tui.analysis import Activity, AnytimeCurve, GpuSplit
from runner.events import Event, end_state
from tasks import Direction


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



class BudgetAxis:
    """Wall time → budget time (active seconds) of one session, from (ts, active_s) anchors
    (session start, heartbeats, the end); flat while paused, linear between anchors. (The
    runner's own clock, which makes those figures, is runner.budget.BudgetClock.)"""

    def __init__(self, anchors: list[tuple[float, float]]):
        self.anchors = sorted(anchors)

    def at(self, ts: float) -> float:
        a = self.anchors
        if not a:
            return 0.0
        if ts <= a[0][0]:
            return a[0][1]
        i = bisect.bisect_right(a, (ts, float("inf")))
        if i >= len(a):
            return a[-1][1] + (ts - a[-1][0])  # past the last heartbeat: assume it kept running
        (t0, b0), (t1, b1) = a[i - 1], a[i]
        return b0 + (b1 - b0) * (ts - t0) / (t1 - t0) if t1 > t0 else b1



@dataclass(frozen=True)
class Timeline:
    """One session on its budget-time axis (seconds of active budget) for the detail and replay views."""

    row: dict
    budget_s: float
    direction: Direction
    metric: str
    checkpoints: tuple[tuple[float, float | None, str, bool], ...]  # (budget s, value, name, official)
    gpu: tuple[tuple[float, float], ...]  # (budget s, util %)
    lines: tuple[tuple[float, str], ...]  # (budget s, transcript-pane line)
    end_s: float  # budget time the session reached (now, for a live one)
    curve: AnytimeCurve | None = None
    split: GpuSplit | None = None
    first_checkpoint_s: float | None = None
    activities: tuple[Activity, ...] = field(default=())

    @property
    def session_id(self) -> str:
        return self.row["session_id"]

    def scores(self) -> list[tuple[float, float]]:
        return [(t, v) for t, v, _, official in self.checkpoints if v is not None and not official]

    def lines_until(self, t: float, n: int) -> list[str]:
        i = bisect.bisect_right([x for x, _ in self.lines], t)
        return [line for _, line in self.lines[max(0, i - n):i]]
