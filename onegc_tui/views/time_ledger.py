"""A session's time ledger: where its wall-clock time went, and what the GPU did meanwhile.

Agent time (from the transcript's timestamps, :func:`activities_from_events`):

- ``model_s``: the agent waits for the model (no tool call open) — model generation, the
  network round trip to the API included;
- ``own_s``: the same stretch for an agent that calls no model (``command``, ``scripted``): the
  agent's own work between tool calls. It is never booked as model generation (issue 37: a
  command agent's run read as 99 % "model generation");
- ``tool_s``: a tool call is open (shell commands, training runs started in the foreground, edits);
- ``paused_s``: the budget was paused (by a person: nobody's fault, not the agent's time);
- ``other_s``: the rest of the session's wall time: the harness starting the agent, the agent
  CLI starting up before its first transcript line, the grace period and official scoring.

Paused time wins over the agent's labels where they overlap, so the four add up to ``wall_s``.

GPU time (from the GPU samples, :func:`gpu_time_split`, GPU-seconds summed
over the session's GPUs): ``gpu_busy_s``, ``gpu_idle_s`` and the idle time by cause
(``idle_by``: paused, model_thinking, tool_running, no_training_process, unattributed, in
that priority where causes overlap). ``gpu_unsampled_s`` is GPU time the samples do not cover
(no GPU, a stalled sampler): neither busy nor idle.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from runner.wire.events import (
    AgentStarted,
    BudgetEvent,
    ProcessEvent,
    SessionEnded,
    SessionStarted,
    TranscriptEvent,
)

ActivityKind = Literal["paused", "model_thinking", "tool_running", "no_training_process"]
# NVML utilisation is the share of the sample period with a kernel running; a sample is busy
# above 10 %: at or below it the GPU is waiting (monitoring probes, a stray allocation).
BUSY_UTIL_PCT = 10.0
# A sample stands for at most this long: longer gaps (sampler stalled, machine suspended) are
# unknown time, counted neither busy nor idle.
MAX_SAMPLE_GAP_S = 5.0
DEFAULT_SAMPLE_S = 1.0  # what one sample stands for when there is no gap to measure it by
IDLE_PRIORITY: tuple[ActivityKind, ...] = ("paused", "model_thinking", "tool_running", "no_training_process")
# When labels overlap, idle time goes to the first that applies: a paused budget is nobody's
# fault; "no training process" is what is left when the agent is neither thinking nor in a tool.
UNATTRIBUTED = "unattributed"


@dataclass(frozen=True, slots=True)
class UtilSample:
    """One GPU utilisation sample (a ``gpu`` event): epoch seconds, percent, GPU index."""

    ts: float
    util_pct: float
    index: int = 0


@dataclass(frozen=True, slots=True)
class Activity:
    """What the agent was doing over ``[start, end)`` (epoch seconds)."""

    start: float
    end: float
    kind: ActivityKind


# ----------------------------------------------------------------------------- GPU time

Interval = tuple[float, float]


def _union(intervals: Iterable[Interval]) -> list[Interval]:
    out: list[Interval] = []
    for a, b in sorted(i for i in intervals if i[1] > i[0]):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _intersect(xs: Sequence[Interval], ys: Sequence[Interval]) -> list[Interval]:
    """Intersection of two sorted, disjoint interval lists."""
    out: list[Interval] = []
    i = j = 0
    while i < len(xs) and j < len(ys):
        a, b = max(xs[i][0], ys[j][0]), min(xs[i][1], ys[j][1])
        if a < b:
            out.append((a, b))
        if xs[i][1] < ys[j][1]:
            i += 1
        else:
            j += 1
    return out


def _subtract(xs: Sequence[Interval], ys: Sequence[Interval]) -> list[Interval]:
    """``xs`` minus ``ys`` (both sorted and disjoint)."""
    out: list[Interval] = []
    j = 0
    for a, b in xs:
        while j < len(ys) and ys[j][1] <= a:
            j += 1
        k, start = j, a
        while k < len(ys) and ys[k][0] < b:
            if ys[k][0] > start:
                out.append((start, ys[k][0]))
            start = max(start, ys[k][1])
            k += 1
        if start < b:
            out.append((start, b))
    return out


def _total(xs: Iterable[Interval]) -> float:
    return math.fsum(b - a for a, b in xs)


@dataclass(frozen=True, slots=True)
class GpuSplit:
    """GPU time (GPU-seconds, summed over GPUs) busy and idle; ``idle_by`` splits the idle time
    by activity (:data:`IDLE_PRIORITY` order on overlaps) plus ``"unattributed"``."""

    busy_s: float
    idle_s: float
    idle_by: Mapping[str, float]

    @property
    def total_s(self) -> float:
        return self.busy_s + self.idle_s

    @property
    def busy_fraction(self) -> float | None:
        return self.busy_s / self.total_s if self.total_s > 0 else None


def gpu_time_split(
    samples: Iterable[UtilSample],
    activities: Iterable[Activity] = (),
    *,
    threshold_pct: float = BUSY_UTIL_PCT,
    max_gap_s: float = MAX_SAMPLE_GAP_S,
    window: Interval | None = None,
) -> GpuSplit:
    """Busy vs idle GPU time from utilisation samples, idle time split by what the agent did.

    Sample i stands for ``[ts_i, ts_{i+1})`` (at most ``max_gap_s``; the last one for the median
    spacing, or :data:`DEFAULT_SAMPLE_S`); it is busy when ``util_pct > threshold_pct``. With
    ``window`` (the session's start and end) time outside it is not counted.
    """
    by_gpu: dict[int, list[UtilSample]] = {}
    for s in samples:
        by_gpu.setdefault(s.index, []).append(s)
    kinds = {k: _union((a.start, a.end) for a in activities if a.kind == k) for k in IDLE_PRIORITY}
    busy_s = idle_s = 0.0
    idle_by = dict.fromkeys((*IDLE_PRIORITY, UNATTRIBUTED), 0.0)
    for series in by_gpu.values():
        series.sort(key=lambda s: s.ts)
        gaps = [b.ts - a.ts for a, b in itertools.pairwise(series) if b.ts > a.ts]
        nominal = min(statistics.median(gaps), max_gap_s) if gaps else DEFAULT_SAMPLE_S
        busy: list[Interval] = []
        idle: list[Interval] = []
        for i, s in enumerate(series):
            gap = series[i + 1].ts - s.ts if i + 1 < len(series) else nominal
            span = (s.ts, s.ts + min(gap, max_gap_s))
            (busy if s.util_pct > threshold_pct else idle).append(span)
        busy_u, idle_u = _union(busy), _union(idle)
        if window is not None:
            busy_u, idle_u = _intersect(busy_u, [window]), _intersect(idle_u, [window])
        busy_s += _total(busy_u)
        idle_s += _total(idle_u)
        remaining = idle_u
        for kind in IDLE_PRIORITY:
            hit = _intersect(remaining, kinds[kind])
            idle_by[kind] += _total(hit)
            remaining = _subtract(remaining, hit)
        idle_by[UNATTRIBUTED] += _total(remaining)
    return GpuSplit(busy_s, idle_s, idle_by)


class TimedEvent(Protocol):
    """Any ``runner.wire.events`` event: all the timeline needs of an event it does not look into."""

    @property
    def ts(self) -> float: ...

    @property
    def seq(self) -> int: ...


def activities_from_events(events: Iterable[TimedEvent], end_ts: float | None = None) -> list[Activity]:
    """Label a session's timeline from its events (``runner.wire.events`` objects, in any order).

    - ``model_thinking``: the agent waits for the model — between transcript events while no tool
      call is open, from ``agent_started`` (or the first transcript event) on;
    - ``tool_running``: from a ``tool_call`` until the ``tool_result`` with its ``call_id``
      (a call without an id is closed by the next result without one);
    - ``no_training_process``: no training script alive (``process`` events, ``training=True``);
    - ``paused``: budget ``paused`` until ``resumed``/``running``/``expired``.

    The timeline ends at ``session_ended`` or ``end_ts`` (for a live session: now).
    """
    return activities_in_order(sorted(events, key=lambda e: (e.ts, e.seq)), end_ts)


def activities_in_order(events: Iterable[TimedEvent], end_ts: float | None = None) -> list[Activity]:
    """:func:`activities_from_events` of events already in ``(ts, seq)`` order, read once: the
    record of a session of any size is streamed (issue 38: a flooded session's millions of
    transcript events), and what is held is its activities, a stretch of one kind being one
    activity however many events it spans."""
    start = end = last_ts = agent_start = None
    talk: list[Activity] = []  # model thinking / tool running, from the transcript (cut at the end)
    out: list[Activity] = []
    cursor: float | None = None
    open_calls: list[str | None] = []
    alive: set[int] = set()
    idle_from: float | None = None
    processes_seen = False
    paused_at: float | None = None
    for e in events:
        start = e.ts if start is None else start
        last_ts = e.ts
        if isinstance(e, SessionStarted) and not processes_seen:
            start = idle_from = e.ts
        elif isinstance(e, SessionEnded) and end is None:
            end = e.ts
        elif isinstance(e, AgentStarted) and agent_start is None:
            agent_start = e.ts
            talk.clear()  # the agent's time begins here (transcript lines dated before it add nothing)
            cursor = e.ts if cursor is None else max(cursor, e.ts)
        elif isinstance(e, TranscriptEvent):
            cursor = e.ts if cursor is None else cursor
            if e.ts > cursor:
                _extend(talk, cursor, e.ts, "tool_running" if open_calls else "model_thinking")
            cursor = max(cursor, e.ts)
            if e.kind == "tool_call":
                open_calls.append(e.call_id)
            elif e.kind == "tool_result" and open_calls:
                if e.call_id in open_calls:
                    open_calls.remove(e.call_id)
                elif e.call_id is None:
                    open_calls.pop(0)
        elif isinstance(e, ProcessEvent) and e.training:  # no training process alive
            processes_seen = True
            idle_from = start if idle_from is None else idle_from
            if e.action == "started":
                if not alive and e.ts > idle_from:
                    out.append(Activity(idle_from, e.ts, "no_training_process"))
                alive.add(e.pid)
            else:
                alive.discard(e.pid)
                if not alive:
                    idle_from = e.ts
        elif isinstance(e, BudgetEvent):  # paused budget
            if e.state == "paused" and paused_at is None:
                paused_at = e.ts
            elif e.state != "paused" and paused_at is not None:
                out.append(Activity(paused_at, e.ts, "paused"))
                paused_at = None
    if start is None or last_ts is None:
        return []
    end = end if end is not None else (end_ts if end_ts is not None else last_ts)
    if cursor is not None and cursor < end:
        _extend(talk, cursor, end, "tool_running" if open_calls else "model_thinking")
    talk = [Activity(a.start, min(a.end, end), a.kind) for a in talk]
    idle_from = start if idle_from is None else idle_from
    if not alive and idle_from < end:
        out.append(Activity(idle_from, end, "no_training_process"))
    if paused_at is not None and paused_at < end:
        out.append(Activity(paused_at, end, "paused"))
    return [a for a in talk + out if a.end > a.start]


def _extend(acts: list[Activity], start: float, end: float, kind: ActivityKind) -> None:
    """Add ``[start, end)`` of ``kind``, as a longer last activity where it goes on from it."""
    if acts and acts[-1].kind == kind and acts[-1].end == start:
        acts[-1] = Activity(acts[-1].start, end, kind)
    else:
        acts.append(Activity(start, end, kind))


def count_scripts(events: Iterable[TimedEvent]) -> int:
    """Training scripts the agent launched (the paper's Table 5): ``process`` ``started``
    events with ``training=True``."""
    return sum(1 for e in events if isinstance(e, ProcessEvent) and e.action == "started" and e.training)


# ----------------------------------------------------------------------------- the ledger

AGENT_PARTS = ("model_s", "own_s", "tool_s", "paused_s", "other_s")
PART_LABELS: Mapping[str, str] = {
    "model_s": "model generation",
    "own_s": "agent's own work (no model)",
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
    own_s: float
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
        return {"session_id": self.session_id, "wall_s": self.wall_s, "model_s": self.model_s,
                "own_s": self.own_s, "tool_s": self.tool_s,
                "paused_s": self.paused_s, "other_s": self.other_s, "n_gpus": self.n_gpus,
                "gpu_busy_s": self.gpu_busy_s, "gpu_idle_s": self.gpu_idle_s,
                "gpu_unsampled_s": self.gpu_unsampled_s,
                **{f"gpu_idle_{k}_s": v for k, v in self.idle_by.items()}}


def time_ledger(session_id: str, window: tuple[float, float], activities: Iterable[Activity],
                gpu: GpuSplit | None, n_gpus: int, has_model: bool = True) -> TimeLedger:
    """The ledger of a session over ``window`` (its start and end, epoch seconds). ``has_model``:
    False for an agent without a model (:func:`calls_a_model`): its time between tool calls is its own."""
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
    own_s = 0.0
    if not has_model:
        model_s, own_s = 0.0, model_s
    busy = gpu.busy_s if gpu else 0.0
    idle = gpu.idle_s if gpu else 0.0
    unsampled = max(0.0, wall * n_gpus - busy - idle)
    idle_by = dict(gpu.idle_by) if gpu else {}
    return TimeLedger(session_id, wall, model_s, own_s, tool_s, paused_s, other_s, n_gpus, busy, idle, unsampled, idle_by)


def calls_a_model(agent: str | None) -> bool:
    """The agent calls a model API (the real agent CLIs); ``command`` and ``scripted`` do not."""
    from runner.wire.agents import REAL_AGENTS

    return agent is None or agent in REAL_AGENTS  # an unknown (older) agent: as before


def summed(ledgers: Iterable[TimeLedger]) -> dict[str, float]:
    """The parts summed over sessions (a cell's or a configuration's total)."""
    out: dict[str, float] = {}
    for led in ledgers:
        for k, v in led.as_dict().items():
            if isinstance(v, int | float) and k != "session_id" and math.isfinite(v):
                out[k] = out.get(k, 0.0) + float(v)
    return out





def ledger_line(led: TimeLedger) -> str:
    """One line: each agent part's time and share of the wall time."""
    shown = [k for k in AGENT_PARTS if k != "own_s" or led.own_s > 0]  # model generation, or the agent's own work
    shown = [k for k in shown if k != "model_s" or led.own_s == 0]
    parts = [f"{PART_LABELS[k]} {getattr(led, k):.0f} s ({led.share(k) or 0:.0%})" for k in shown]
    return f"wall {led.wall_s:.0f} s: " + " · ".join(parts)


__all__ = [
    "AGENT_PARTS", "BUSY_UTIL_PCT", "IDLE_PRIORITY", "MAX_SAMPLE_GAP_S", "PART_LABELS", "UNATTRIBUTED",
    "Activity", "ActivityKind", "GpuSplit", "TimeLedger", "TimedEvent", "UtilSample",
    "activities_from_events", "calls_a_model", "count_scripts", "gpu_time_split", "ledger_line", "summed", "time_ledger",
]
