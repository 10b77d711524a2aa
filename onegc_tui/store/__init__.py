"""The SQLite store: a materialised, queryable copy of every session folder. Only SQL: the queries
and the writes; what a batch of events writes is worked out by the ingest (onegc_tui/store/rows.py),
its one-line errors are onegc_tui/store/unusable.py's, its search SQL onegc_tui/store/search.py's.

WAL, ``synchronous=NORMAL``, migrations at open, one connection per thread (open a
:class:`Store` per thread). Events are keyed by ``(session_id, seq)``: inserting one twice is a
no-op, and the derived tables (transcript, GPU samples, warnings, checkpoints, controls) and the
per-session summary row only change for events that were new. Writes go in batches, one
transaction each, with the ingest offset of the file they came from.

The standard library's ``sqlite3``, not sqlite-utils: that imports numpy, which ``onegc
sessions`` must not pay for at start-up (tests/cli/test_startup.py), and the ingest's inserts
are ``executemany`` over rows taken in C either way.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import quote

from onegc_tui.store import stored
from onegc_tui.store.rows import USAGE_COLUMNS
from onegc_tui.store.schema import SCHEMA_VERSION, SchemaTooNew, migrate
from onegc_tui.store.search import holds, text_search
from onegc_tui.store.unusable import StoreUnusable, unusable
from runner.wire.summary import ADDED, LIVE_STATES

if TYPE_CHECKING:
    from onegc_tui.store.rows import BatchRows

DB_NAME = "onegc.db"
BUSY_TIMEOUT_MS = 10_000  # a reader never fails because the ingester is mid-commit
BULK_CACHE_KIB = 64 << 10  # bulk(): SQLite's page cache, 64 MiB (its default is 2 MiB)
BULK_COMMIT_ROWS = 500_000  # bulk(): a commit per this many events keeps the WAL to a few hundred MB
# the summary's additive keys (runner/wire/summary.py ADDED, and the usage a batch's steps add)
_ADDITIVE = frozenset({*USAGE_COLUMNS, *ADDED})

# CPython's sqlite3 (3.11) sends every None parameter through its adapter protocol: a miss in the
# adapter registry, then two failed attribute lookups (``__adapt__``, ``__conform__``) that each
# format an AttributeError, about 0.5 µs per None. A transcript row has three (tool, call id, exit
# code): a quarter of its insert. With an adapter registered for None the first lookup finds it,
# and ``{}.get`` (a C function: ``{}.get(None)`` is None) returns None, bound as NULL exactly as
# before. The registry is the module's, for every connection: NULL either way.
sqlite3.register_adapter(type(None), {}.get)  # type: ignore[arg-type]  # {}.get(None) is None: see above

_CHECKPOINT_FOUND = ("INSERT INTO checkpoints (session_id, name, official, seq, ts, budget_elapsed_s, script, self_reported)"
                     " VALUES (?,?,0,?,?,?,?,?) ON CONFLICT DO NOTHING")
_CHECKPOINT_SCORED = (
    "INSERT INTO checkpoints (session_id, name, official, seq, ts, budget_elapsed_s, value, error, eval_s, verdicts,"
    " scored_seq) VALUES (?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(session_id, name, official) DO UPDATE SET"
    " value=excluded.value, error=excluded.error, eval_s=excluded.eval_s, ts=excluded.ts, verdicts=excluded.verdicts,"
    " scored_seq=excluded.scored_seq")
_TRANSCRIPT_INSERT = ("INSERT OR IGNORE INTO transcript (session_id, seq, ts, role, kind, tool, call_id, exit_code, text,"
                      " tokens_in, tokens_out, cache_read, cache_write, cost_usd, raw_line)"
                      " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")


_instead: dict[Path, tuple[Path, bool]] = {}  # home -> the store this process opens for it, and whether only to read


def redirect(home: Path, db: Path | None, read_only: bool = False) -> None:
    """From now on in this process, :meth:`Store.open` of ``home`` opens ``db`` instead of its
    ``onegc.db`` (None: its own again); ``read_only``: in place, only to read (a home this user
    cannot write, whose store the monitor reads as it is: onegc_tui/store/readonly_home.py
    ``private_store``). Every connection the monitor opens by home (the app's, the ingest thread's,
    each screen's worker) opens that one."""
    if db is None:
        _instead.pop(home.resolve(), None)
    else:
        _instead[home.resolve()] = (db, read_only)


def db_path(home: Path) -> Path:
    """The store :meth:`Store.open` opens for ``home``: its ``onegc.db``, unless :func:`redirect`
    sent it elsewhere."""
    return _instead.get(home.resolve(), (home / DB_NAME, False))[0] if _instead else home / DB_NAME


def in_place_uri(db: Path) -> str:
    """SQLite's URI for reading ``db`` in place, writing nothing beside it: read-only, and
    ``immutable`` where no ``-wal`` is there (nobody has it open to write, and a folder this user
    cannot write could not hold the ``-shm`` SQLite would make); with a ``-wal`` (its owner's
    monitor ingesting), read-only as it changes."""
    wal = Path(f"{db}-wal").exists()
    return f"file:{quote(str(db))}?mode=ro" + ("" if wal else "&immutable=1")


class Store:
    read_only = False  # opened in place only to read (Store(path, read_only=True))

    def __init__(self, path: Path, read_only: bool = False):
        self.path = path
        conn = None
        try:
            if read_only:
                conn = sqlite3.connect(in_place_uri(path), uri=True, timeout=BUSY_TIMEOUT_MS / 1000,
                                       check_same_thread=True)
                self.read_only = True
                found = conn.execute("PRAGMA user_version").fetchone()[0]
                if found != SCHEMA_VERSION:  # no migration here: the caller reads a copy instead
                    raise SchemaTooNew(f"{path} has schema {found}, not this onegc's {SCHEMA_VERSION}") \
                        if found > SCHEMA_VERSION else StoreUnusable(f"{path}: schema {found}: older than this onegc's")
            else:
                path.parent.mkdir(parents=True, exist_ok=True)  # a new ONEGC_HOME: an empty store, not a traceback
                conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=True)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            conn.create_function("holds", 2, holds, deterministic=True)  # text_search's check of a word
            if not read_only:
                migrate(conn)
        except (sqlite3.Error, SchemaTooNew, StoreUnusable) as exc:
            if conn is not None:
                conn.close()
            if isinstance(exc, (SchemaTooNew, StoreUnusable)):
                raise
            raise StoreUnusable(unusable(path, exc)) from None
        self.conn = conn

    @classmethod
    def open(cls, home: Path) -> Store:
        if not _instead:
            return cls(home / DB_NAME)
        db, read_only = _instead.get(home.resolve(), (home / DB_NAME, False))
        return cls(db, read_only=read_only)

    def close(self) -> None:
        self.conn.close()

    @property
    def schema_version(self) -> int:
        return self.conn.execute("PRAGMA user_version").fetchone()[0]

    # ------------------------------------------------------------------ writing
    @contextmanager
    def transaction(self, commit_rows: int | None = None, immediate: bool = False):
        """Every write inside in one transaction, each batch in a savepoint of its own (a batch
        that fails leaves nothing behind, the others stay): the live ingest commits once per
        wake for all the sessions that wrote, not once per session and batch. ``commit_rows``:
        committed (and indexed for search) each time that many events have come, so that a long
        write does not hold the store from other writers for longer (their wait is
        ``BUSY_TIMEOUT_MS`` at most). ``immediate``: the write lock from the start, so that what
        it reads first is what it writes over (no other writer commits in between)."""
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
        self._outer = "transaction"
        self._fts_from = None
        self._commit_rows, self._uncommitted_rows = commit_rows, 0
        try:
            yield self
            if not self._fts_deferred:
                self._index_pending()
            conn.commit()
        except BaseException:
            conn.rollback()
            raise
        finally:
            self._outer = None
            self._fts_from = None
            self._commit_rows, self._uncommitted_rows = None, 0

    @contextmanager
    def bulk(self, search_index: bool = True):
        """:meth:`transaction` for a file being built from the session folders (``onegc
        reindex``), which nobody reads before it is renamed into place (a crash leaves a file
        that is thrown away): committed every ``BULK_COMMIT_ROWS`` events, without waiting for the
        disk until the end. A commit per batch and per session was half a reindex's time.

        Each page is written once, into the file (the rollback journal kept in memory, not every
        page first into the WAL and then again into the file), and the search index is built once
        at the end from the whole transcript rather than a segment per batch merged again and
        again (``search_index=False``: not at all, for a part that :meth:`merge_part` takes in). The
        file is in WAL mode again before it is handed over."""
        conn = self.conn
        conn.execute("PRAGMA journal_mode=MEMORY")  # savepoints still roll back (a journal, in memory)
        conn.execute("PRAGMA synchronous=OFF")
        self._fts_deferred = True
        try:
            with self.big_cache(), self.transaction(commit_rows=BULK_COMMIT_ROWS):
                self._outer = "bulk"
                yield self
                if search_index:
                    conn.execute("INSERT INTO transcript_fts(transcript_fts) VALUES('rebuild')")
        finally:
            self._fts_deferred = False
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # and now to the disk, before anyone renames it

    @contextmanager
    def big_cache(self):
        """SQLite's page cache at ``BULK_CACHE_KIB`` for writes of many rows, then its default
        again: at 2 MiB a transaction of 100 000 events spills its pages to the disk and reads
        them back (a catch-up's copy of the second process's rows: 1.3 -> 0.9 s here). Inside
        another (``bulk()`` has one), it leaves the cache as that one set it."""
        if self._big_cache:
            yield
            return
        self.conn.execute(f"PRAGMA cache_size=-{BULK_CACHE_KIB}")
        self._big_cache = True
        try:
            yield
        finally:
            self._big_cache = False
            self.conn.execute("PRAGMA cache_size=-2000")

    def merge_part(self, part: Path) -> None:
        """Every row of another store built from other session folders (onegc_tui/store/reindex.py: two
        processes on two cores), copied in by SQLite itself, in one transaction: all or nothing
        (a row this store has already, another ingester's, raises ``sqlite3.IntegrityError``).
        Transcript rows get rowids of this store; the search index takes them now, or inside
        :meth:`bulk` (between sessions) when it is rebuilt at the end."""
        conn = self.conn
        bulk = self._outer == "bulk"
        if bulk:
            conn.commit()  # ATTACH and DETACH are not allowed inside a transaction
        elif self._outer is not None:
            raise RuntimeError("merge_part inside a transaction")
        conn.execute("ATTACH DATABASE ? AS part", (str(part),))
        try:
            conn.execute("BEGIN")
            if not self._fts_deferred:
                self._pending_from()  # the part's transcript rows come above it
            tables = [r[0] for r in conn.execute(
                "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
                " AND name NOT LIKE 'transcript_fts%' AND name NOT LIKE 'history_%' ORDER BY name")]
            # (the history's summary is this store's: its sessions copied in are marked by its trigger)
            for table in tables:
                cols = ", ".join(f'"{r[1]}"' for r in conn.execute(f'PRAGMA main.table_info("{table}")'))
                verb = "INSERT OR IGNORE" if table == "studies" else "INSERT"  # a study spans both parts
                conn.execute(f'{verb} INTO main."{table}" ({cols}) SELECT {cols} FROM part."{table}"')
            self._index_pending()
            conn.commit()
        finally:
            self._fts_from = None
            if conn.in_transaction:
                conn.rollback()
            conn.execute("DETACH DATABASE part")
            if bulk:
                conn.execute("BEGIN")

    _outer: str | None = None  # inside transaction() or bulk()
    _big_cache = False  # inside big_cache()
    _commit_rows: int | None = None  # inside transaction(commit_rows=...): commit every this many events
    _uncommitted_rows = 0  # ... events written since its last commit
    _fts_deferred = False  # inside bulk(): transcript_fts is rebuilt at its end, not kept up row by row
    # inside transaction(): transcript rows above this rowid are not in the search index yet; they
    # are indexed once, at its end (a statement and a segment per wake, not per session and batch)
    _fts_from: int | None = None

    def _pending_from(self) -> int:
        """The rowid above which this transaction's transcript rows wait for the search index
        (read before its first: the write lock is held, nobody else inserts meanwhile)."""
        if self._fts_from is None:
            self._fts_from = self.conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM transcript").fetchone()[0]
        return self._fts_from

    def _index_pending(self) -> None:
        if self._fts_from is not None:  # rows of a batch rolled back are not there to be indexed
            self.conn.execute("INSERT INTO transcript_fts(rowid, text) SELECT rowid, text FROM transcript WHERE rowid > ?",
                              (self._fts_from,))
            self._fts_from = None

    def _indexed(self, rowid: int) -> bool:
        """Whether a transcript row is in the search index already (else a 'delete' would corrupt it)."""
        return not self._fts_deferred and (self._fts_from is None or rowid <= self._fts_from)

    @contextmanager
    def _transaction(self, rows: int = 0):
        """One transaction (``with conn``), or inside :meth:`transaction` a savepoint of it."""
        conn = self.conn
        if self._outer is None:
            with conn:
                yield
            return
        conn.execute("SAVEPOINT batch")
        try:
            yield
        except BaseException:
            conn.execute("ROLLBACK TO batch")
            conn.execute("RELEASE batch")
            raise
        conn.execute("RELEASE batch")
        if self._commit_rows is not None:
            self._uncommitted_rows += rows
            if self._uncommitted_rows >= self._commit_rows:  # a bounded WAL, a bounded wait for other writers
                if not self._fts_deferred:
                    self._index_pending()
                conn.commit()
                conn.execute("BEGIN")
                self._uncommitted_rows = 0

    def register_session(self, session_id: str, folder: str, config: dict, state: str = "queued") -> None:
        """Make sure a ``sessions`` row exists (from ``session.json``), without clobbering one."""
        with self._transaction():
            self.conn.execute(
                "INSERT OR IGNORE INTO sessions (session_id, folder, study, task, agent, model, repeat, budget_s, grace_s,"
                " state, remaining_s) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
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
        with self._transaction():
            if not self._fts_deferred:  # the rows indexed so far (this transaction's wait for its end)
                conn.execute("INSERT INTO transcript_fts(transcript_fts, rowid, text) "
                             "SELECT 'delete', rowid, text FROM transcript WHERE session_id=? AND rowid <= ?",
                             (session_id, self._fts_from if self._fts_from is not None else 1 << 62))
            for table in ("events", "transcript", "gpu_samples", "checkpoints", "controls", "warnings", "ingest_errors",
                          "ingest_offsets", "sessions"):
                conn.execute(f"DELETE FROM {table} WHERE session_id=?", (session_id,))

    @contextmanager
    def batch(self, rows: int = 0):
        """One batch's writes: its own transaction, or inside :meth:`transaction` a savepoint of it
        (a batch that fails leaves nothing behind); ``rows``: how many events it writes (for
        ``commit_rows``)."""
        with self._transaction(rows):
            yield self

    def top_seq(self, session_id: str) -> int:
        """The highest event number stored for the session (0: none)."""
        return stored.top_seq(self.conn, session_id)

    def write(self, rows: BatchRows, best_live: tuple[float, Literal["MAX", "MIN"]] | None = None) -> None:
        """Insert one session's new events (onegc_tui/store/rows.py) and apply its summary delta;
        ``best_live``: the best of its live scores, and whether the better of two is the ``MAX`` or
        the ``MIN`` (its task's direction)."""
        conn, sid = self.conn, rows.session_id
        if rows.events:  # the kinds that keep their line (the others: their own table's row is the event)
            conn.executemany("INSERT OR IGNORE INTO events (session_id, seq, ts, type, data) VALUES (?,?,?,?,?)", rows.events)
        for scored, row in rows.checkpoints:
            conn.execute(_CHECKPOINT_SCORED if scored else _CHECKPOINT_FOUND, row)
        transcript = rows.transcript
        if rows.progress:
            transcript = transcript + self._update_progress(sid, rows.progress)
        if transcript:
            alone = not self._fts_deferred and self._outer is None  # else indexed at the transaction's end
            if alone or self._outer == "transaction":
                self._pending_from()
            conn.executemany(_TRANSCRIPT_INSERT, transcript)
            if alone:
                self._index_pending()
        if rows.gpu:
            conn.executemany("INSERT OR IGNORE INTO gpu_samples VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", rows.gpu)
        if rows.controls:
            conn.executemany("INSERT OR IGNORE INTO controls VALUES (?,?,?,?,?,?,?)", rows.controls)
        if rows.warnings:
            conn.executemany("INSERT OR IGNORE INTO warnings VALUES (?,?,?,?,?,?)", rows.warnings)
        self._update_summary(sid, rows.delta, rows.usage_totals, best_live)

    def record_rejected(self, path: str, session_id: str, rejected: Sequence[tuple[int, str]]) -> None:
        """Lines skipped (line number, why), each counted once among the session's warnings: two
        ingesters (a monitor and `onegc sessions`) both meet a bad line, and it counts for the one
        whose insert took."""
        recorded = self.conn.executemany(
            "INSERT OR IGNORE INTO ingest_errors (path, line_no, session_id, error, ts) VALUES (?,?,?,?,?)",
            [(path, n, session_id, err, time.time()) for n, err in rejected]).rowcount
        if recorded > 0:
            self.conn.execute("UPDATE sessions SET warnings = warnings + ? WHERE session_id=?", (recorded, session_id))

    def set_offset(self, path: str, session_id: str, offset: int, line_no: int, file_id: str | None) -> None:
        """Where the ingest of ``path`` has got to; never back (another ingester may have gone further)."""
        self.conn.execute(
            "INSERT INTO ingest_offsets (path, session_id, offset, line_no, file_id) VALUES (?,?,?,?,?)"
            " ON CONFLICT(path) DO UPDATE SET offset=excluded.offset, line_no=excluded.line_no,"
            " file_id=COALESCE(excluded.file_id, file_id)"
            " WHERE excluded.offset > ingest_offsets.offset",
            (path, session_id, offset, line_no, file_id))

    def _update_progress(self, sid: str, progress: dict[str, tuple]) -> list[tuple]:
        """Update each tool call's heartbeat row in place; returns the rows that are new."""
        new = []
        for call_id, row in progress.items():
            old = self.conn.execute("SELECT rowid, text FROM transcript WHERE session_id=? AND kind='progress' AND call_id=?",
                                    (sid, call_id)).fetchone()  # fmt: skip
            if old is None:
                new.append(row)
                continue
            if not self._indexed(old[0]):  # indexed later, as it is then
                self.conn.execute("UPDATE transcript SET ts=?, text=? WHERE rowid=?", (row[2], row[8], old[0]))
                continue
            self.conn.execute("INSERT INTO transcript_fts(transcript_fts, rowid, text) VALUES('delete', ?, ?)", old)
            self.conn.execute("UPDATE transcript SET ts=?, text=? WHERE rowid=?", (row[2], row[8], old[0]))
            self.conn.execute("INSERT INTO transcript_fts(rowid, text) VALUES (?, ?)", (old[0], row[8]))
        return new

    def _update_summary(self, sid: str, delta: dict, totals: tuple | None,
                        best_live: tuple[float, Literal["MAX", "MIN"]] | None) -> None:
        """Apply a summary delta (onegc_tui/store/rows.py) to the session's row, by the rules of
        runner/wire/summary.py, in SQL."""
        if totals is not None:
            usage = ", ".join(f"{key} = COALESCE(?, {key})" for key in USAGE_COLUMNS)
            self.conn.execute(f"UPDATE sessions SET {usage} WHERE session_id = ?", (*totals, sid))
        sets: list[str] = []
        args: list[Any] = []
        for key, val in delta.items():
            if key in _ADDITIVE:
                sets.append(f"{key} = COALESCE({key}, 0) + ?")
            elif key in ("last_ts", "last_seq"):
                sets.append(f"{key} = MAX(COALESCE({key}, 0), ?)")
            elif key == "first_checkpoint_s":
                sets.append("first_checkpoint_s = COALESCE(first_checkpoint_s, ?)")
            elif key == "state" and val in LIVE_STATES:  # not once ended; a liveness verdict gives way
                sets += ["state = CASE WHEN ended_ts IS NOT NULL THEN state ELSE ? END",
                         "end_reason = CASE WHEN ended_ts IS NOT NULL THEN end_reason END",
                         "end_detail = CASE WHEN ended_ts IS NOT NULL THEN end_detail END"]
            else:
                sets.append(f"{key} = ?")
            args.append(val)
        if best_live is not None:
            best, better = best_live
            sets.append(f"best_live = CASE WHEN best_live IS NULL THEN ? ELSE {better}(best_live, ?) END")
            args += [best, best]
        if sets:
            self.conn.execute(f"UPDATE sessions SET {', '.join(sets)} WHERE session_id = ?", (*args, sid))

    def task_of(self, session_id: str) -> str | None:
        """The task its summary row names (None: none yet)."""
        row = self.conn.execute("SELECT task FROM sessions WHERE session_id=?", (session_id,)).fetchone()
        return row[0] if row else None

    def set_disqualified(self, session_id: str, reason: str | None) -> None:
        """A disqualification (runner/wire/disqualifications.py): struck out of the statistics with ``reason``,
        or reinstated."""
        with self._transaction():
            self.conn.execute("UPDATE sessions SET disqualified=? WHERE session_id=?", (reason, session_id))

    def set_record(self, session_id: str, columns: Sequence[object]) -> None:
        """How the session's record stands: ``RecordStatus.columns()`` (onegc_tui/store/record_status.py:
        its seal, its verify, its re-score)."""
        with self._transaction():
            self.conn.execute("UPDATE sessions SET record=?, record_detail=?, verified=?, verified_detail=?, rescore=?,"
                              " rescore_by=? WHERE session_id=?", (*columns, session_id))

    def mark_failed(self, session_id: str, reason: str) -> None:
        """A session whose runner died without ``session_ended`` (kept out of events.jsonl)."""
        with self._transaction():
            self.conn.execute(
                "UPDATE sessions SET state='failed', end_reason='harness_error', end_detail=?, remaining_s=NULL"
                " WHERE session_id=? AND state NOT IN ('ended', 'failed')", (reason, session_id))

    def mark_ended(self, session_id: str, reason: str, detail: str, score: float | None, checkpoint: str | None,
                   val: float | None) -> None:
        """A session whose ``session_ended`` cannot be read (a torn log) but whose ``result.json``
        states its end (onegc_tui/store/torn_tail.py)."""
        from runner.wire.summary import end_state

        with self._transaction():
            self.conn.execute(
                "UPDATE sessions SET state=?, end_reason=?, end_detail=?, score=?, best_checkpoint=?, val=?,"
                " remaining_s=NULL WHERE session_id=? AND state NOT IN ('ended', 'failed')",
                (end_state(reason), reason, detail, score, checkpoint, val, session_id))

    # ------------------------------------------------------------------ reading
    def _query(self, sql: str, args: Iterable = ()) -> list[dict]:
        """Rows as dicts of column -> value."""
        cur = self.conn.execute(sql, tuple(args))
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur]

    def sessions(self, where: str = "1=1", args: Iterable = ()) -> list[dict]:
        return self._query(f"SELECT * FROM sessions WHERE {where} ORDER BY started_ts IS NULL, started_ts, session_id", args)

    def sessions_since(self, rev: int) -> list[dict]:
        """Summary rows written after revision ``rev`` (each write to a row gives it a new ``rev``)."""
        return self._query("SELECT * FROM sessions WHERE rev > ? ORDER BY rev", [rev])

    def session(self, session_id: str) -> dict | None:
        rows = self.sessions("session_id = ?", (session_id,))
        return rows[0] if rows else None

    def count_events(self, session_id: str) -> int:
        return stored.count(self.conn, session_id)

    def transcript(self, session_id: str, limit: int = 1000, kinds: Sequence[str] | None = None,
                   search: str | None = None) -> list[dict]:
        join, found, found_args = text_search([w.lower() for w in (search or "").split()])
        sql = "SELECT t.* FROM transcript t" + join
        where, args = ["t.session_id = ?", *found], [session_id, *found_args]
        if kinds:
            where.append(f"t.kind IN ({','.join('?' * len(kinds))})")
            args += list(kinds)
        sql += " WHERE " + " AND ".join(where) + " ORDER BY t.seq DESC LIMIT ?"
        return list(reversed(list(self._query(sql, [*args, limit]))))  # text_search checks each word in SQL

    def stream_transcript(self, session_id: str, limit: int | None = None) -> Iterator[dict]:
        """A session's transcript rows, oldest first, read from SQLite as they are used: an export of
        a session of any size holds one row at a time. ``limit``: the first this many."""
        args: list[Any]
        sql, args = "SELECT * FROM transcript WHERE session_id=? ORDER BY seq", [session_id]
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        cur = self.conn.execute(sql, args)
        names = [d[0] for d in cur.description]
        for row in cur:
            yield dict(zip(names, row, strict=True))

    def checkpoints(self, session_id: str) -> list[dict]:
        return list(self._query(
            "SELECT * FROM checkpoints WHERE session_id=? ORDER BY official, COALESCE(budget_elapsed_s, 0), seq", [session_id]))

    def gpu_samples(self, session_id: str, limit: int = 600) -> list[dict]:
        rows = self._query("SELECT * FROM gpu_samples WHERE session_id=? ORDER BY seq DESC LIMIT ?", [session_id, limit])
        return rows[::-1]

    def ingest_errors(self, session_id: str) -> list[dict]:
        return self._query("SELECT * FROM ingest_errors WHERE session_id=? ORDER BY line_no", [session_id])

    def max_seq(self, session_id: str) -> int:
        return stored.top_seq(self.conn, session_id)

    def events_of(self, session_id: str, types: Sequence[str] | None = None) -> list[dict]:
        """A session's events (of ``types``) as dicts of their fields, in order (those whose own
        table holds them, from that row: onegc_tui/store/stored.py)."""
        return stored.records(self.conn, session_id, stored.envelopes(self.conn, session_id, types))


__all__ = ["DB_NAME", "SCHEMA_VERSION", "SchemaTooNew", "Store", "StoreUnusable", "db_path", "redirect", "text_search",
           "unusable"]
