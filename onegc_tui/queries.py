"""Read queries of the monitor beyond the store's API: the matrix input, transcript views,
activity for stall alerts, and one session's timeline for the detail and replay screens.

Each function takes a ``Store`` opened on the calling thread (one connection per thread) and
returns plain records; nothing here imports textual.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from onegc_tui.analysis import (
    Activity,
    AnytimeCurve,
    GpuSplit,
    ScorePoint,
    SessionOutcome,
    UtilSample,
    activities_from_events,
    anytime_curve,
    gpu_time_split,
)
from onegc_tui.store import Store, text_search
from onegc_tui.view import (
    BUSY_UTIL_PCT,
    FILTER_KINDS,
    PANE_EVENT_TYPES,
    BudgetClock,
    event_line,
    event_matches,
    search_words,
    transcript_line,
)
from runner.events import parse_event
from tasks import UnknownTask, get_task

TIMELINE_LINES = 20_000  # transcript lines a detail/replay view keeps (the newest); SQLite has them all
ACTIVITY_TYPES = ("session_started", "agent_started", "transcript", "process", "budget", "session_ended")

_OUTCOME_COLUMNS = ("session_id, study, agent, model, task, repeat, score, state, end_reason, contract_hash, "
                    "budget_s, active_s, started_ts, scripts_launched, first_checkpoint_s, disqualified, flagged, "
                    "containment")


# ----------------------------------------------------------------------------- history


def studies(store: Store) -> list[str]:
    """Study names that have sessions, sorted."""
    return [r[0] for r in store.conn.execute("SELECT DISTINCT study FROM sessions WHERE study IS NOT NULL ORDER BY study")]


def outcomes(store: Store, study: str | None = None, include_demo: bool = False) -> list[SessionOutcome]:
    """Every session as the matrix sees it, from the per-session summary table only (no event scan)."""
    where, args = ["1=1"], []
    if study is not None:
        where.append("study = ?")
        args.append(study)
    if not include_demo:
        where.append("COALESCE(task, '') NOT IN ('t0_demo', 't0')")
    cur = store.conn.execute(f"SELECT {_OUTCOME_COLUMNS} FROM sessions WHERE {' AND '.join(where)}", args)
    out = []
    for (sid, st, agent, model, task, repeat, score, state, end_reason, chash, budget_s, active_s, started,
         scripts, first, disqualified, flagged, containment) in cur:
        ended = state in ("ended", "failed")
        out.append(SessionOutcome(
            session_id=sid, study=st, agent=agent or "?", model=model, task=task or "?", repeat=repeat or 1,
            score=score, end_reason=(end_reason or "harness_error") if ended else None, contract_hash=chash,
            budget_s=budget_s or 0.0, active_s=active_s, started_at=started, scripts_launched=scripts,
            first_checkpoint_s=first, label=study_label(sid, st), disqualified=disqualified, flagged=flagged or 0,
            sealed=None if not containment else containment.startswith("bwrap")))
    return out


def study_label(session_id: str, study: str | None) -> str | None:
    """The study's agent label of a study session: its id is ``<study>--<label>--<task>--r<k>``
    (runner/study.py keeps it stable); None for a session run by hand."""
    if not study or not session_id.startswith(f"{study}--"):
        return None
    parts = session_id[len(study) + 2:].split("--")
    return parts[0] if len(parts) == 3 and parts[0] else None


def score_points(store: Store, session_ids: Sequence[str]) -> dict[str, list[ScorePoint]]:
    """Scored checkpoints by session: the live scores (the anytime curve is about when they appeared)."""
    out: dict[str, list[ScorePoint]] = {sid: [] for sid in session_ids}
    for sid in session_ids:
        for name, at, value in store.conn.execute(
                "SELECT name, budget_elapsed_s, value FROM checkpoints WHERE session_id=? AND official=0", (sid,)):
            out[sid].append(ScorePoint(sid, at or 0.0, value))
    return out


def gpu_busy_fraction(store: Store, session_ids: Sequence[str]) -> float | None:
    """Share of GPU samples above the busy threshold, pooled over sessions (one sample ≈ one second)."""
    busy = total = 0
    for sid in session_ids:
        b, n = store.conn.execute("SELECT COALESCE(SUM(util_pct > ?), 0), COUNT(*) FROM gpu_samples WHERE session_id=?",
                                  (BUSY_UTIL_PCT, sid)).fetchone()
        busy, total = busy + b, total + n
    return busy / total if total else None


# ----------------------------------------------------------------------------- transcript pane


def pane_entries(store: Store, sid: str, mode: str = "all", search: str = "", limit: int = 2000) -> list[tuple[int, str]]:
    """The transcript pane's lines for a filter mode and search words, oldest first, each with
    the sequence number of its event.

    Transcript steps come from the transcript table (search through its full-text index); the
    harness's own notable events (warnings, scores, controls) from the events table, filtered alike."""
    words = search_words(search)
    if mode == "all" and not words:
        rows = store.conn.execute(
            f"SELECT data FROM events WHERE session_id=? AND type IN ({','.join('?' * len(PANE_EVENT_TYPES))})"
            " ORDER BY seq DESC LIMIT ?", (sid, *PANE_EVENT_TYPES, limit)).fetchall()
        events = (parse_event(data) for (data,) in reversed(rows))
        return [(e.seq, line) for e in events if (line := event_line(e))]
    kinds = list(FILTER_KINDS.get(mode, ())) if mode != "all" else None
    join, found, found_args = text_search(words)
    sql = "SELECT t.seq, t.ts, t.role, t.kind, t.tool, t.text, t.exit_code FROM transcript t" + join
    where, args = ["t.session_id = ?", "t.kind != 'usage'", *found], [sid, *found_args]
    if kinds:
        cond = f"t.kind IN ({','.join('?' * len(kinds))})"
        if mode == "errors":
            cond = f"({cond} OR (t.kind = 'tool_result' AND COALESCE(t.exit_code, 0) != 0))"
        where.append(cond)
        args += kinds
    rows = store.conn.execute(sql + " WHERE " + " AND ".join(where) + " ORDER BY t.seq DESC LIMIT ?", (*args, limit)).fetchall()
    lines = [(seq, transcript_line(ts, role, kind, tool, text or "", code)) for seq, ts, role, kind, tool, text, code in rows]
    if mode in ("all", "errors"):  # the harness's events pass the same filter
        harness = [t for t in PANE_EVENT_TYPES if t != "transcript"]
        for (data,) in store.conn.execute(
                f"SELECT data FROM events WHERE session_id=? AND type IN ({','.join('?' * len(harness))})"
                " ORDER BY seq DESC LIMIT ?", (sid, *harness, limit)):
            e = parse_event(data)
            if event_matches(e, mode, words) and (line := event_line(e)):
                lines.append((e.seq, line))
    lines.sort()
    return lines[-limit:]


# ----------------------------------------------------------------------------- alerts


def activity(store: Store, sid: str) -> tuple[float | None, set[int]]:
    """Last sign of life (transcript step, busy GPU sample) and the training processes alive, for stall alerts."""
    c = store.conn
    t = c.execute("SELECT ts FROM transcript WHERE session_id=? ORDER BY seq DESC LIMIT 1", (sid,)).fetchone()
    g = c.execute("SELECT ts FROM gpu_samples WHERE session_id=? AND util_pct > ? ORDER BY seq DESC LIMIT 1",
                  (sid, BUSY_UTIL_PCT)).fetchone()
    alive: set[int] = set()
    for (data,) in c.execute("SELECT data FROM events WHERE session_id=? AND type='process' ORDER BY seq", (sid,)):
        p = json.loads(data)
        if p.get("training", True):
            (alive.add if p["action"] == "started" else alive.discard)(p["pid"])
    last = max([x[0] for x in (t, g) if x] or [None], key=lambda v: v or 0.0)
    return last, alive


# ----------------------------------------------------------------------------- one session's timeline


@dataclass(frozen=True)
class Timeline:
    """One session on its budget-time axis (seconds of active budget) for the detail and replay views."""

    row: dict
    budget_s: float
    higher: bool
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
        import bisect

        i = bisect.bisect_right([x for x, _ in self.lines], t)
        return [line for _, line in self.lines[max(0, i - n):i]]

    def index_at(self, t: float) -> int:
        """Index of the last transcript line at or before budget time ``t`` (-1: none)."""
        import bisect

        return bisect.bisect_right([x for x, _ in self.lines], t) - 1


def budget_clock(store: Store, sid: str, row: dict) -> BudgetClock:
    anchors = []
    if row.get("started_ts"):
        anchors.append((row["started_ts"], 0.0))
    for ts, active in store.conn.execute(
            "SELECT ts, json_extract(data, '$.active_s') FROM events WHERE session_id=? AND type IN ('heartbeat', 'session_ended')",
            (sid,)):
        if active is not None:
            anchors.append((ts, float(active)))
    return BudgetClock(anchors)


def timeline(store: Store, sid: str, analytics: bool = True, now: float | None = None) -> Timeline | None:
    """Everything the detail view draws for one session, mapped onto budget time (a live
    session's up to ``now``, default the wall clock)."""
    now = time.time() if now is None else now
    row = store.session(sid)
    if row is None:
        return None
    try:
        spec = get_task(row.get("task") or "")
        higher, metric = spec.higher_is_better, spec.metric_label
    except UnknownTask:
        higher, metric = True, "score"
    clock_ = budget_clock(store, sid, row)
    budget_s = row.get("budget_s") or 1.0
    ckpts = tuple((r["budget_elapsed_s"] or 0.0, r["value"], r["name"], bool(r["official"])) for r in store.checkpoints(sid))
    gpu_rows = store.conn.execute("SELECT ts, util_pct, gpu FROM gpu_samples WHERE session_id=? ORDER BY seq", (sid,)).fetchall()
    gpu = tuple((clock_.at(ts), util) for ts, util, _ in gpu_rows)
    lines = []
    rows = store.conn.execute(
        f"SELECT data FROM events WHERE session_id=? AND type IN ({','.join('?' * len(PANE_EVENT_TYPES))})"
        " ORDER BY seq DESC LIMIT ?", (sid, *PANE_EVENT_TYPES, TIMELINE_LINES)).fetchall()
    for (data,) in reversed(rows):
        e = parse_event(data)
        if line := event_line(e):
            lines.append((clock_.at(e.ts), line))
    if row.get("state") in ("ended", "failed"):
        end_s = row.get("active_s") or (clock_.anchors[-1][1] if clock_.anchors else 0.0)
    else:
        end_s = clock_.at(now) if row.get("state") == "running" else (clock_.anchors[-1][1] if clock_.anchors else 0.0)
    end_s = min(end_s, budget_s + (row.get("grace_s") or 0.0))
    points = [ScorePoint(sid, t, v) for t, v, _, official in ckpts if not official]
    curve = anytime_curve(points, budget_s, "higher" if higher else "lower", sid) if budget_s > 0 else None
    split, acts = None, ()
    if analytics:
        events = [parse_event(d) for (d,) in store.conn.execute(
            f"SELECT data FROM events WHERE session_id=? AND type IN ({','.join('?' * len(ACTIVITY_TYPES))}) ORDER BY seq",
            (sid, *ACTIVITY_TYPES))]
        end_ts = None if row.get("ended_ts") else now
        acts = tuple(activities_from_events(events, end_ts=end_ts))
        window = (row["started_ts"], row.get("ended_ts") or now) if row.get("started_ts") else None
        split = gpu_time_split([UtilSample(ts, util, g or 0) for ts, util, g in gpu_rows], acts, window=window)
    return Timeline(row=row, budget_s=budget_s, higher=higher, metric=metric, checkpoints=ckpts, gpu=gpu,
                    lines=tuple(lines), end_s=end_s, curve=curve, split=split,
                    first_checkpoint_s=min((t for t, *_ in ckpts), default=None), activities=acts)
