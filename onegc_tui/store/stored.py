"""Events as the store holds them: the line of a kind that keeps it (an ``events`` row), and for a
kind whose own table holds every field of it (onegc_tui/store/rows.py ``OWN_TABLE``: nearly every
event of a stream) its fields taken from that row, which stands for the event alone.

Nothing is validated again: every line was validated once, at ingest (onegc_tui/store/records.py).
A record here is the dict of an event's fields; :func:`as_event` makes it the event's model
without validating it, for the views that read events (the transcript pane, a session's timeline).
Functions take the store's connection (one per thread), so the :class:`~onegc_tui.store.Store`
and the read queries (onegc_tui/store/queries.py) both use them.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from onegc_tui.store.rows import IN_ROW, OWN_TABLE

if TYPE_CHECKING:
    from runner.wire.events import Event

Record = dict[str, Any]
Envelope = tuple[int, float, str, str]  # an events row: seq, ts, type, data (IN_ROW: see its own table)
STREAM_CHUNK = 5_000  # events rows a stream reads at a time: a record of any size in bounded memory

# each kind with a table of its own: its row's columns, by the names of the event's fields
_OWN_SQL = {
    "transcript": ("SELECT seq, ts, role, kind, tool, call_id, exit_code, text, tokens_in, tokens_out, cache_read,"
                   " cache_write, cost_usd, raw_line FROM transcript",
                   ("seq", "ts", "role", "kind", "tool", "call_id", "exit_code", "text", "tokens_in", "tokens_out",
                    "cache_read", "cache_write", "cost_usd", "raw_line")),
    "gpu": ("SELECT seq, ts, gpu, util_pct, mem_used_mb, mem_total_mb, power_w, temp_c, sm_pct, tensor_pct, dram_pct"
            " FROM gpu_samples", ("seq", "ts", "index", "util_pct", "mem_used_mb", "mem_total_mb", "power_w", "temp_c",
                                  "sm_active_pct", "tensor_active_pct", "dram_bw_pct")),
    "warning": ("SELECT seq, ts, code, message, count FROM warnings", ("seq", "ts", "code", "message", "count")),
    "control": ("SELECT seq, ts, action, request_id, accepted, detail FROM controls",
                ("seq", "ts", "action", "request_id", "accepted", "detail")),
}
assert set(_OWN_SQL) == OWN_TABLE, "a kind with its own table is read from it here"


# Each kind with a table of its own, as envelopes: its rows that no events row stands for (an
# events row holding one is a line stored before migration 12, read as such; a tool's heartbeats keep
# theirs, and their one transcript row, updated in place, is not one of the events).
_OWN_ENVELOPES = {
    "transcript": ("transcript", "NOT (t.kind = 'progress' AND t.call_id IS NOT NULL) AND "),
    "gpu": ("gpu_samples", ""),
    "warning": ("warnings", ""),
    "control": ("controls", ""),
}
assert set(_OWN_ENVELOPES) == OWN_TABLE, "a kind with its own table is read from it here"


def _arms(types: Sequence[str] | None) -> tuple[list[str], list[str]]:
    """The compound SELECT's arms for ``types`` (every kind: None), and the types the events arm reads."""
    wanted = list(types) if types else None
    arms = []
    for kind, (table, keep) in _OWN_ENVELOPES.items():
        if wanted is None or kind in wanted:
            arms.append(f"SELECT t.seq AS seq, t.ts, '{kind}', '{IN_ROW}' FROM {table} t WHERE t.session_id = :sid"
                        f" AND t.seq > :after AND {keep}NOT EXISTS (SELECT 1 FROM events e"
                        " WHERE e.session_id = t.session_id AND e.seq = t.seq)")
    return arms, wanted or []


def envelopes(conn: sqlite3.Connection, sid: str, types: Sequence[str] | None = None, after: int = 0,
              limit: int | None = None, newest: bool = False) -> list[Envelope]:
    """A session's events after ``after`` (of ``types``) as ``(seq, ts, type, data)``, oldest first;
    ``limit``: the first this many, or with ``newest`` the last. The kinds kept in their own table
    are read there (``data`` is :data:`IN_ROW`: :func:`in_rows` gives their fields); SQLite merges
    the tables by seq, each read in its primary key's order."""
    arms, kinds = _arms(types)
    args: dict[str, object] = {"sid": sid, "after": after}
    kept = "SELECT seq, ts, type, data FROM events WHERE session_id = :sid AND seq > :after"
    if kinds:
        kept += f" AND type IN ({','.join(f':k{i}' for i in range(len(kinds)))})"
        args.update({f"k{i}": kind for i, kind in enumerate(kinds)})
    sql = " UNION ALL ".join([kept, *arms]) + (" ORDER BY 1 DESC" if newest else " ORDER BY 1")
    if limit is not None:
        sql += " LIMIT :limit"
        args["limit"] = limit
    rows = conn.execute(sql, args).fetchall()
    return rows[::-1] if newest else rows


def top_seq(conn: sqlite3.Connection, sid: str) -> int:
    """The highest event number stored for a session (0: none), in whichever table holds it."""
    tables = ("events", *(table for table, _keep in _OWN_ENVELOPES.values()))
    return max(conn.execute(f"SELECT COALESCE(MAX(seq), 0) FROM {table} WHERE session_id=?", (sid,)).fetchone()[0]
               for table in tables)


def count(conn: sqlite3.Connection, sid: str) -> int:
    """How many events of a session the store holds."""
    arms, _kinds = _arms(None)
    sql = "SELECT COUNT(*) FROM (" + " UNION ALL ".join(
        ["SELECT seq, ts, type, data FROM events WHERE session_id = :sid AND seq > :after", *arms]) + ")"
    return conn.execute(sql, {"sid": sid, "after": 0}).fetchone()[0]


def in_rows(conn: sqlite3.Connection, sid: str, rows: Sequence[Envelope]) -> dict[int, Record]:
    """The fields of each event of ``rows`` that keeps no line, from its own table, by seq."""
    wanted: dict[str, list[int]] = {}
    for seq, _ts, kind, data in rows:
        if data == IN_ROW:
            wanted.setdefault(kind, []).append(seq)
    out: dict[int, Record] = {}
    if not wanted:
        return out
    from runner.wire.events import SCHEMA_VERSION  # pydantic's: the store opens without it (onegc sessions' start)

    for kind, seqs in wanted.items():
        select, names = _OWN_SQL[kind]
        base = {"v": SCHEMA_VERSION, "session_id": sid, "type": kind}
        found = conn.execute(f"{select} WHERE session_id=? AND seq IN (SELECT value FROM json_each(?))",
                             (sid, json.dumps(seqs)))
        for row in found:
            record = {**base, **dict(zip(names, row, strict=True))}
            if kind == "control":
                record["accepted"] = bool(record["accepted"])
            out[row[0]] = record
    return out


def records(conn: sqlite3.Connection, sid: str, rows: Sequence[Envelope]) -> list[Record]:
    """The events of ``rows`` as dicts of their fields (an event whose row is missing is left out)."""
    typed = in_rows(conn, sid, rows)
    return [json.loads(data) if data != IN_ROW else typed[seq] for seq, _ts, _kind, data in rows
            if data != IN_ROW or seq in typed]


def lines(conn: sqlite3.Connection, sid: str, rows: Sequence[Envelope]) -> list[tuple[int, str]]:
    """``(seq, JSON)`` of the events of ``rows``: the stored line, or one written from the event's row."""
    typed = in_rows(conn, sid, rows)
    return [(seq, data if data != IN_ROW else json.dumps(typed[seq])) for seq, _ts, _kind, data in rows
            if data != IN_ROW or seq in typed]


def stream(conn: sqlite3.Connection, sid: str, types: Sequence[str]) -> Iterator[Record]:
    """A session's events of ``types`` as records, in order, read ``STREAM_CHUNK`` rows at a time."""
    after = 0
    while rows := envelopes(conn, sid, types, after=after, limit=STREAM_CHUNK):
        yield from records(conn, sid, rows)
        after = rows[-1][0]


def as_event(record: Record) -> Event:
    """The event's model of a stored record, not validated again (it was, at ingest)."""
    from runner.wire.events import EVENT_TYPES

    return EVENT_TYPES[record["type"]].model_construct(**record)  # type: ignore[return-value]
