"""How a session stands, from its events: the one set of rules, without the event models
(pydantic), so that the light commands (``onegc sessions``) can use it.

:func:`fold` reads one event (a record: the dict of its fields, as the store's ingest gives it,
or a model's ``__dict__``) into a *delta*, the change it makes to the session's summary. A delta
is applied to what a session already has by the rules below, in memory by :class:`Summary` (the
plain display, the monitor's countdown) and in SQL by the store (``onegc_tui/store``), whose
``sessions`` columns bear the same names:

- counts (:data:`ADDED`: checkpoints, warnings, flagged scores (a verdict of strength look or
  stronger: runner/wire/verdicts.py), training scripts, the agent's
  output left out of the record past its caps, the times a memory, process or disk cap stopped
  the agent) add;
- ``first_checkpoint_s`` is kept where there already is one;
- ``live_values`` lists the live scores seen: the best of them and ``best_live``, by
  :func:`tasks.best_of` in the direction of the session's task, becomes ``best_live``;
- ``state`` ``running`` or ``paused`` changes nothing once the session has ended (``ended_ts``:
  a late budget event does not revive it), and otherwise clears ``end_reason`` and ``end_detail``
  (a liveness verdict gives way to the session's own events showing it alive);
- every other key replaces (``session_ended`` sets ``remaining_s`` to None: nothing is left).

The bulk kinds (transcript lines, GPU samples) change the summary too (usage, the latest GPU
figures, ``last_ts``); the store sorts those out itself, in C, and :func:`fold` ignores them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Literal

from runner.wire.defaults import CAP_WARNINGS
from runner.wire.end_reasons import FAILED_REASONS
from runner.wire.verdicts import read as read_verdicts

if TYPE_CHECKING:
    from runner.wire.events import Event

ENDED_STATES = ("ended", "failed")  # a session in these has nothing left to run

# a delta's counts: they add
ADDED = frozenset({"n_checkpoints", "warnings", "flagged", "scripts_launched", "truncated", "truncated_bytes",
                   "caps_reached"})
LIVE_STATES = frozenset({"running", "paused"})  # the states that give way to an end (see the module docstring)


def end_state(reason: str) -> Literal["ended", "failed"]:
    """The state a session that ended for ``reason`` is in: ``failed`` when the agent or the harness
    broke (:data:`FAILED_REASONS`), else ``ended``."""
    return "failed" if reason in FAILED_REASONS else "ended"


def fold(delta: dict[str, Any], r: Mapping[str, Any]) -> None:
    """Add what event record ``r`` changes in its session's summary to ``delta`` (the rules of the
    module docstring), after the events folded into it before; the bulk kinds change nothing."""
    t = r["type"]
    if t == "heartbeat":
        delta.update(remaining_s=r["remaining_s"], remaining_ts=r["ts"], active_s=r["active_s"], procs=r["procs"])
    elif t == "budget":
        delta.update(remaining_s=r["remaining_s"], remaining_ts=r["ts"], deadline=r["deadline"])
        if r["state"] in ("paused", "resumed", "running") and "ended_ts" not in delta:  # not after session_ended
            delta["state"] = "paused" if r["state"] == "paused" else "running"
    elif t == "session_started":
        gpus = r["contract"].get("gpu") or []
        delta.update(state="running", started_ts=r["ts"], study=r["study"], task=r["task"], agent=r["agent"],
                     model=r["model"], repeat=r["repeat"], budget_s=r["budget_s"], grace_s=r["grace_s"],
                     remaining_s=r["budget_s"], remaining_ts=r["ts"], contract=r["contract"],
                     gpu_name=gpus[0].get("name") if gpus else None)
    elif t == "agent_started":
        delta["containment"] = r["containment"]
    elif t == "process":
        if r["action"] == "started" and r["training"]:
            delta["scripts_launched"] = delta.get("scripts_launched", 0) + 1
    elif t == "checkpoint_found":
        delta["n_checkpoints"] = delta.get("n_checkpoints", 0) + 1
        delta.setdefault("first_checkpoint_s", r["budget_elapsed_s"])
    elif t == "checkpoint_scored":
        if any(v.flagged for v in read_verdicts(r.get("verdicts"), r.get("flags"))):  # a look or stronger
            delta["flagged"] = delta.get("flagged", 0) + 1
        if r["value"] is not None and not r["official"]:
            delta.setdefault("live_values", []).append(r["value"])
    elif t == "warning":
        # one event may stand for many (runner/wire/coalesce.py)
        delta["warnings"] = delta.get("warnings", 0) + (r.get("count") or 1)
        if r["code"] in CAP_WARNINGS:  # the memory, process or disk cap stopped the agent
            delta["caps_reached"] = delta.get("caps_reached", 0) + (r.get("count") or 1)
    elif t == "truncated":  # runner/wire/record_caps.py: the part since the previous one of its stream
        delta["truncated"] = delta.get("truncated", 0) + r["dropped"]
        delta["truncated_bytes"] = delta.get("truncated_bytes", 0) + r["dropped_bytes"]
    elif t == "conditions":  # runner/session/contention.py
        delta.update(contended=int(bool(r["contended"])), conditions="; ".join(r["reasons"] or []))
    elif t == "session_ended":
        delta.update(state=end_state(r["reason"]), ended_ts=r["ts"], end_reason=r["reason"], end_detail=r["detail"],
                     score=r["score"], best_checkpoint=r["best_checkpoint"], active_s=r["active_s"], remaining_s=None,
                     val=r.get("val"), val_gap_flag=r.get("val_gap_flag"), whole=r.get("whole"))
        if r.get("not_checked") is not None:  # runner/integrity/checks.py: the threat rows left unchecked
            delta["not_checked"] = list(r["not_checked"])
        if r.get("not_reevaluated") is not None:  # runner/scoring/official.py: what the phase's bounds left
            delta["not_reevaluated"] = r["not_reevaluated"]


@dataclass
class Summary:
    """A session's summary in memory: the figures of its ``sessions`` row that the plain display and
    the countdown need, kept by applying deltas (:func:`fold`) as the store does in SQL."""

    state: str = "queued"
    task: str | None = None
    budget_s: float | None = None
    remaining_s: float | None = None
    remaining_ts: float | None = None  # the time of the figure above
    active_s: float | None = None
    started_ts: float | None = None
    ended_ts: float | None = None  # set by session_ended only (not by a liveness verdict)
    end_reason: str | None = None
    end_detail: str | None = None
    score: float | None = None
    best_checkpoint: str | None = None
    best_live: float | None = None
    n_checkpoints: int = 0
    first_checkpoint_s: float | None = None
    warnings: int = 0
    flagged: int = 0
    scripts_launched: int = 0
    truncated: int = 0  # lines and events of the agent's output left out of the record (runner/wire/record_caps.py)
    truncated_bytes: int = 0
    caps_reached: int = 0  # warnings of runner.wire.defaults.CAP_WARNINGS (a memory, process or disk cap hit)

    def see(self, event: Event | Mapping[str, Any]) -> None:
        """Apply one event (a model, or its record)."""
        delta: dict[str, Any] = {}
        fold(delta, event if isinstance(event, Mapping) else event.__dict__)
        if delta:
            self.apply(delta)

    def apply(self, delta: Mapping[str, Any]) -> None:
        """Apply a delta of :func:`fold` by the module's rules; keys that are no field here (the
        contract, the agent, …) are the store's alone."""
        for key, value in delta.items():
            if key in ADDED:
                setattr(self, key, (getattr(self, key) or 0) + value)
            elif key == "first_checkpoint_s":
                if self.first_checkpoint_s is None:
                    self.first_checkpoint_s = value
            elif key == "live_values":
                self.best_live = _best_live(self.best_live, value, self.task)
            elif key == "state" and value in LIVE_STATES:
                if self.ended_ts is None:
                    self.state, self.end_reason, self.end_detail = value, None, None
            elif key in _FIELDS:
                setattr(self, key, value)

    def end(self, reason: str, detail: str) -> None:
        """A liveness verdict: the runner is gone without ``session_ended`` (the store's
        ``mark_failed``); the session's own events showing it alive override it."""
        if self.state not in ENDED_STATES:
            self.state, self.end_reason, self.end_detail, self.remaining_s = "failed", reason, detail, None


_FIELDS = frozenset(f.name for f in fields(Summary))


def _best_live(best: float | None, values: list[float], task: str | None) -> float:
    """The best of ``best`` (None: none yet) and ``values``, in the direction of ``task``."""
    from tasks import best_of, direction_of  # the task registry's models: only once scores come in

    return best_of(values if best is None else [best, *values], direction_of(task))
