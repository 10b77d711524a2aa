"""A session's time ledger: where its wall-clock time went, and what the GPU did meanwhile.

Agent time (from the transcript's timestamps, :func:`onegc_tui.results.analysis.activities_from_events`):

- ``model_s``: the agent waits for the model (no tool call open) — model generation, the
  network round trip to the API included;
- ``tool_s``: a tool call is open (shell commands, training runs started in the foreground, edits);
- ``paused_s``: the budget was paused (by a person: nobody's fault, not the agent's time);
- ``other_s``: the rest of the session's wall time: the harness starting the agent, the agent
  CLI starting up before its first transcript line, the grace period and official scoring.

Paused time wins over the agent's labels where they overlap, so the four add up to ``wall_s``.

GPU time (from the GPU samples, :func:`onegc_tui.results.analysis.gpu_time_split`, GPU-seconds summed
over the session's GPUs): ``gpu_busy_s``, ``gpu_idle_s`` and the idle time by cause
(``idle_by``: paused, model_thinking, tool_running, no_training_process, unattributed, in
that priority where causes overlap). ``gpu_unsampled_s`` is GPU time the samples do not cover
(no GPU, a stalled sampler): neither busy nor idle.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from onegc_tui.results.analysis import (  # the interval arithmetic of the GPU split, shared rather than copied
    Activity,
    GpuSplit,
    _intersect,
    _subtract,
    _total,
    _union,
)
from onegc_tui.views.timeline import Timeline

AGENT_PARTS = ("model_s", "tool_s", "paused_s", "other_s")
PART_LABELS: Mapping[str, str] = {
    "model_s": "model generation",
    "tool_s": "tool time",
    "paused_s": "paused",
    "other_s": "harness / start-up / scoring",
    "gpu_busy_s": "GPU busy",
    "gpu_idle_s": "GPU idle",
    "gpu_unsampled_s": "GPU not sampled",
}


@dataclass(frozen=True, slots=True)
class TimeLedger:
    """One session's time (seconds); see the module docstring for each part."""

    session_id: str
    wall_s: float
    model_s: float
    tool_s: float
    paused_s: float
    other_s: float
    n_gpus: int
    gpu_busy_s: float
    gpu_idle_s: float
    gpu_unsampled_s: float
    idle_by: Mapping[str, float]

    def share(self, part: str) -> float | None:
        """``part`` as a share of the wall time (GPU parts: of the GPU-seconds)."""
        whole = self.wall_s * max(1, self.n_gpus) if part.startswith("gpu_") else self.wall_s
        return getattr(self, part) / whole if whole > 0 else None

    def as_dict(self) -> dict:
        return {"session_id": self.session_id, "wall_s": self.wall_s, "model_s": self.model_s, "tool_s": self.tool_s,
                "paused_s": self.paused_s, "other_s": self.other_s, "n_gpus": self.n_gpus,
                "gpu_busy_s": self.gpu_busy_s, "gpu_idle_s": self.gpu_idle_s,
                "gpu_unsampled_s": self.gpu_unsampled_s,
                **{f"gpu_idle_{k}_s": v for k, v in self.idle_by.items()}}


def time_ledger(session_id: str, window: tuple[float, float], activities: Iterable[Activity],
                gpu: GpuSplit | None, n_gpus: int) -> TimeLedger:
    """The ledger of a session over ``window`` (its start and end, epoch seconds)."""
    start, end = window
    wall = max(0.0, end - start)
    span = [(start, end)] if end > start else []
    acts = list(activities)

    def kind(k: str) -> list[tuple[float, float]]:
        return _intersect(_union((a.start, a.end) for a in acts if a.kind == k), span)

    paused = kind("paused")
    tool = _subtract(kind("tool_running"), paused)
    model = _subtract(_subtract(kind("model_thinking"), paused), tool)
    paused_s, tool_s, model_s = _total(paused), _total(tool), _total(model)
    other_s = max(0.0, wall - paused_s - tool_s - model_s)
    busy = gpu.busy_s if gpu else 0.0
    idle = gpu.idle_s if gpu else 0.0
    unsampled = max(0.0, wall * n_gpus - busy - idle)
    idle_by = dict(gpu.idle_by) if gpu else {}
    return TimeLedger(session_id, wall, model_s, tool_s, paused_s, other_s, n_gpus, busy, idle, unsampled, idle_by)


def summed(ledgers: Iterable[TimeLedger]) -> dict[str, float]:
    """The parts summed over sessions (a cell's or a configuration's total)."""
    out: dict[str, float] = {}
    for led in ledgers:
        for k, v in led.as_dict().items():
            if isinstance(v, int | float) and k != "session_id" and math.isfinite(v):
                out[k] = out.get(k, 0.0) + float(v)
    return out




def timeline_ledger(t: Timeline, now: float | None = None) -> TimeLedger | None:
    """The ledger of a session as the detail view holds it (a live one's up to ``now``); None
    before it started."""
    start = t.row.get("started_ts")
    if not start:
        return None
    end = t.row.get("ended_ts") or (now if now is not None else time.time())
    return time_ledger(t.session_id, (start, end), t.activities, t.split, 1 if t.gpu else 0)


def ledger_line(led: TimeLedger) -> str:
    """One line: each agent part's time and share of the wall time."""
    parts = [f"{PART_LABELS[k]} {getattr(led, k):.0f} s ({led.share(k) or 0:.0%})" for k in AGENT_PARTS]
    return f"wall {led.wall_s:.0f} s: " + " · ".join(parts)


__all__ = ["AGENT_PARTS", "PART_LABELS", "TimeLedger", "ledger_line", "summed", "time_ledger", "timeline_ledger"]
