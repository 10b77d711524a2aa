"""What the monitor reads, as records: the matrix input, the transcript pane's lines, and one
session's timeline for the detail and replay screens.

Each function takes a ``Store`` opened on the calling thread (one connection per thread); the SQL
is in onegc_tui/store/queries.py, and nothing here imports textual.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

from onegc_tui.store import Store
from onegc_tui.store import queries as sql
from onegc_tui.views.anytime import ScorePoint, anytime_curve
from onegc_tui.views.gpu_activity import tensor_active_s
from onegc_tui.views.outcomes import MeasuredBaseline, SessionOutcome
from onegc_tui.views.outcomes import measured_baselines as analysis_measured
from onegc_tui.views.task_facts import scored_split as task_scored_split
from onegc_tui.views.time_ledger import (
    BUSY_UTIL_PCT,
    Activity,
    GpuSplit,
    UtilSample,
    activities_in_order,
    gpu_time_split,
)
from onegc_tui.views.timeline import Timeline, budget_axis
from onegc_tui.views.transcript_view import (
    FILTER_KINDS,
    PANE_EVENT_TYPES,
    event_line,
    event_matches,
    search_words,
    transcript_line,
)
from runner.integrity.selection_gap import BASELINE_STUDY
from tasks import UnknownTask, direction_of, get_task

TIMELINE_LINES = 20_000  # transcript lines a detail/replay view keeps (the newest); SQLite has them all
ACTIVITY_TYPES = ("session_started", "agent_started", "transcript", "process", "budget", "session_ended")



# ----------------------------------------------------------------------------- history


def studies(store: Store) -> list[str]:
    """Study names that have sessions, sorted."""
    return sql.study_names(store)


def outcomes(store: Store, study: str | None = None, include_demo: bool = False,
             rescored: bool = False) -> list[SessionOutcome]:
    """Every session as the matrix sees it, from the per-session summary table only (no event scan).
    ``rescored``: each session's score is its re-score with a newer harness where it has one
    (``onegc verify --rescore``), else its original."""
    tested = sql.scored_split_ranges(store)
    out = [outcome_of(row, tested.get(row[0])) for row in sql.outcome_rows(store, study, include_demo)]
    if rescored:
        out = [dataclasses.replace(o, score=o.rescore) if o.rescore_by is not None else o for o in out]
    return out


def outcome_of(row: tuple, tested: tuple[tuple[float, float] | None, tuple[float, float] | None] | None = None
               ) -> SessionOutcome:
    """One session of :data:`onegc_tui.store.queries.OUTCOME_COLUMNS`; ``tested``: its checkpoints'
    scored-split ranges (:func:`onegc_tui.store.queries.scored_split_ranges`), for its unofficial test-best."""
    (sid, st, agent, model, task, repeat, score, state, end_reason, chash, budget_s, active_s, started,
     scripts, first, disqualified, flagged, containment, network, val_gap_flag, contended, truncated,
     caps_reached, scored_split, record, verified, rescore, rescore_by) = row
    ended = state in ("ended", "failed")
    lo_hi = unofficial_range(tested, task) if ended else None
    return SessionOutcome(
        session_id=sid, study=st, agent=agent or "?", model=model, task=task or "?", repeat=repeat or 1,
        score=score, end_reason=(end_reason or "harness_error") if ended else None, contract_hash=chash,
        budget_s=budget_s or 0.0, active_s=active_s, started_at=started, scripts_launched=scripts,
        first_checkpoint_s=first, label=study_label(sid, st), disqualified=disqualified, flagged=flagged or 0,
        sealed=None if not containment else containment.startswith("bwrap"), network=network,
        val_gap_flag=val_gap_flag, contended=None if contended is None else bool(contended),
        truncated=truncated or 0, caps_reached=caps_reached or 0, scored_split=scored_split,
        unofficial_test_best=None if lo_hi is None else lo_hi[direction_of(task) == "higher"],
        record=record, verified=verified, rescore=rescore, rescore_by=rescore_by)


def demo_sessions(store: Store, study: str | None = None) -> int:
    """How many sessions (of ``study``) run the demo task (a history without them says so)."""
    return sql.demo_session_count(store, study)


def measured_baselines(store: Store) -> dict[str, MeasuredBaseline]:
    """The baselines measured here (``onegc baseline`` sessions), by task short id."""
    return analysis_measured(outcomes(store, BASELINE_STUDY))


def unofficial_range(ranges: tuple[tuple[float, float] | None, tuple[float, float] | None] | None,
                     task: str | None) -> tuple[float, float] | None:
    """The range the unofficial test-best comes from, as result.json takes it (runner/scoring/unofficial.py):
    re-evaluations only where the task scores a held-out split; with the live scores where it scores val."""
    if ranges is None:
        return None
    try:
        held_out = get_task(task or "").scored_split != "val"
    except UnknownTask:
        held_out = True
    return ranges[0] if held_out else ranges[1]


def study_label(session_id: str, study: str | None) -> str | None:
    """The study's agent label of a study session: its id is ``<study>--<label>--<task>--r<k>``
    (runner/launch/study.py keeps it stable); None for a session run by hand."""
    if not study or not session_id.startswith(f"{study}--"):
        return None
    parts = session_id[len(study) + 2:].split("--")
    return parts[0] if len(parts) == 3 and parts[0] else None


def score_points(store: Store, session_ids: Sequence[str]) -> dict[str, list[ScorePoint]]:
    """Scored checkpoints by session: the live scores (the anytime curve is about when they appeared)."""
    out: dict[str, list[ScorePoint]] = {sid: [] for sid in session_ids}
    for sid in session_ids:
        out[sid] = [ScorePoint(sid, at or 0.0, value) for at, value in sql.live_scores(store, sid)]
    return out


def gpu_busy_fraction(store: Store, session_ids: Sequence[str]) -> float | None:
    """Share of GPU samples above the busy threshold, pooled over sessions (one sample ≈ one second)."""
    busy = total = 0
    for sid in session_ids:
        b, n = sql.gpu_busy_counts(store, sid, BUSY_UTIL_PCT)
        busy, total = busy + b, total + n
    return busy / total if total else None


# ----------------------------------------------------------------------------- transcript pane


def pane_entries(store: Store, sid: str, mode: str = "all", search: str = "", limit: int = 2000) -> list[tuple[int, str]]:
    """The transcript pane's lines for a filter mode and search words, oldest first, each with
    the sequence number of its event.

    Transcript steps come from the transcript table (search through its full-text index); the
    harness's own notable events (warnings, scores, controls) from the events table, filtered alike."""
    words = search_words(search)
    row = store.session(sid) or {}
    split = task_scored_split(row.get("task"))  # the end's official score names it
    official = row.get("best_checkpoint")  # once ended: each re-evaluation is official or unofficial
    if mode == "all" and not words:
        return [(e.seq, line) for e in sql.events(store, sid, PANE_EVENT_TYPES, limit)
                if (line := event_line(e, split, official))]
    kinds = list(FILTER_KINDS.get(mode, ())) if mode != "all" else None
    rows = sql.transcript_rows(store, sid, words, kinds, mode == "errors", limit)
    lines = [(seq, transcript_line(ts, role, kind, tool, text or "", code)) for seq, ts, role, kind, tool, text, code in rows]
    if mode in ("all", "errors"):  # the harness's events pass the same filter
        harness = [t for t in PANE_EVENT_TYPES if t != "transcript"]
        for e in sql.events(store, sid, harness, limit):
            if event_matches(e, mode, words) and (line := event_line(e, split, official)):
                lines.append((e.seq, line))
    lines.sort()
    return lines[-limit:]


# ----------------------------------------------------------------------------- one session's timeline


def timeline(store: Store, sid: str, analytics: bool = True, now: float | None = None) -> Timeline | None:
    """Everything the detail view draws for one session, mapped onto budget time (a live
    session's up to ``now``, default the wall clock)."""
    now = time.time() if now is None else now
    row = store.session(sid)
    if row is None:
        return None
    direction = direction_of(row.get("task"))
    try:
        metric = get_task(row.get("task") or "").metric_label
    except UnknownTask:
        metric = "score"
    clock_ = budget_axis(store, sid, row)
    budget_s = row.get("budget_s") or 1.0
    ckpts = tuple((r["budget_elapsed_s"] or 0.0, r["value"], r["name"], bool(r["official"])) for r in store.checkpoints(sid))
    gpu_rows = sql.gpu_series(store, sid)
    gpu = tuple((clock_.at(ts), util) for ts, util, _ in gpu_rows)
    lines = []
    for e in sql.events(store, sid, PANE_EVENT_TYPES, TIMELINE_LINES):
        if line := event_line(e, task_scored_split(row.get("task")), row.get("best_checkpoint")):
            lines.append((clock_.at(e.ts), line))
    if row.get("state") in ("ended", "failed"):
        end_s = row.get("active_s") or (clock_.anchors[-1][1] if clock_.anchors else 0.0)
    else:
        end_s = clock_.at(now) if row.get("state") == "running" else (clock_.anchors[-1][1] if clock_.anchors else 0.0)
    end_s = min(end_s, budget_s + (row.get("grace_s") or 0.0))
    points = [ScorePoint(sid, t, v) for t, v, _, official in ckpts if not official]
    curve = anytime_curve(points, budget_s, direction, sid) if budget_s > 0 else None
    gpm = [(ts, g, tensor) for ts, g, _, tensor, _ in sql.gpm_series(store, sid) if tensor is not None]
    tensor = tensor_active_s(gpm, clock_, budget_s) / budget_s if gpm and budget_s > 0 else None
    split: GpuSplit | None = None
    acts: tuple[Activity, ...] = ()
    if analytics:
        # streamed in the order of seq (the runner's clock, by one writer): a flooded record is read once
        events = sql.stream_events(store, sid, ACTIVITY_TYPES)
        end_ts = None if row.get("ended_ts") else now
        acts = tuple(activities_in_order(events, end_ts=end_ts))
        window = (row["started_ts"], row.get("ended_ts") or now) if row.get("started_ts") else None
        split = gpu_time_split([UtilSample(ts, util, g or 0) for ts, util, g in gpu_rows], acts, window=window)
    return Timeline(row=row, budget_s=budget_s, direction=direction, metric=metric, checkpoints=ckpts, gpu=gpu,
                    lines=tuple(lines), end_s=end_s, curve=curve, split=split,
                    first_checkpoint_s=min((t for t, *_ in ckpts), default=None), activities=acts,
                    tensor_share=tensor)
