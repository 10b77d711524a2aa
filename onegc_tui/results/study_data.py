"""One study's data as the analyses need it, read from the store once: the outcomes, each
session's checkpoints by the official rule, its timeline, its time ledger and its cost; and the
analyses built on them (anytime curves across repeats, paired comparisons, cost cells) for the
report, the exports, ``onegc history`` and the history screen.

Reads a ``Store`` opened on the calling thread; no UI.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from onegc_tui.results.cost_views import CostCell, cost_cells
from onegc_tui.results.matrix import outcome_row_label, task_sort_key
from onegc_tui.results.paired import PairedComparison, study_comparisons
from onegc_tui.store import Store
from onegc_tui.store import queries as sql
from onegc_tui.views import monitor_data
from onegc_tui.views.anytime import (
    AnytimeCurve,
    CheckpointScore,
    RepeatCurves,
    Scale,
    official_curve,
    repeat_curves,
    rescale_curve,
    score_at_budget,
)
from onegc_tui.views.outcomes import SessionOutcome, resolve_task
from onegc_tui.views.time_ledger import TimeLedger, calls_a_model, time_ledger
from onegc_tui.views.timeline import Timeline


@dataclass(frozen=True)
class SessionData:
    outcome: SessionOutcome
    row: dict
    checkpoints: tuple[CheckpointScore, ...]
    timeline: Timeline | None
    ledger: TimeLedger | None
    curve: AnytimeCurve | None  # by the official rule, raw scale

    @property
    def cost_usd(self) -> float | None:
        cost = self.row.get("cost_usd")
        return float(cost) if cost else None  # 0: no cost recorded (the scripted agent), not free


@dataclass(frozen=True)
class StudyData:
    study: str | None
    sessions: tuple[SessionData, ...]
    noise_from: tuple[str, ...] | None = None
    rescored: bool = False  # scores are re-scores by a newer harness where a session has one (onegc verify --rescore)

    @property
    def outcomes(self) -> list[SessionOutcome]:
        return [s.outcome for s in self.sessions]

    def session(self, sid: str) -> SessionData | None:
        return next((s for s in self.sessions if s.outcome.session_id == sid), None)

    def comparisons(self) -> list[PairedComparison]:
        return study_comparisons(self.outcomes, self.noise_from)

    def costs(self) -> list[CostCell]:
        return cost_cells(self.outcomes, {s.outcome.session_id: s.cost_usd for s in self.sessions})

    def curves(self, scale: Scale = "raw") -> list[RepeatCurves]:
        """Anytime curves across repeats, per configuration × task (finished sessions), on ``scale``;
        cells whose task has no such scale are left out."""
        groups: dict[tuple[str, str], list[SessionData]] = {}
        for s in self.sessions:
            spec = resolve_task(s.outcome.task)
            if spec is None or not s.outcome.finished or s.curve is None:
                continue
            groups.setdefault((outcome_row_label(s.outcome), spec.short), []).append(s)
        out = []
        for (label, task), runs in sorted(groups.items(), key=lambda kv: (task_sort_key(kv[0][1]), kv[0][0])):
            spec = resolve_task(task)
            assert spec is not None
            scaled = [rescale_curve(s.curve, scale, spec) for s in runs if s.curve is not None]
            if any(c is None for c in scaled):
                continue
            curves = [c for c in scaled if c is not None]
            out.append(repeat_curves(label, task, curves, spec.direction if scale == "raw" else "higher", scale))
        return out

    def at_budget(self, minutes: float) -> dict[str, float | None]:
        """What a ``minutes``-minute budget would have scored, by session (official rule, truncated)."""
        out = {}
        for s in self.sessions:
            spec = resolve_task(s.outcome.task)
            if spec is not None and s.outcome.finished:
                out[s.outcome.session_id] = score_at_budget(s.checkpoints, minutes, spec.direction)
        return out


@dataclass(frozen=True)
class AtBudget:
    """One configuration × task had its budget been ``minutes``: the mean official-rule score of
    the repeats that had a scored checkpoint by then (``n_scored`` of ``n``)."""

    task: str
    label: str
    minutes: float
    budget_minutes: float  # the budget the sessions ran with
    n_scored: int
    n: int
    mean: float | None


def at_budget_cells(data: StudyData, minutes: float | None = None, fraction: float | None = None) -> list[AtBudget]:
    """:meth:`StudyData.at_budget` per configuration × task, at ``minutes`` or at a ``fraction`` of
    each cell's own budget (one of the two)."""
    groups: dict[tuple[str, str], list[SessionData]] = {}
    for s in data.sessions:
        o = s.outcome
        if o.finished and o.budget_s and (spec := resolve_task(o.task)) is not None:
            groups.setdefault((spec.short, outcome_row_label(o)), []).append(s)
    out = []
    for (task, label), runs in sorted(groups.items(), key=lambda kv: (task_sort_key(kv[0][0]), kv[0][1])):
        budget_min = runs[0].outcome.budget_s / 60
        at = minutes if minutes is not None else budget_min * (fraction if fraction is not None else 1.0)
        scored = data.at_budget(at)
        got = [v for v in (scored.get(s.outcome.session_id) for s in runs) if v is not None]
        out.append(AtBudget(task, label, at, budget_min, len(got), len(runs), sum(got) / len(got) if got else None))
    return out


def checkpoint_scores(rows: Sequence[dict], scored_is_val: bool) -> tuple[CheckpointScore, ...]:
    """A session's checkpoints from the store's rows: the live score is the validation score that
    ranks; the official re-evaluation's the scored-split score (where the scored split is
    validation and there is none, the live score serves)."""
    live: dict[str, tuple[float, float | None]] = {}
    scored: dict[str, float | None] = {}
    for r in rows:
        if r["official"]:
            scored[r["name"]] = r["value"]
        else:
            live[r["name"]] = (r["budget_elapsed_s"] or 0.0, r["value"])
    out = []
    for name, (at, val) in live.items():
        s = scored.get(name)
        out.append(CheckpointScore(name, at, val, s if s is not None or not scored_is_val else val))
    return tuple(sorted(out, key=lambda c: c.budget_elapsed_s))


def load_session(store: Store, outcome: SessionOutcome) -> SessionData:
    sid = outcome.session_id
    row = store.session(sid) or {}
    spec = resolve_task(outcome.task)
    cks = checkpoint_scores(store.checkpoints(sid), spec is None or spec.scored_split == "val")
    tl = monitor_data.timeline(store, sid)
    ledger = None
    if tl is not None and row.get("started_ts") and row.get("ended_ts"):
        n_gpus = len({g or 0 for _, _, g in sql.gpu_series(store, sid)})
        ledger = time_ledger(sid, (row["started_ts"], row["ended_ts"]), tl.activities, tl.split, n_gpus,
                             has_model=calls_a_model(row.get("agent")))
    curve = None
    if spec is not None and outcome.budget_s > 0:
        curve = official_curve(cks, outcome.budget_s, spec.direction, sid)
    return SessionData(outcome, row, cks, tl, ledger, curve)


def load_study(store: Store, study: str | None = None, include_demo: bool = True,
               noise_from: Sequence[str] | None = None, rescored: bool = False) -> StudyData:
    """Every session of ``study`` (all studies: None), with the demo task unless told otherwise;
    ``rescored``: each with its re-score by a newer harness where it has one."""
    outcomes = sorted(monitor_data.outcomes(store, study, include_demo=include_demo, rescored=rescored),
                      key=lambda o: (task_sort_key(o.task), o.label or o.agent, o.repeat, o.session_id))
    return StudyData(study, tuple(load_session(store, o) for o in outcomes),
                     tuple(noise_from) if noise_from is not None else None, rescored)


__all__ = ["AtBudget", "SessionData", "StudyData", "at_budget_cells", "checkpoint_scores", "load_session", "load_study"]
