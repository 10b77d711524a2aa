"""The SQLite store: a materialised, queryable copy of every session folder.

WAL, ``synchronous=NORMAL``, migrations at open, one connection per thread (open a
:class:`Store` per thread). Events are keyed by ``(session_id, seq)``: inserting one twice is a
no-op, and the derived tables (transcript, GPU samples, checkpoints, controls) and the
per-session summary row only change for events that were new. Writes go in batches, one
transaction each, with the ingest offset of the file they came from.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlite_utils

from onegc_tui.store.schema import SCHEMA_VERSION, SchemaTooNew, migrate
from runner.errors import OnegcError
from runner.events import Event

if TYPE_CHECKING:
    from tasks import Direction

DB_NAME = "onegc.db"
BUSY_TIMEOUT_MS = 10_000  # a reader never fails because the ingester is mid-commit
# per-session usage: transcript ``usage`` items add to these, a ``result`` item replaces them
USAGE_COLUMNS = ("tokens_in", "tokens_out", "cache_read", "cache_write", "cost_usd")


@dataclass(frozen=True)
class IngestBatch:
    """New whole lines of one ``events.jsonl``: parsed events with their raw text."""

    path: str
    session_id: str
    events: Sequence[tuple[Event, str]]
    offset: int
    line_no: int
    bad: Sequence[tuple[int, str]] = ()
    lines: Sequence[int] = ()  # the line number of each event, for the ones rejected here
    file_id: str | None = None  # the file read ("device:inode"): a new file under the same path starts over


@dataclass(frozen=True)
class Ingested:
    """What a batch changed: the new events, and every line skipped (corrupt or in conflict)."""

    events: list[Event]
    rejected: list[tuple[int, str]]


_TOKEN = re.compile(r"[^\W_]+")  # what FTS5's unicode61 tokenizer keeps: letters and digits


def unusable(path: Path, exc: sqlite3.Error) -> str:
    """One line for a store SQLite refuses: what it said, and the way out."""
    said = str(exc) or type(exc).__name__
    if "locked" in said or "busy" in said:
        return f"{path}: {said}: another onegc holds it too long; try again"
    return (f"{path}: {said}: move it aside and run 'onegc reindex' (the session folders are the source of truth, "
            "nothing is lost)")


def fts_query(words: Sequence[str]) -> str:
    """An FTS5 query for rows holding every word: each word's tokens, as prefixes ("run_1.py" ->
    "run"* "1"* "py"*). The index keeps no positions (detail=column), so a word of several tokens
    cannot be a phrase; :func:`text_search` checks the words themselves. Empty when no word has a
    token (then there is nothing to ask the index)."""
    return " ".join(f'"{token}"*' for w in words for token in _TOKEN.findall(w))


def _holds(text: str | None, word: str) -> bool:
    """SQL ``holds(text, word)``: the lower-cased ``word`` is in ``text``, whatever it holds."""
    return text is not None and word in text.lower()


def text_search(words: Sequence[str], text: str = "t.text") -> tuple[str, list[str], list[str]]:
    """``(join, conditions, args)`` for transcript rows ``t`` holding every (lower-cased) word as
    typed: ``run_1.py``, ``val_acc``, ``12:30``, ``"``, ``*``. The full-text index narrows the rows
    by the words' tokens; ``holds`` checks each word itself in SQL, so a ``LIMIT`` counts matches,
    not rows that merely share the tokens (every ``12`` and ``30`` of a log for ``12:30``)."""
    if not words:
        return "", [], []
    join, where, args = "", [], []
    if match := fts_query(words):
        join = " JOIN transcript_fts f ON f.rowid = t.rowid"
        where.append("transcript_fts MATCH ?")
        args.append(match)
    for word in words:
        where.append(f"holds({text}, ?)")
        args.append(word)
    return join, where, args


def contract_hash(contract: dict) -> str:
    """What makes two sessions comparable, hashed (host and Python excluded)."""
    keep = {k: v for k, v in contract.items() if k not in ("host", "python")}
    if isinstance(keep.get("gpu"), list):
        keep["gpu"] = [{"name": g.get("name"), "driver": g.get("driver")} for g in keep["gpu"]]
    return hashlib.sha256(json.dumps(keep, sort_keys=True).encode()).hexdigest()[:12]


class StoreUnusable(OnegcError):
    """``onegc.db`` cannot be opened or brought to this schema (the message names the fix)."""


class Store:
    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)  # a new ONEGC_HOME: an empty store, not a traceback
        conn = None
        try:
            conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=True)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            conn.create_function("holds", 2, _holds, deterministic=True)  # text_search's check of a word
            migrate(conn)
        except (sqlite3.Error, SchemaTooNew) as exc:
            if conn is not None:
                conn.close()
            if isinstance(exc, SchemaTooNew):
                raise
            raise StoreUnusable(unusable(path, exc)) from None
        self.conn = conn
        self.db = sqlite_utils.Database(conn)

    @classmethod
    def open(cls, home: Path) -> Store:
        return cls(home / DB_NAME)

    def close(self) -> None:
        self.conn.close()

    @property
    def schema_version(self) -> int:
        return self.conn.execute("PRAGMA user_version").fetchone()[0]

    # ------------------------------------------------------------------ writing
    def register_session(self, session_id: str, folder: str, config: dict, state: str = "queued") -> None:
        """Make sure a ``sessions`` row exists (from ``session.json``), without clobbering one."""
        with self.conn:
            self.conn.execute(
                "INSERT OR IGNORE INTO sessions (session_id, folder, study, task, agent, model, repeat, budget_s, grace_s, state, remaining_s)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (session_id, folder, config.get("study"), config.get("task"), config.get("agent"), config.get("model"),
                 config.get("repeat"), config.get("budget_s"), config.get("grace_s"), state, config.get("budget_s")),
            )
            if config.get("study"):
                self.conn.execute("INSERT OR IGNORE INTO studies (name, created) VALUES (?, ?)", (config["study"], time.time()))

    def offset(self, path: str) -> tuple[int, int]:
        row = self.conn.execute("SELECT offset, line_no FROM ingest_offsets WHERE path=?", (path,)).fetchone()
        return (row[0], row[1]) if row else (0, 0)

    def ingested_file(self, path: str) -> str | None:
        """The ``file_id`` the offset of ``path`` was measured in (None: not recorded)."""
        row = self.conn.execute("SELECT file_id FROM ingest_offsets WHERE path=?", (path,)).fetchone()
        return row[0] if row else None

    def forget_session(self, session_id: str) -> None:
        """Drop every row of a session, its summary included, in one transaction: its folder now
        holds another attempt (a study retry), which is ingested afresh. The earlier attempt's
        record is its folder ``runs/<id>.attempt-<n>``."""
        conn = self.conn
        with conn:
            conn.execute("INSERT INTO transcript_fts(transcript_fts, rowid, text) "
                         "SELECT 'delete', rowid, text FROM transcript WHERE session_id=?", (session_id,))
            for table in ("events", "transcript", "gpu_samples", "checkpoints", "controls", "ingest_errors",
                          "ingest_offsets", "sessions"):
                conn.execute(f"DELETE FROM {table} WHERE session_id=?", (session_id,))

    def ingest(self, batch: IngestBatch) -> Ingested:
        """Insert a batch in one transaction; returns the events that were new and the lines skipped.

        The runner numbers its lines 1, 2, 3…; a second, different line claiming a number already
        stored was not written by it (a forged or corrupted record): it is skipped and reported,
        and the first one kept. The same line read twice (two ingesters) is no conflict."""
        conn = self.conn
        with conn:
            new, conflicts = self._only_new(batch.session_id, batch.events)
            conn.executemany(
                "INSERT OR IGNORE INTO events (session_id, seq, ts, type, data) VALUES (?,?,?,?,?)",
                [(e.session_id, e.seq, e.ts, e.type, raw) for e, raw in new],
            )
            self._derive([e for e, _ in new])
            rejected = list(batch.bad) + [
                (batch.lines[i] if i < len(batch.lines) else 0,
                 f"a second line with seq {batch.events[i][0].seq}, other than the first: not the runner's (the first is kept)")
                for i in conflicts]
            if rejected:
                # two ingesters (a monitor and `onegc sessions`) both meet a bad line: it counts once,
                # for the one whose insert took (the other's is ignored)
                recorded = conn.executemany(
                    "INSERT OR IGNORE INTO ingest_errors (path, line_no, session_id, error, ts) VALUES (?,?,?,?,?)",
                    [(batch.path, n, batch.session_id, err, time.time()) for n, err in rejected],
                ).rowcount
                if recorded > 0:
                    conn.execute("UPDATE sessions SET warnings = warnings + ? WHERE session_id=?", (recorded, batch.session_id))
            conn.execute(
                "INSERT INTO ingest_offsets (path, session_id, offset, line_no, file_id) VALUES (?,?,?,?,?)"
                " ON CONFLICT(path) DO UPDATE SET offset=excluded.offset, line_no=excluded.line_no,"
                " file_id=COALESCE(excluded.file_id, file_id)"
                " WHERE excluded.offset > ingest_offsets.offset",  # another ingester may have gone further
                (batch.path, batch.session_id, batch.offset, batch.line_no, batch.file_id),
            )
        return Ingested([e for e, _ in new], rejected)

    def _only_new(self, session_id: str, events: Sequence[tuple[Event, str]]) -> tuple[list[tuple[Event, str]], list[int]]:
        """The events not stored yet, and the indices of lines whose seq is taken by another line."""
        if not events:
            return [], []
        seqs = [e.seq for e, _ in events]
        top = self.conn.execute("SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id=?", (session_id,)).fetchone()[0]
        if seqs[0] > top and all(a < b for a, b in zip(seqs, seqs[1:])) and all(e.session_id == session_id for e, _ in events):
            return list(events), []  # the common case: a tail of new, increasing lines
        lo, hi = min(seqs), max(seqs)
        have = dict(self.conn.execute(
            "SELECT seq, data FROM events WHERE session_id=? AND seq BETWEEN ? AND ?", (session_id, lo, hi)).fetchall())
        out, conflicts = [], []
        for i, (e, raw) in enumerate(events):
            if e.session_id != session_id:
                continue
            if e.seq in have:
                if have[e.seq].strip() != raw.strip():
                    conflicts.append(i)
                continue
            have[e.seq] = raw
            out.append((e, raw))
        return out, conflicts

    def _derive(self, events: list[Event]) -> None:
        """Derived rows and the summary row, for events inserted just now."""
        conn = self.conn
        transcript, gpu, controls = [], [], []
        progress: dict[tuple[str, str], tuple] = {}  # (session, call id) -> the latest heartbeat row
        summary: dict[str, dict] = {}
        for e in events:
            s = summary.setdefault(e.session_id, {"last_ts": e.ts, "last_seq": e.seq})
            s["last_ts"] = max(s["last_ts"], e.ts)
            s["last_seq"] = max(s["last_seq"], e.seq)
            t = e.type
            if t == "transcript":
                row = (e.session_id, e.seq, e.ts, e.role, e.kind, e.tool, e.call_id, e.exit_code, e.text)
                if e.kind == "progress" and e.call_id:
                    progress[(e.session_id, e.call_id)] = row  # one row per tool call, updated in place
                else:
                    transcript.append(row)
                if e.kind == "usage":  # increments (a correction may be negative)
                    for key in USAGE_COLUMNS:
                        if val := getattr(e, key):
                            s[key] = s.get(key, 0) + val
                elif e.kind == "result" and (e.tokens_in or e.tokens_out or e.cost_usd):
                    # the session's totals: they replace what the increments added up to
                    s["usage_totals"] = tuple(getattr(e, key) for key in USAGE_COLUMNS)
                    for key in USAGE_COLUMNS:
                        s.pop(key, None)
            elif t == "gpu":
                gpu.append((e.session_id, e.seq, e.ts, e.index, e.util_pct, e.mem_used_mb, e.mem_total_mb, e.power_w, e.temp_c))
                s.update(gpu_util=e.util_pct, gpu_mem_mb=e.mem_used_mb, gpu_mem_total_mb=e.mem_total_mb)
            elif t == "heartbeat":
                s.update(remaining_s=e.remaining_s, remaining_ts=e.ts, active_s=e.active_s, procs=e.procs)
            elif t == "budget":
                s.update(remaining_s=e.remaining_s, remaining_ts=e.ts, deadline=e.deadline)
                if e.state in ("paused", "resumed", "running") and "ended_ts" not in s:  # not after session_ended
                    s["state"] = "paused" if e.state == "paused" else "running"
            elif t == "session_started":
                gpus = e.contract.get("gpu") or []
                s.update(state="running", started_ts=e.ts, study=e.study, task=e.task, agent=e.agent, model=e.model,
                         repeat=e.repeat, budget_s=e.budget_s, grace_s=e.grace_s, remaining_s=e.budget_s,
                         remaining_ts=e.ts,
                         contract=json.dumps(e.contract), contract_hash=contract_hash(e.contract),
                         gpu_name=gpus[0].get("name") if gpus else None)
            elif t == "agent_started":
                s["containment"] = e.containment
            elif t == "process" and e.action == "started" and e.training:
                s["scripts_launched"] = s.get("scripts_launched", 0) + 1
            elif t == "checkpoint_found":
                conn.execute(
                    "INSERT INTO checkpoints (session_id, name, official, seq, ts, budget_elapsed_s, script, self_reported)"
                    " VALUES (?,?,0,?,?,?,?,?) ON CONFLICT DO NOTHING",
                    (e.session_id, e.name, e.seq, e.ts, e.budget_elapsed_s, e.script, e.self_reported))
                s["n_checkpoints"] = s.get("n_checkpoints", 0) + 1
                s.setdefault("first_checkpoint_s", e.budget_elapsed_s)
            elif t == "checkpoint_scored":
                conn.execute(
                    "INSERT INTO checkpoints (session_id, name, official, seq, ts, budget_elapsed_s, value, error, eval_s, flags)"
                    " VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT(session_id, name, official) DO UPDATE SET"
                    " value=excluded.value, error=excluded.error, eval_s=excluded.eval_s, ts=excluded.ts, flags=excluded.flags",
                    (e.session_id, e.name, int(e.official), e.seq, e.ts, e.budget_elapsed_s, e.value, e.error, e.eval_s,
                     json.dumps(e.flags) if e.flags else None))
                if e.flags:
                    s["flagged"] = s.get("flagged", 0) + 1
                if e.value is not None and not e.official:
                    s.setdefault("live_values", []).append(e.value)
            elif t == "control":
                controls.append((e.session_id, e.seq, e.ts, e.action, e.request_id, int(e.accepted), e.detail))
            elif t == "warning":  # one event may stand for many warnings of one cause (runner/coalesce.py)
                s["warnings"] = s.get("warnings", 0) + e.count
            elif t == "session_ended":
                s.update(state="ended" if e.reason in ("completed", "budget_exhausted", "aborted") else "failed",
                         ended_ts=e.ts, end_reason=e.reason, end_detail=e.detail, score=e.score,
                         best_checkpoint=e.best_checkpoint, active_s=e.active_s, remaining_s=None)
        transcript += self._update_progress(progress)
        if transcript:
            last = conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM transcript").fetchone()[0]
            conn.executemany("INSERT OR IGNORE INTO transcript (session_id, seq, ts, role, kind, tool, call_id, exit_code, text)"
                             " VALUES (?,?,?,?,?,?,?,?,?)", transcript)
            conn.execute("INSERT INTO transcript_fts(rowid, text) SELECT rowid, text FROM transcript WHERE rowid > ?", (last,))
        if gpu:
            conn.executemany("INSERT OR IGNORE INTO gpu_samples VALUES (?,?,?,?,?,?,?,?,?)", gpu)
        if controls:
            conn.executemany("INSERT OR IGNORE INTO controls VALUES (?,?,?,?,?,?,?)", controls)
        for sid, s in summary.items():
            self._update_summary(sid, s)

    _ADDITIVE = (*USAGE_COLUMNS, "scripts_launched", "n_checkpoints", "warnings", "flagged")

    def _update_progress(self, progress: dict[tuple[str, str], tuple]) -> list[tuple]:
        """Update each tool call's heartbeat row in place; returns the rows that are new."""
        new = []
        for (sid, call_id), row in progress.items():
            old = self.conn.execute("SELECT rowid, text FROM transcript WHERE session_id=? AND kind='progress' AND call_id=?",
                                    (sid, call_id)).fetchone()  # fmt: skip
            if old is None:
                new.append(row)
                continue
            self.conn.execute("INSERT INTO transcript_fts(transcript_fts, rowid, text) VALUES('delete', ?, ?)", old)
            self.conn.execute("UPDATE transcript SET ts=?, text=? WHERE rowid=?", (row[2], row[8], old[0]))
            self.conn.execute("INSERT INTO transcript_fts(rowid, text) VALUES (?, ?)", (old[0], row[8]))
        return new

    def _update_summary(self, sid: str, s: dict) -> None:
        live = s.pop("live_values", None)
        totals = s.pop("usage_totals", None)
        if totals is not None:
            usage = ", ".join(f"{key} = COALESCE(?, {key})" for key in USAGE_COLUMNS)
            self.conn.execute(f"UPDATE sessions SET {usage} WHERE session_id = ?", (*totals, sid))
        first = s.pop("first_checkpoint_s", None)
        sets: list[str] = []
        args: list[Any] = []
        for key, val in s.items():
            if key in self._ADDITIVE:
                sets.append(f"{key} = COALESCE({key}, 0) + ?")
            elif key in ("last_ts", "last_seq"):
                sets.append(f"{key} = MAX(COALESCE({key}, 0), ?)")
            else:
                sets.append(f"{key} = ?")
            args.append(val)
        if first is not None:
            sets.append("first_checkpoint_s = COALESCE(first_checkpoint_s, ?)")
            args.append(first)
        if live:
            from tasks import best_of

            direction = self._direction(sid)
            better = "MAX" if direction == "higher" else "MIN"  # best_of in SQL
            best = best_of(live, direction)
            sets.append(f"best_live = CASE WHEN best_live IS NULL THEN ? ELSE {better}(best_live, ?) END")
            args += [best, best]
        # a session that ended (session_ended: ended_ts) must not be flipped back to running by a
        # late budget event; a liveness verdict (mark_failed: no ended_ts) gives way to the
        # session's own events showing it alive
        if "state" in s and s["state"] in ("running", "paused"):
            idx = list(s).index("state")
            sets[idx] = "state = CASE WHEN ended_ts IS NOT NULL THEN state ELSE ? END"
            sets += ["end_reason = CASE WHEN ended_ts IS NOT NULL THEN end_reason END",
                     "end_detail = CASE WHEN ended_ts IS NOT NULL THEN end_detail END"]
        self.conn.execute(f"UPDATE sessions SET {', '.join(sets)} WHERE session_id = ?", (*args, sid))

    def _direction(self, sid: str) -> Direction:
        row = self.conn.execute("SELECT task FROM sessions WHERE session_id=?", (sid,)).fetchone()
        from tasks import direction_of

        return direction_of(row[0] if row else None)

    def set_disqualified(self, session_id: str, reason: str | None) -> None:
        """A verdict (runner/verdicts.py): struck out of the statistics with ``reason``, or reinstated."""
        with self.conn:
            self.conn.execute("UPDATE sessions SET disqualified=? WHERE session_id=?", (reason, session_id))

    def mark_failed(self, session_id: str, reason: str) -> None:
        """A session whose runner died without ``session_ended`` (kept out of events.jsonl)."""
        with self.conn:
            self.conn.execute(
                "UPDATE sessions SET state='failed', end_reason='harness_error', end_detail=?, remaining_s=NULL"
                " WHERE session_id=? AND state NOT IN ('ended', 'failed')", (reason, session_id))

    # ------------------------------------------------------------------ reading
    def sessions(self, where: str = "1=1", args: Iterable = ()) -> list[dict]:
        return list(self.db.query(f"SELECT * FROM sessions WHERE {where} ORDER BY started_ts IS NULL, started_ts, session_id", list(args)))

    def sessions_since(self, rev: int) -> list[dict]:
        """Summary rows written after revision ``rev`` (each write to a row gives it a new ``rev``)."""
        return list(self.db.query("SELECT * FROM sessions WHERE rev > ? ORDER BY rev", [rev]))

    def session(self, session_id: str) -> dict | None:
        rows = self.sessions("session_id = ?", (session_id,))
        return rows[0] if rows else None

    def count_events(self, session_id: str) -> int:
        return self.conn.execute("SELECT COUNT(*) FROM events WHERE session_id=?", (session_id,)).fetchone()[0]

    def transcript(self, session_id: str, limit: int = 1000, kinds: Sequence[str] | None = None,
                   search: str | None = None) -> list[dict]:
        join, found, found_args = text_search([w.lower() for w in (search or "").split()])
        sql = "SELECT t.* FROM transcript t" + join
        where, args = ["t.session_id = ?", *found], [session_id, *found_args]
        args_any: list[Any] = args
        if kinds:
            where.append(f"t.kind IN ({','.join('?' * len(kinds))})")
            args += list(kinds)
        sql += " WHERE " + " AND ".join(where) + " ORDER BY t.seq DESC LIMIT ?"
        args_any.append(limit)
        return list(reversed(list(self.db.query(sql, args_any))))

    def checkpoints(self, session_id: str) -> list[dict]:
        return list(self.db.query(
            "SELECT * FROM checkpoints WHERE session_id=? ORDER BY official, COALESCE(budget_elapsed_s, 0), seq", [session_id]))

    def gpu_samples(self, session_id: str, limit: int = 600) -> list[dict]:
        rows = self.db.query("SELECT * FROM gpu_samples WHERE session_id=? ORDER BY seq DESC LIMIT ?", [session_id, limit])
        return list(reversed(list(rows)))

    def ingest_errors(self, session_id: str) -> list[dict]:
        return list(self.db.query("SELECT * FROM ingest_errors WHERE session_id=? ORDER BY line_no", [session_id]))

    def max_seq(self, session_id: str) -> int:
        return self.conn.execute("SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id=?", (session_id,)).fetchone()[0]

    def events_of(self, session_id: str, types: Sequence[str] | None = None) -> list[dict]:
        sql, args = "SELECT data FROM events WHERE session_id=?", [session_id]
        if types:
            sql += f" AND type IN ({','.join('?' * len(types))})"
            args += list(types)
        return [json.loads(r["data"]) for r in self.db.query(sql + " ORDER BY seq", args)]


__all__ = ["DB_NAME", "IngestBatch", "Ingested", "SCHEMA_VERSION", "SchemaTooNew", "Store", "StoreUnusable",
           "contract_hash", "fts_query", "text_search", "unusable"]
