"""The SQL of the history matrix's summary (schema.py migration 13): which sessions' outcomes
changed since the cells were last computed (marked by a trigger as the ingest writes their summary
rows), which cell each session is in, and the cells, each stored whole as JSON.

What a cell is, and how one is computed, is onegc_tui/results/history_cells.py's; this module only
reads and writes the rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from onegc_tui.store import Store
from onegc_tui.store.queries import DEMO_TASKS, OUTCOME_COLUMNS

_COLUMNS = ", ".join(f"s.{c}" if c.isidentifier() else c.replace("(contract", "(s.contract") for c in OUTCOME_COLUMNS)


def marked(store: Store) -> list[str]:
    """The sessions whose outcome changed since their cells were computed (or that were removed)."""
    return [r[0] for r in store.conn.execute("SELECT session_id FROM history_dirty")]


def unmark(store: Store, session_ids: Sequence[str]) -> None:
    store.conn.execute("DELETE FROM history_dirty WHERE session_id IN (SELECT value FROM json_each(?))",
                       (json.dumps(list(session_ids)),))


def outcome_rows_of(store: Store, session_ids: Sequence[str]) -> list[tuple]:
    """The OUTCOME_COLUMNS of these sessions (those still stored); most of them: every session's,
    read in one pass rather than looked up one by one."""
    if not session_ids:
        return []
    if len(session_ids) * 2 > store.conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]:
        wanted = set(session_ids)
        return [r for r in store.conn.execute(f"SELECT {_COLUMNS} FROM sessions s") if r[0] in wanted]
    return store.conn.execute(f"SELECT {_COLUMNS} FROM sessions s WHERE s.session_id IN (SELECT value FROM json_each(?))",
                              (json.dumps(list(session_ids)),)).fetchall()


def memberships(store: Store, session_ids: Sequence[str]) -> dict[str, tuple[str | None, str | None]]:
    """Each session's cell keys as stored: (in the whole home, in its study)."""
    return {sid: (home, study) for sid, home, study in store.conn.execute(
        "SELECT session_id, home_key, study_key FROM history_members WHERE session_id IN (SELECT value FROM json_each(?))",
        (json.dumps(list(session_ids)),))}


def set_memberships(store: Store, members: Iterable[tuple[str, str | None, str | None]]) -> None:
    """``(session_id, home_key, study_key)``; a session in no cell (removed, aborted, an unknown task): both None."""
    rows = list(members)
    store.conn.executemany("INSERT OR REPLACE INTO history_members VALUES (?,?,?)", [r for r in rows if r[1] or r[2]])
    store.conn.executemany("DELETE FROM history_members WHERE session_id=?", [(r[0],) for r in rows if not (r[1] or r[2])])


def members_of(store: Store, home_keys: Iterable[str], study_keys: Iterable[str]) -> list[tuple[str, str | None, str | None]]:
    """``(session_id, home_key, study_key)`` of every session in one of these cells, in one read."""
    return store.conn.execute(
        "SELECT session_id, home_key, study_key FROM history_members"
        " WHERE home_key IN (SELECT value FROM json_each(?)) OR study_key IN (SELECT value FROM json_each(?))",
        (json.dumps(sorted(home_keys)), json.dumps(sorted(study_keys)))).fetchall()


def put_cell(store: Store, scope: str, key: str, task: str, cell: str | None) -> None:
    """Store a cell's JSON (None: it has no session left)."""
    if cell is None:
        store.conn.execute("DELETE FROM history_cells WHERE scope=? AND key=?", (scope, key))
    else:
        store.conn.execute("INSERT OR REPLACE INTO history_cells VALUES (?,?,?,?)", (scope, key, task, cell))


def cells(store: Store, scope: str) -> list[tuple[str, str, str]]:
    """``(key, task, cell JSON)`` of every cell of a scope: ``"home"``, or a study's name."""
    return store.conn.execute("SELECT key, task, cell FROM history_cells WHERE scope=?", (scope,)).fetchall()


def task_counts(store: Store, study: str | None, include_demo: bool) -> list[tuple[str, int, int]]:
    """``(task, sessions, of them aborted)`` by the task a session names ("?": none), of ``study``'s
    sessions (all: None), without the demo task unless ``include_demo``: what the cells leave out."""
    where, args = ["1=1"], []
    if study is not None:
        where.append("study = ?")
        args.append(study)
    if not include_demo:
        where.append(f"COALESCE(task, '') NOT IN ({','.join('?' * len(DEMO_TASKS))})")
        args += DEMO_TASKS
    return store.conn.execute(f"SELECT COALESCE(task, '?'), COUNT(*), SUM(end_reason = 'aborted' AND state IN "
                              f"('ended', 'failed')) FROM sessions WHERE {' AND '.join(where)} GROUP BY 1", args).fetchall()
