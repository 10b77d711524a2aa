"""Which live events and states deserve a notification, and how a burst of them becomes a few.

:class:`Alerts` turns ingested events and summary rows into :class:`Alert` records (a new best,
a failed score, a blocked connection, a refused pause or resume, an end, 10 % of the budget
left, a stall and its end, a dead runner);
:class:`Coalescer` merges them into at most one :class:`Note` per kind every few seconds. Pure:
the Textual app shows the notes, the tests drive both with a fixed clock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from onegc_tui.views.countdown import Countdown
from onegc_tui.views.format import clock
from onegc_tui.views.task_facts import metric_label, scored_split
from runner.wire.defaults import STALL_CLEARED, STALL_WARNING
from runner.wire.score_terms import best_name, score_name
from runner.wire.summary import end_state
from tasks import Direction, better

LOW_BUDGET_FRACTION = 0.10  # warn once when this share of the budget is left
Severity = Literal["information", "warning", "error"]


@dataclass(frozen=True)
class Alert:
    session_id: str
    message: str
    severity: Severity = "information"  # app.notify's severities
    kind: str = "note"  # new_best, score_failed, network_blocked, ended, failed, low_budget, stalled, stall_cleared, …


COALESCE_S = 5.0  # at most one notification of a kind this often: a study's 20 new bests are one toast
SEVERITY_ORDER: tuple[Severity, ...] = ("information", "warning", "error")


@dataclass(frozen=True)
class Note:
    """One notification to show: a kind's alerts merged, the selected session's first."""

    message: str
    severity: Severity
    kind: str
    sessions: tuple[str, ...]


class Coalescer:
    """Turns alerts into at most one :class:`Note` per kind per ``window_s``: the first alerts of
    a kind show at once (all those of one batch as one note), later ones within the window wait
    and show together when it ends. In a merged note the selected session's alert comes first."""

    def __init__(self, window_s: float = COALESCE_S):
        self.window_s = window_s
        self.last_shown: dict[str, float] = {}
        self.waiting: dict[str, list[Alert]] = {}

    def add(self, alerts: list[Alert], now: float, selected: str | None = None) -> list[Note]:
        out = []
        for kind, group in _by_kind(alerts).items():
            if now - self.last_shown.get(kind, -1e18) >= self.window_s and not self.waiting.get(kind):
                self.last_shown[kind] = now
                out.append(merge(group, selected))
            else:
                self.waiting.setdefault(kind, []).extend(group)
        return out

    def due(self, now: float, selected: str | None = None) -> list[Note]:
        """The waiting alerts whose window has passed, one note per kind."""
        out = []
        for kind, group in list(self.waiting.items()):
            if group and now - self.last_shown.get(kind, -1e18) >= self.window_s:
                self.last_shown[kind] = now
                out.append(merge(group, selected))
                del self.waiting[kind]
        return out


def _by_kind(alerts: list[Alert]) -> dict[str, list[Alert]]:
    out: dict[str, list[Alert]] = {}
    for a in alerts:
        out.setdefault(a.kind, []).append(a)
    return out


def merge(alerts: list[Alert], selected: str | None = None) -> Note:
    """One note for alerts of one kind: the selected session's (else the latest) in full, then
    how many more and which sessions."""
    ordered = sorted(alerts, key=lambda a: a.session_id != selected)  # stable: the selected first
    if selected not in {a.session_id for a in alerts}:
        ordered = [alerts[-1], *alerts[:-1]]  # the newest news first
    head, rest = ordered[0], ordered[1:]
    sessions = tuple(dict.fromkeys(a.session_id for a in ordered))
    message = head.message
    if rest:
        others = [sid for sid in sessions if sid != head.session_id]
        shown = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
        message += f"\n+ {len(rest)} more" + (f": {shown}" if others else "")
    severity = max((a.severity for a in alerts), key=SEVERITY_ORDER.index)
    return Note(message, severity, head.kind, sessions)


class Alerts:
    """Which live events and states deserve a notification, each at most once.

    :meth:`scored`, :meth:`warned`, :meth:`refused` and :meth:`ended` see each new score, warning,
    refused control and end once, as
    the store has them (whoever ingested them: the live feed reads the store's rows,
    onegc_tui/views/live_feed.py); :meth:`check` runs on a clock over the summary rows for what no
    single event says: 10 % of the budget left, a runner that died.

    "Stalled" is the runner's word, never the monitor's guess: the runner warns after
    runner.wire.defaults.STALL_S without a model response while no tool runs, and says when that
    ends (runner/session/stall.py); the monitor shows both."""

    def __init__(self, direction: Callable[[str], Direction] = lambda sid: "higher",
                 task: Callable[[str], str | None] = lambda sid: None):
        self.direction = direction  # sid -> the direction of the session's task
        self.task = task  # sid -> its task: each score says its role, split and measure (docs/numbers.md)
        self.best: dict[str, float] = {}  # best live score per session: only a new best is news
        self.low_sent: set[str] = set()
        self.states: dict[str, str | None] = {}

    def scored(self, sid: str, name: str, value: float | None, error: str | None, at_s: float | None) -> list[Alert]:
        """A live score: a failed one, or a new best (named by its role, split and measure)."""
        if error:
            return [Alert(sid, f"{sid}: {name} failed scoring: {error}", "error", "score_failed")]
        if value is not None:
            old = self.best.get(sid)
            if old is None or better(value, old, self.direction(sid)):
                self.best[sid] = value
                label = metric_label(self.task(sid))
                return [Alert(sid, f"{sid}: new {best_name(label)} {value:.4f} · {name} at {clock(at_s or 0.0)}",
                              kind="new_best")]
        return []

    def warned(self, sid: str, code: str, message: str) -> list[Alert]:
        """A warning of the runner's: the ones that deserve a notification."""
        if code == "network_blocked":
            return [Alert(sid, f"{sid}: blocked network attempt: {message}", "warning", "network_blocked")]
        if code in ("oom", "process_cap"):  # a cap of the session (runner/sandbox/caps.py)
            return [Alert(sid, f"{sid}: {message}", "warning", code)]
        if code == STALL_WARNING:
            return [Alert(sid, f"{sid} stalled: {message}", "warning", "stalled")]
        if code == STALL_CLEARED:
            return [Alert(sid, f"{sid}: {message}", "information", "stall_cleared")]
        return []

    def refused(self, sid: str, action: str, detail: str) -> list[Alert]:
        """A control the runner refused: the person who asked must see it (not only a transcript line)."""
        return [Alert(sid, f"{sid}: {action} refused: {detail or 'the runner said no'}", "warning", "control_refused")]

    def ended(self, sid: str, reason: str, score: float | None, detail: str) -> list[Alert]:
        """A session's own end (``session_ended``): its official score, named by its role, split and measure."""
        self.states[sid] = end_state(reason)
        task = self.task(sid)
        official = score_name(metric_label(task), scored_split(task), "official")
        result = f"{official} {score:.4f}" if score is not None else f"no {official}"
        if self.states[sid] == "failed":
            return [Alert(sid, f"{sid} FAILED ({reason.replace('_', ' ')}): {detail}", "error", "failed")]
        return [Alert(sid, f"{sid}: {reason.replace('_', ' ')}, {result}",
                      "information" if score is not None else "warning", "ended")]

    def check(self, rows: dict[str, dict], now: float) -> list[Alert]:
        out = []
        for sid, row in rows.items():
            state = row.get("state")
            before = self.states.get(sid)
            self.states[sid] = state
            if state == "failed" and before in ("running", "paused"):  # the runner died without session_ended
                out.append(Alert(sid, f"{sid} FAILED: {row.get('end_detail') or row.get('end_reason')}", "error", "failed"))
            if state != "running":
                continue
            left = Countdown.of_row(row)
            if left.budget_s and sid not in self.low_sent and left.fraction_left(now) <= LOW_BUDGET_FRACTION:
                self.low_sent.add(sid)
                out.append(Alert(sid, f"{sid}: {LOW_BUDGET_FRACTION:.0%} of the budget left ({clock(left.remaining_now(now))})",
                                 "warning", "low_budget"))
        return out

