"""What the screens show, computed without a screen: text for cells, lines and bars.

Pure functions over store rows and events, shared by the Textual app and its tests.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from runner.events import Event
from tasks import UnknownTask, get_task

BAR_WIDTH = 10
STATE_LABELS = {"queued": "queued", "running": "running", "paused": "PAUSED", "ended": "ended", "failed": "FAILED"}
KIND_MARKS = {"text": "»", "thinking": "…", "tool_call": "▶", "tool_result": "◀", "usage": "$", "result": "■",
              "error": "✖", "raw": "·"}


def clock(seconds: float | None) -> str:
    if seconds is None:
        return "--:--"
    seconds = max(0, int(round(seconds)))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def bar(fraction: float, width: int = BAR_WIDTH) -> str:
    fraction = min(1.0, max(0.0, fraction))
    full = int(fraction * width)
    part = " ▏▎▍▌▋▊▉"[int((fraction * width - full) * 8)] if full < width else ""
    return ("█" * full + part).ljust(width, "·")[:width]


def short_task(task: str | None) -> str:
    if not task:
        return "?"
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
        self.as_of = row.get("last_ts")
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


def session_cells(row: dict, now: float | None = None) -> dict[str, str]:
    """The sessions-table cells of one summary row, keyed by column."""
    view = BudgetView()
    view.update_from_row(row)
    left = view.remaining_now(now)
    if row.get("state") in ("ended", "failed"):
        left_text = (row.get("end_reason") or "").replace("_", " ")
    else:
        left_text = f"{bar(view.fraction_left(now), 8)} {clock(left)}"
    util = row.get("gpu_util")
    return {
        "session": row["session_id"],
        "task": short_task(row.get("task")),
        "agent": row.get("agent") or "",
        "state": STATE_LABELS.get(row.get("state") or "", row.get("state") or ""),
        "left": left_text,
        "best": fmt_score(row.get("score") if row.get("score") is not None else row.get("best_live")),
        "gpu": "-" if util is None else f"{util:.0f}%",
        "ckpts": str(row.get("n_checkpoints") or 0),
        "scripts": str(row.get("scripts_launched") or 0),
        "tokens": fmt_tokens((row.get("tokens_in") or 0) + (row.get("tokens_out") or 0)),
        "cost": "-" if not row.get("cost_usd") else f"${row['cost_usd']:.2f}",
    }


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
        if event.kind == "usage":
            return None
        return transcript_line(event.ts, event.role, event.kind, event.tool, event.text, event.exit_code)
    stamp = time.strftime("%H:%M:%S", time.localtime(event.ts))
    if event.type == "warning":
        return f"{stamp} ⚠ {event.code}: {event.message}"
    if event.type == "checkpoint_scored":
        what = fmt_score(event.value) if event.value is not None else f"ERROR {event.error}"
        return f"{stamp} ★ {'official ' if event.official else ''}{event.name}: {what}"
    if event.type == "control":
        return f"{stamp} ⏯ {event.action} {'accepted' if event.accepted else 'refused: ' + event.detail}"
    if event.type == "process":
        return f"{stamp} ⚙ {event.script} {event.action}"
    if event.type == "session_ended":
        return f"{stamp} ■ session ended: {event.reason} ({event.detail})"
    return None
