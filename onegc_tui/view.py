"""What the screens show, computed without a screen: text for cells, lines and bars.

Pure functions over store rows and events, shared by the Textual app and its tests.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runner.events import Event

BAR_WIDTH = 10
KIND_MARKS = {"text": "»", "thinking": "…", "tool_call": "▶", "tool_result": "◀", "progress": "⏱", "usage": "$", "result": "■",
              "error": "✖", "raw": "·"}
# the marks of the harness's own lines in the transcript pane (event_line)
EVENT_MARKS = {"warning": "⚠", "checkpoint_scored": "★", "control": "⏯", "process": "⚙", "session_ended": "■"}
# what each mark in the transcript pane means (the help screen shows this; a test keeps it complete)
MARK_LEGEND: dict[str, str] = {
    "»": "the agent's text", "…": "the agent thinking", "▶": "a tool call [tool]", "◀": "its result [exit code]",
    "■": "the agent's final result; the session's end", "✖": "an error", "·": "a raw line the parser did not know",
    "$": "token usage (not shown as a line)", "⚠": "a warning from the harness (blocked network, no GPU…)",
    "★": "a checkpoint scored (ERROR: scoring failed)", "⏯": "pause/resume/abort, accepted or refused",
    "⚙": "a training script started or ended", "⏱": "a tool still running (one line per tool, updated)",
}


def count(n: int, noun: str) -> str:
    """``1 session``, ``2 sessions``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def clock(seconds: float | None) -> str:
    if seconds is None:
        return "--:--"
    seconds = max(0, int(round(seconds)))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


COARSE_FROM_S = 600  # the table shows whole minutes above this: a per-second change repaints every row


def table_clock(seconds: float | None) -> str:
    """Budget left for the sessions table: minutes while there is plenty, seconds near the end."""
    if seconds is None or seconds < COARSE_FROM_S:
        return clock(seconds)
    h, m = divmod(int(seconds // 60), 60)
    return f"{h}h{m:02d}m" if h else f"{m}m"


def bar(fraction: float, width: int = BAR_WIDTH) -> str:
    fraction = min(1.0, max(0.0, fraction))
    full = int(fraction * width)
    part = " ▏▎▍▌▋▊▉"[int((fraction * width - full) * 8)] if full < width else ""
    return ("█" * full + part).ljust(width, "·")[:width]


def short_task(task: str | None) -> str:
    if not task:
        return "?"
    from tasks import UnknownTask, get_task  # the registry (pydantic) once a table shows a task

    try:
        return get_task(task).short.upper()
    except UnknownTask:
        return task


def fmt_score(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def fmt_tokens(n: int | None) -> str:
    if not n:
        return "-"
    return f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n / 1e3:.0f}k" if n >= 1e3 else str(n)


@dataclass
class BudgetView:
    """The countdown of one session, advanced locally between events."""

    budget_s: float | None = None
    remaining_s: float | None = None
    as_of: float | None = None  # wall time of the figure above
    state: str = "queued"

    def update_from_row(self, row: dict) -> None:
        self.budget_s = row.get("budget_s")
        self.state = row.get("state") or "queued"
        self.remaining_s = row.get("remaining_s")
        self.as_of = row.get("remaining_ts")
        if self.state in ("ended", "failed") and self.budget_s is not None:
            self.remaining_s = max(0.0, self.budget_s - (row.get("active_s") or 0.0))

    def apply(self, event: Event) -> None:
        t = event.type
        if t == "session_started":
            self.budget_s, self.remaining_s, self.as_of, self.state = event.budget_s, event.budget_s, event.ts, "running"
        elif t in ("heartbeat", "budget"):
            self.remaining_s, self.as_of = event.remaining_s, event.ts
            if t == "budget":
                self.state = "paused" if event.state == "paused" else ("running" if event.state in ("running", "resumed") else self.state)
        elif t == "session_ended":
            self.state = "ended" if event.reason in ("completed", "budget_exhausted", "aborted") else "failed"
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


def transcript_line(ts: float, role: str, kind: str, tool: str | None, text: str, exit_code: int | None = None) -> str:
    stamp = time.strftime("%H:%M:%S", time.localtime(ts))
    mark = KIND_MARKS.get(kind, "·")
    head = f"{stamp} {mark} "
    if kind == "tool_call":
        head += f"[{tool or 'tool'}] "
    elif kind == "tool_result" and exit_code is not None:
        head += f"[exit {exit_code}] "
    elif kind == "usage":
        return head + "usage"
    first, *rest = (text or "").splitlines() or [""]
    return head + first[:500] + (f"  (+{len(rest)} lines)" if rest else "")


PANE_EVENT_TYPES = ("transcript", "warning", "checkpoint_scored", "control", "process", "session_ended")


def event_line(event: Event) -> str | None:
    """A transcript-pane line for an event: transcript steps and the harness's notable events."""
    if event.type == "transcript":
        if event.kind in ("usage", "progress"):  # a heartbeat updates its one stored row; it adds no line
            return None
        return transcript_line(event.ts, event.role, event.kind, event.tool, event.text, event.exit_code)
    stamp = time.strftime("%H:%M:%S", time.localtime(event.ts))
    mark = EVENT_MARKS.get(event.type)
    if event.type == "warning":
        return f"{stamp} {mark} {event.code}: {event.message}"
    if event.type == "checkpoint_scored":
        what = fmt_score(event.value) if event.value is not None else f"ERROR {event.error}"
        return f"{stamp} {mark} {'official ' if event.official else ''}{event.name}: {what}"
    if event.type == "control":
        return f"{stamp} {mark} {event.action} {'accepted' if event.accepted else 'refused: ' + event.detail}"
    if event.type == "process":
        return f"{stamp} {mark} {event.script} {event.action}"
    if event.type == "session_ended":
        return f"{stamp} {mark} session ended: {event.reason} ({event.detail})"
    return None


# ----------------------------------------------------------------------------- transcript filters

FILTERS = ("all", "text", "tools", "errors")  # 't' cycles through these
FILTER_KINDS = {"text": ("text", "thinking", "result"), "tools": ("tool_call", "tool_result", "progress"),
                "errors": ("error",)}
FAILED_REASONS = ("agent_failed", "harness_error")


def event_matches(event: Event, mode: str, words: tuple[str, ...] = ()) -> bool:
    """Does a pane event pass the transcript filter (mode) and the search words (all, any case)?"""
    if mode != "all":
        if event.type == "transcript":
            ok = event.kind in FILTER_KINDS[mode] or (
                mode == "errors" and event.kind == "tool_result" and event.exit_code not in (None, 0))
        elif mode == "errors":
            ok = (event.type == "warning" or (event.type == "checkpoint_scored" and bool(event.error))
                  or (event.type == "session_ended" and event.reason in FAILED_REASONS))
        else:
            ok = False
        if not ok:
            return False
    if words:
        text = (getattr(event, "text", None) or getattr(event, "message", None) or getattr(event, "error", None)
                or getattr(event, "detail", None) or "").lower()
        return all(w in text for w in words)
    return True


def search_words(query: str) -> tuple[str, ...]:
    return tuple(w.lower() for w in query.split())


# ----------------------------------------------------------------------------- alerts

STALL_S = 10 * 60.0  # a session is "stalled" after this long with no transcript, busy GPU or training process
LOW_BUDGET_FRACTION = 0.10  # warn once when this share of the budget is left
BUSY_UTIL_PCT = 10.0  # a GPU sample above this is activity (analysis.BUSY_UTIL_PCT)


@dataclass(frozen=True)
class Alert:
    session_id: str
    message: str
    severity: str = "information"  # information, warning, error (app.notify's severities)
    kind: str = "note"  # new_best, score_failed, network_blocked, ended, failed, low_budget, stalled, …


COALESCE_S = 5.0  # at most one notification of a kind this often: a study's 20 new bests are one toast
SEVERITY_ORDER = ("information", "warning", "error")


@dataclass(frozen=True)
class Note:
    """One notification to show: a kind's alerts merged, the selected session's first."""

    message: str
    severity: str
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

    ``feed`` sees every newly ingested event; ``check`` runs on a clock over the summary rows for
    what no single event says: 10 % of the budget left, a stall, a runner that died."""

    def __init__(self, stall_s: float = STALL_S, higher_is_better=lambda sid: True):
        self.stall_s = stall_s
        self.higher_is_better = higher_is_better  # sid -> bool: the session's task direction
        self.best: dict[str, float] = {}  # best live score per session: only a new best is news
        self.activity: dict[str, float] = {}  # last transcript / busy GPU / process event, epoch seconds
        self.training: dict[str, set[int]] = {}  # training processes alive
        self.low_sent: set[str] = set()
        self.stall_sent: set[str] = set()
        self.states: dict[str, str] = {}

    def seed(self, sid: str, last_activity: float | None, training_pids: set[int]) -> None:
        if last_activity is not None:
            self.activity[sid] = max(self.activity.get(sid, 0.0), last_activity)
        self.training[sid] = set(training_pids)

    def _active(self, sid: str, ts: float) -> None:
        self.activity[sid] = max(self.activity.get(sid, 0.0), ts)
        self.stall_sent.discard(sid)

    def feed(self, sid: str, e: Event) -> list[Alert]:
        t = e.type
        if t == "transcript":
            self._active(sid, e.ts)
        elif t == "gpu" and e.util_pct > BUSY_UTIL_PCT:
            self._active(sid, e.ts)
        elif t == "process" and e.training:
            pids = self.training.setdefault(sid, set())
            (pids.add if e.action == "started" else pids.discard)(e.pid)
            self._active(sid, e.ts)
        elif t == "session_started":
            self._active(sid, e.ts)
        elif t == "checkpoint_scored" and not e.official:
            if e.error:
                return [Alert(sid, f"{sid}: {e.name} failed scoring: {e.error}", "error", "score_failed")]
            if e.value is not None:
                old = self.best.get(sid)
                higher = self.higher_is_better(sid)
                if old is None or (e.value > old if higher else e.value < old):
                    self.best[sid] = e.value
                    return [Alert(sid, f"{sid}: new best, {e.name} scored {e.value:.4f} {e.metric} at "
                                       f"{clock(e.budget_elapsed_s)}", kind="new_best")]
        elif t == "warning" and e.code == "network_blocked":
            return [Alert(sid, f"{sid}: blocked network attempt: {e.message}", "warning", "network_blocked")]
        elif t == "session_ended":
            self.states[sid] = "failed" if e.reason in FAILED_REASONS else "ended"
            score = f"score {e.score:.4f}" if e.score is not None else "no score"
            if e.reason in FAILED_REASONS:
                return [Alert(sid, f"{sid} FAILED ({e.reason.replace('_', ' ')}): {e.detail}", "error", "failed")]
            return [Alert(sid, f"{sid}: {e.reason.replace('_', ' ')}, {score}",
                          "information" if e.score is not None else "warning", "ended")]
        return []

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
            view = BudgetView()
            view.update_from_row(row)
            if view.budget_s and sid not in self.low_sent and view.fraction_left(now) <= LOW_BUDGET_FRACTION:
                self.low_sent.add(sid)
                out.append(Alert(sid, f"{sid}: {LOW_BUDGET_FRACTION:.0%} of the budget left ({clock(view.remaining_now(now))})",
                                 "warning", "low_budget"))
            last = self.activity.get(sid) or row.get("started_ts")
            if (last is not None and now - last >= self.stall_s and not self.training.get(sid)
                    and sid not in self.stall_sent):
                self.stall_sent.add(sid)
                out.append(Alert(sid, f"{sid} looks stalled: no transcript, GPU activity or training process "
                                      f"for {clock(now - last)}", "warning", "stalled"))
        return out


# ----------------------------------------------------------------------------- plots

_BRAILLE = 0x2800
_DOT = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))  # [pixel row][pixel column] in a cell


class BrailleCanvas:
    """A character grid of braille cells, 2×4 pixels each; every cell remembers which series drew last."""

    def __init__(self, width: int, height: int):
        self.width, self.height = max(1, width), max(1, height)
        self.bits = [[0] * self.width for _ in range(self.height)]
        self.owner = [[-1] * self.width for _ in range(self.height)]

    @property
    def px(self) -> tuple[int, int]:
        return self.width * 2, self.height * 4

    def dot(self, x: int, y: int, series: int = 0) -> None:
        """Pixel (x, y), y counted from the top."""
        if 0 <= x < self.width * 2 and 0 <= y < self.height * 4:
            r, c = y // 4, x // 2
            self.bits[r][c] |= _DOT[y % 4][x % 2]
            self.owner[r][c] = series

    def line(self, x0: int, y0: int, x1: int, y1: int, series: int = 0) -> None:
        n = max(abs(x1 - x0), abs(y1 - y0), 1)
        for i in range(n + 1):
            self.dot(round(x0 + (x1 - x0) * i / n), round(y0 + (y1 - y0) * i / n), series)

    def rows(self) -> list[str]:
        return ["".join(chr(_BRAILLE + b) if b else " " for b in row) for row in self.bits]


def plot_series(series: list[list[tuple[float, float]]], width: int, height: int, x_max: float,
                y_range: tuple[float, float] | None = None,
                modes: list[str] | None = None) -> tuple[BrailleCanvas, tuple[float, float]]:
    """Draw each series ((x, y) points, x in [0, x_max]) on a braille canvas, each as a ``step`` line
    (best so far, the default), a ``line`` or ``dots``; returns the canvas and the y range used."""
    canvas = BrailleCanvas(width, height)
    ys = [y for s in series for _, y in s]
    if y_range is None:
        if not ys:
            return canvas, (0.0, 1.0)
        lo, hi = min(ys), max(ys)
        pad = (hi - lo) * 0.05 or abs(hi) * 0.05 or 1.0
        y_range = (lo - pad, hi + pad)
    lo, hi = y_range
    pw, ph = canvas.px

    def xy(x: float, y: float) -> tuple[int, int]:
        fx = min(1.0, max(0.0, x / x_max)) if x_max > 0 else 0.0
        fy = min(1.0, max(0.0, (y - lo) / (hi - lo))) if hi > lo else 0.5
        return round(fx * (pw - 1)), round((1 - fy) * (ph - 1))

    for k, points in enumerate(series):
        mode = modes[k] if modes else "step"
        prev = None
        for x, y in points:
            p = xy(x, y)
            if prev is None or mode == "dots":
                canvas.dot(*p, series=k)
            elif mode == "step":
                canvas.line(prev[0], prev[1], p[0], prev[1], k)
                canvas.line(p[0], prev[1], p[0], p[1], k)
            else:
                canvas.line(*prev, *p, series=k)
            prev = p
    return canvas, y_range


def best_so_far(points: list[tuple[float, float]], higher: bool, until: float | None = None) -> list[tuple[float, float]]:
    """The step points of the best score so far (points sorted by x), extended flat to ``until``."""
    out: list[tuple[float, float]] = []
    for x, y in sorted(points):
        if not out or (y > out[-1][1] if higher else y < out[-1][1]):
            out.append((x, y))
    if out and until is not None and until > out[-1][0]:
        out.append((until, out[-1][1]))
    return out


def level_strip(values: list[tuple[float, float]], width: int, x_max: float, top: float = 100.0) -> str:
    """A one-line bar strip (▁…█) of (x, value) samples on [0, x_max], the max per column."""
    cols = [-1.0] * max(1, width)
    for x, v in values:
        c = min(width - 1, max(0, int(x / x_max * width))) if x_max > 0 else 0
        cols[c] = max(cols[c], v)
    blocks = " ▁▂▃▄▅▆▇█"
    return "".join("·" if v < 0 else blocks[min(8, max(1, round(v / top * 8)))] if v > 0 else "▁" for v in cols)


# ----------------------------------------------------------------------------- budget time

class BudgetClock:
    """Wall time → budget time (active seconds) of one session, from (ts, active_s) anchors
    (session start, heartbeats, the end); flat while paused, linear between anchors."""

    def __init__(self, anchors: list[tuple[float, float]]):
        self.anchors = sorted(anchors)

    def at(self, ts: float) -> float:
        a = self.anchors
        if not a:
            return 0.0
        if ts <= a[0][0]:
            return a[0][1]
        import bisect

        i = bisect.bisect_right(a, (ts, float("inf")))
        if i >= len(a):
            return a[-1][1] + (ts - a[-1][0])  # past the last heartbeat: assume it kept running
        (t0, b0), (t1, b1) = a[i - 1], a[i]
        return b0 + (b1 - b0) * (ts - t0) / (t1 - t0) if t1 > t0 else b1
