"""A session's budget-time axis (the countdown of the budget left: :mod:`onegc_tui.views.countdown`).

:class:`BudgetAxis` maps wall
time onto budget time (active seconds, standing still while paused); :class:`Timeline` is one
session laid out on that axis for the detail and replay views. Pure; the store's read queries
fill them.
"""

from __future__ import annotations

import bisect
import time
from dataclasses import dataclass, field

from onegc_tui.store import Store
from onegc_tui.store import queries as sql
from onegc_tui.views.anytime import AnytimeCurve
from onegc_tui.views.time_ledger import Activity, GpuSplit, TimeLedger, calls_a_model, time_ledger
from tasks import Direction


class BudgetAxis:
    """Wall time → budget time (active seconds) of one session, from (ts, active_s) anchors
    (session start, heartbeats, the end); flat while paused, linear between anchors. (The
    runner's own clock, which makes those figures, is runner.session.budget.BudgetClock.)"""

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



def budget_axis(store: Store, sid: str, row: dict) -> BudgetAxis:
    """A session's budget axis, from its start and the store's heartbeats and end."""
    start = [(row["started_ts"], 0.0)] if row.get("started_ts") else []
    return BudgetAxis(start + sql.budget_anchors(store, sid))


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
    tensor_share: float | None = None  # the share of the budget its tensor cores were active (GPM; None: no figures)

    @property
    def session_id(self) -> str:
        return self.row["session_id"]

    def scores(self) -> list[tuple[float, float]]:
        return [(t, v) for t, v, _, official in self.checkpoints if v is not None and not official]

    def lines_until(self, t: float, n: int) -> list[str]:
        i = bisect.bisect_right([x for x, _ in self.lines], t)
        return [line for _, line in self.lines[max(0, i - n):i]]

def timeline_ledger(t: Timeline, now: float | None = None) -> TimeLedger | None:
    """The ledger of a session as the detail view holds it (a live one's up to ``now``); None
    before it started."""
    start = t.row.get("started_ts")
    if not start:
        return None
    end = t.row.get("ended_ts") or (now if now is not None else time.time())
    return time_ledger(t.session_id, (start, end), t.activities, t.split, 1 if t.gpu else 0,
                       has_model=calls_a_model(t.row.get("agent")))
