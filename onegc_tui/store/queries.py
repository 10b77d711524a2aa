"""The monitor's read queries beyond :class:`Store`'s own: the SQL behind the matrix, the
transcript pane, stall alerts, the detail and replay views and the event viewer.

Each function takes a ``Store`` opened on the calling thread (one connection per thread) and
returns rows as tuples, dicts or JSON text; what they mean is composed in onegc_tui/views/monitor_data.py.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from onegc_tui.store import Store, stored
from onegc_tui.store.search import text_search

if TYPE_CHECKING:
    from runner.wire.events import Event

OUTCOME_COLUMNS = ("session_id", "study", "agent", "model", "task", "repeat", "score", "state", "end_reason",
                   "contract_hash", "budget_s", "active_s", "started_ts", "scripts_launched", "first_checkpoint_s",
                   "disqualified", "flagged", "containment", "json_extract(contract, '$.network')",
                   "val_gap_flag", "contended", "truncated", "caps_reached", "json_extract(contract, '$.scored_split.mode')",
                   "record", "verified", "rescore", "rescore_by")
DEMO_TASKS = ("t0_demo", "t0")


def _marks(n: int) -> str:
    return ",".join("?" * n)


# ----------------------------------------------------------------------------- sessions


@contextmanager
def snapshot(store: Store) -> Iterator[None]:
    """One read transaction: every query inside it sees the same state of the store."""
    with store.conn:
        store.conn.execute("BEGIN")
        yield


def data_version(store: Store) -> int:
    """SQLite's change counter for this connection: it moves when another connection commits."""
    return store.conn.execute("PRAGMA data_version").fetchone()[0]


def study_names(store: Store) -> list[str]:
    """Study names that have sessions, sorted."""
    return [r[0] for r in store.conn.execute("SELECT DISTINCT study FROM sessions WHERE study IS NOT NULL ORDER BY study")]


def stream_sessions(store: Store) -> Iterator[dict]:
    """Every summary row as a dict, in the order of :meth:`Store.sessions`, read as they are used
    (100 000 sessions in bounded memory)."""
    cur = store.conn.execute("SELECT * FROM sessions ORDER BY started_ts IS NULL, started_ts, session_id")
    names = [d[0] for d in cur.description]
    for row in cur:
        yield dict(zip(names, row, strict=True))


def outcome_rows(store: Store, study: str | None = None, include_demo: bool = False) -> list[tuple]:
    """The :data:`OUTCOME_COLUMNS` of every session (of ``study``; without the demo task unless
    ``include_demo``), from the summary table only."""
    where, args = ["1=1"], []
    if study is not None:
        where.append("study = ?")
        args.append(study)
    if not include_demo:
        where.append(f"COALESCE(task, '') NOT IN ({_marks(len(DEMO_TASKS))})")
        args += DEMO_TASKS
    sql = f"SELECT {', '.join(OUTCOME_COLUMNS)} FROM sessions WHERE {' AND '.join(where)}"
    return store.conn.execute(sql, args).fetchall()


def demo_session_count(store: Store, study: str | None = None) -> int:
    """How many sessions (of ``study``) are on a demo task: what a history without them leaves out."""
    where, args = [f"COALESCE(task, '') IN ({_marks(len(DEMO_TASKS))})"], list(DEMO_TASKS)
    if study is not None:
        where.append("study = ?")
        args.append(study)
    return store.conn.execute(f"SELECT COUNT(*) FROM sessions WHERE {' AND '.join(where)}", args).fetchone()[0]


def sessions_by_id(store: Store, session_ids: Sequence[str]) -> dict[str, dict]:
    """The summary rows of these sessions, by id (ids not in the store left out)."""
    if not session_ids:
        return {}
    return {r["session_id"]: r for r in store.sessions(f"session_id IN ({_marks(len(session_ids))})", session_ids)}


# ----------------------------------------------------------------------------- scores and GPU


def live_scores(store: Store, sid: str) -> list[tuple[float | None, float | None]]:
    """``(budget_elapsed_s, value)`` of each live-scored checkpoint of a session."""
    return store.conn.execute(
        "SELECT budget_elapsed_s, value FROM checkpoints WHERE session_id=? AND official=0", (sid,)).fetchall()


def scored_split_ranges(store: Store) -> dict[str, tuple[tuple[float, float] | None, tuple[float, float] | None]]:
    """Per session, ``(min, max)`` of its checkpoints' scored-split scores two ways: the harness's
    re-evaluations only (a task scored on a held-out split), and each checkpoint's re-evaluation
    else its live score (a task scored on validation, where the live score is one); the unofficial
    test-best is one end of one of them (runner/scoring/unofficial.py)."""
    official = {sid: (lo, hi) for sid, lo, hi in store.conn.execute(
        "SELECT session_id, MIN(value), MAX(value) FROM checkpoints WHERE official=1 AND value IS NOT NULL"
        " GROUP BY session_id")}
    either = {sid: (lo, hi) for sid, lo, hi in store.conn.execute(
        "SELECT session_id, MIN(v), MAX(v) FROM (SELECT session_id, COALESCE(MAX(CASE WHEN official=1 THEN value END),"
        " MAX(CASE WHEN official=0 THEN value END)) AS v FROM checkpoints GROUP BY session_id, name)"
        " WHERE v IS NOT NULL GROUP BY session_id")}
    return {sid: (official.get(sid), either.get(sid)) for sid in official.keys() | either.keys()}


def gpu_busy_counts(store: Store, sid: str, busy_pct: float) -> tuple[int, int]:
    """GPU samples of a session above ``busy_pct``, and all of them."""
    busy, total = store.conn.execute(
        "SELECT COALESCE(SUM(util_pct > ?), 0), COUNT(*) FROM gpu_samples WHERE session_id=?", (busy_pct, sid)).fetchone()
    return busy, total


def gpm_series(store: Store, sid: str) -> list[tuple[float, int | None, float | None, float | None, float | None]]:
    """``(ts, gpu, sm_pct, tensor_pct, dram_pct)`` of a session's GPU samples that carry GPM figures, in order."""
    return store.conn.execute("SELECT ts, gpu, sm_pct, tensor_pct, dram_pct FROM gpu_samples WHERE session_id=?"
                              " AND tensor_pct IS NOT NULL ORDER BY seq", (sid,)).fetchall()


def gpu_series(store: Store, sid: str) -> list[tuple[float, float, int | None]]:
    """``(ts, util_pct, gpu)`` of every GPU sample of a session, in order."""
    return store.conn.execute("SELECT ts, util_pct, gpu FROM gpu_samples WHERE session_id=? ORDER BY seq", (sid,)).fetchall()


# ----------------------------------------------------------------------------- events


def stream_event_data(store: Store, sid: str, types: Sequence[str]) -> Iterator[str]:
    """The JSON of a session's events of these types, in order, read as they are used (a session's
    record of any size, in bounded memory): the stored line, or one written from the event's row
    (onegc_tui/store/stored.py)."""
    after = 0
    while rows := stored.envelopes(store.conn, sid, types, after=after, limit=stored.STREAM_CHUNK):
        for _seq, data in stored.lines(store.conn, sid, rows):
            yield data
        after = rows[-1][0]


def event_data(store: Store, sid: str, types: Sequence[str], limit: int | None = None) -> list[str]:
    """The JSON of a session's events of these types, oldest first; ``limit``: only the newest."""
    rows = stored.envelopes(store.conn, sid, types, limit=limit, newest=limit is not None)
    return [data for _seq, data in stored.lines(store.conn, sid, rows)]


def events_after(store: Store, sid: str, seq: int, limit: int) -> list[tuple[int, str]]:
    """``(seq, JSON)`` of a session's events after ``seq``, oldest first, at most ``limit``: what a
    viewer has not drawn yet, whoever ingested it (the primary key's range)."""
    return stored.lines(store.conn, sid, stored.envelopes(store.conn, sid, after=seq, limit=limit))


def events(store: Store, sid: str, types: Sequence[str], limit: int | None = None) -> list[Event]:
    """A session's events of these types as their models, oldest first (``limit``: the newest),
    not validated again (onegc_tui/store/stored.py)."""
    rows = stored.envelopes(store.conn, sid, types, limit=limit, newest=limit is not None)
    return [stored.as_event(r) for r in stored.records(store.conn, sid, rows)]


def stream_events(store: Store, sid: str, types: Sequence[str]) -> Iterator[Event]:
    """:func:`events` of a whole session, in order, read as they are used (bounded memory)."""
    return map(stored.as_event, stored.stream(store.conn, sid, types))


def new_scores(store: Store, sid: str, after: int) -> list[tuple[int, str, float | None, str | None, float | None]]:
    """``(seq, name, value, error, budget_elapsed_s)`` of a session's live scores stored by an event
    after ``after``, in order (the alerts: a new best, a failed score)."""
    return store.conn.execute(
        "SELECT scored_seq, name, value, error, budget_elapsed_s FROM checkpoints"
        " WHERE session_id=? AND scored_seq>? AND official=0 ORDER BY scored_seq", (sid, after)).fetchall()


def new_refusals(store: Store, sid: str, after: int) -> list[tuple[int, str, str]]:
    """``(seq, action, detail)`` of a session's controls the runner refused after ``after``, in order."""
    return store.conn.execute("SELECT seq, action, detail FROM controls WHERE session_id=? AND seq>? AND NOT accepted"
                              " ORDER BY seq", (sid, after)).fetchall()


def new_warnings(store: Store, sid: str, after: int) -> list[tuple[int, str, str]]:
    """``(seq, code, message)`` of a session's warnings after ``after``, in order."""
    return store.conn.execute("SELECT seq, code, message FROM warnings WHERE session_id=? AND seq>? ORDER BY seq",
                              (sid, after)).fetchall()


def event_json(store: Store, sid: str, seq: int) -> dict | None:
    """One event as stored (its fields), or None."""
    found = stored.records(store.conn, sid, stored.envelopes(store.conn, sid, after=seq - 1, limit=1))
    return found[0] if found and found[0]["seq"] == seq else None


def budget_anchors(store: Store, sid: str) -> list[tuple[float, float]]:
    """``(ts, active_s)`` of a session's heartbeats and end: the points its budget axis runs through."""
    rows = store.conn.execute(
        "SELECT ts, json_extract(data, '$.active_s') FROM events"
        " WHERE session_id=? AND type IN ('heartbeat', 'session_ended')", (sid,))
    return [(ts, float(active)) for ts, active in rows if active is not None]


# ----------------------------------------------------------------------------- transcript


def transcript_rows(store: Store, sid: str, words: Sequence[str], kinds: Sequence[str] | None, errors: bool,
                    limit: int) -> list[tuple[Any, ...]]:
    """``(seq, ts, role, kind, tool, text, exit_code)`` of a session's transcript steps (no usage
    rows), the newest ``limit`` first: those holding every word as typed (``text_search``), of
    ``kinds``, and with ``errors`` also failed tool results."""
    join, found, found_args = text_search(words)
    sql = "SELECT t.seq, t.ts, t.role, t.kind, t.tool, t.text, t.exit_code FROM transcript t" + join
    where, args = ["t.session_id = ?", "t.kind != 'usage'", *found], [sid, *found_args]
    if kinds:
        cond = f"t.kind IN ({_marks(len(kinds))})"
        if errors:
            cond = f"({cond} OR (t.kind = 'tool_result' AND COALESCE(t.exit_code, 0) != 0))"
        where.append(cond)
        args += kinds
    return store.conn.execute(sql + " WHERE " + " AND ".join(where) + " ORDER BY t.seq DESC LIMIT ?",
                              (*args, limit)).fetchall()
