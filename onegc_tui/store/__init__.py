"""The SQLite store: a materialised, queryable copy of every session folder.

WAL, ``synchronous=NORMAL``, migrations at open, one connection per thread (open a
:class:`Store` per thread). Events are keyed by ``(session_id, seq)``: inserting one twice is a
no-op, and the derived tables (transcript, GPU samples, checkpoints, controls) and the
per-session summary row only change for events that were new. Writes go in batches, one
transaction each, with the ingest offset of the file they came from.

The standard library's ``sqlite3``, not sqlite-utils: that imports numpy, which ``onegc
sessions`` must not pay for at start-up (tests/cli/test_startup.py), and the ingest's inserts
are ``executemany`` over rows taken in C either way.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import compress, repeat
from operator import add, eq, itemgetter, not_
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onegc_tui.store.schema import SCHEMA_VERSION, SchemaTooNew, migrate
from runner.errors import OnegcError
from runner.wire import verdicts
from runner.wire.summary import ADDED, LIVE_STATES, fold

Record = dict[str, Any]  # an event's fields (onegc_tui/store/records.py)

if TYPE_CHECKING:
    from tasks import Direction

DB_NAME = "onegc.db"
BUSY_TIMEOUT_MS = 10_000  # a reader never fails because the ingester is mid-commit
BULK_CACHE_KIB = 64 << 10  # bulk(): SQLite's page cache, 64 MiB (its default is 2 MiB)
BULK_COMMIT_ROWS = 500_000  # bulk(): a commit per this many events keeps the WAL to a few hundred MB
# per-session usage: transcript ``usage`` items add to these, a ``result`` item replaces them
USAGE_COLUMNS = ("tokens_in", "tokens_out", "cache_read", "cache_write", "cost_usd")

# CPython's sqlite3 (3.11) sends every None parameter through its adapter protocol: a miss in the
# adapter registry, then two failed attribute lookups (``__adapt__``, ``__conform__``) that each
# format an AttributeError, about 0.5 µs per None. A transcript row has three (tool, call id, exit
# code): a quarter of its insert. With an adapter registered for None the first lookup finds it,
# and ``{}.get`` (a C function: ``{}.get(None)`` is None) returns None, bound as NULL exactly as
# before. The registry is the module's, for every connection: NULL either way.
sqlite3.register_adapter(type(None), {}.get)  # type: ignore[arg-type]  # {}.get(None) is None: see above


@dataclass(frozen=True)
class IngestBatch:
    """New whole lines of one ``events.jsonl``: each event's fields, and its raw text beside it.

    The fields are a dict: :func:`onegc_tui.store.records.parse_record` of the line, or the
    ``__dict__`` of its :data:`~runner.wire.events.Event` model (the same keys and values)."""

    path: str
    session_id: str
    records: Sequence[Record]
    raws: Sequence[str]  # the line of each record
    offset: int
    line_no: int
    bad: Sequence[tuple[int, str]] = ()
    lines: Sequence[int] = ()  # the line number of each record, for the ones rejected here
    file_id: str | None = None  # the file read ("device:inode"): a new file under the same path starts over


@dataclass(frozen=True)
class Ingested:
    """What a batch changed: which of its records were new (indices into ``records``), and every
    line skipped (corrupt or in conflict)."""

    new: list[int]
    rejected: list[tuple[int, str]]


# Rows for executemany are taken from the records by itemgetter, in C: a tuple built in Python
# per row cost more than the insert of an index entry.
_EVENT_KEY = itemgetter("session_id", "seq", "ts", "type")
_SEQ, _TS, _SESSION = itemgetter("seq"), itemgetter("ts"), itemgetter("session_id")
_TRANSCRIPT_ROW = itemgetter("session_id", "seq", "ts", "role", "kind", "tool", "call_id", "exit_code", "text")
_GPU_ROW = itemgetter("session_id", "seq", "ts", "index", "util_pct", "mem_used_mb", "mem_total_mb", "power_w", "temp_c",
                      "sm_active_pct", "tensor_active_pct", "dram_bw_pct")
_CONTROL_ROW = itemgetter("session_id", "seq", "ts", "action", "request_id", "accepted", "detail")
_TYPE, _KIND = itemgetter("type"), itemgetter("kind")
_BULK_TYPES = frozenset({"transcript", "gpu"})
_SPECIAL_KINDS = frozenset({"progress", "usage", "result"})  # transcript items that change more than their row


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
    """What makes two sessions comparable, hashed (host and Python excluded, and how `onegc verify`
    reproduces it: a statement about the record, not a condition of the run)."""
    keep = {k: v for k, v in contract.items() if k not in ("host", "python", "verify")}
    if isinstance(keep.get("gpu"), list):
        keep["gpu"] = [{"name": g.get("name"), "driver": g.get("driver")} for g in keep["gpu"]]
    return hashlib.sha256(json.dumps(keep, sort_keys=True).encode()).hexdigest()[:12]


class StoreUnusable(OnegcError):
    """``onegc.db`` cannot be opened or brought to this schema (the message names the fix)."""


_instead: dict[Path, Path] = {}  # home -> the store this process opens for it (redirect)


def redirect(home: Path, db: Path | None) -> None:
    """From now on in this process, :meth:`Store.open` of ``home`` opens ``db`` instead of its
    ``onegc.db`` (None: its own again). The monitor over a home it cannot write works so on a
    private copy of the store (onegc_tui/store/readonly_home.py ``private_store``): every connection
    it opens by home (the app's, the ingest thread's, each screen's worker) opens the copy."""
    if db is None:
        _instead.pop(home.resolve(), None)
    else:
        _instead[home.resolve()] = db


def db_path(home: Path) -> Path:
    """The store :meth:`Store.open` opens for ``home``: its ``onegc.db``, unless :func:`redirect`
    sent it elsewhere."""
    return _instead.get(home.resolve(), home / DB_NAME) if _instead else home / DB_NAME


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

    @classmethod
    def open(cls, home: Path) -> Store:
        return cls(db_path(home))

    def close(self) -> None:
        self.conn.close()

    @property
    def schema_version(self) -> int:
        return self.conn.execute("PRAGMA user_version").fetchone()[0]

    # ------------------------------------------------------------------ writing
    @contextmanager
    def transaction(self, commit_rows: int | None = None):
        """Every write inside in one transaction, each batch in a savepoint of its own (a batch
        that fails leaves nothing behind, the others stay): the live ingest commits once per
        wake for all the sessions that wrote, not once per session and batch. ``commit_rows``:
        committed (and indexed for search) each time that many events have come, so that a long
        write does not hold the store from other writers for longer (their wait is
        ``BUSY_TIMEOUT_MS`` at most)."""
        conn = self.conn
        conn.execute("BEGIN")
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
                " AND name NOT LIKE 'transcript_fts%' ORDER BY name")]
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
            for table in ("events", "transcript", "gpu_samples", "checkpoints", "controls", "ingest_errors",
                          "ingest_offsets", "sessions"):
                conn.execute(f"DELETE FROM {table} WHERE session_id=?", (session_id,))

    def ingest(self, batch: IngestBatch) -> Ingested:
        """Insert a batch in one transaction; returns the events that were new and the lines skipped.

        The runner numbers its lines 1, 2, 3…; a second, different line claiming a number already
        stored was not written by it (a forged or corrupted record): it is skipped and reported,
        and the first one kept. The same line read twice (two ingesters) is no conflict."""
        conn = self.conn
        with self._transaction(len(batch.records)):
            new, conflicts = self._only_new(batch.session_id, batch.records, batch.raws)
            records, raws = batch.records, batch.raws
            if len(new) != len(records):
                records, raws = [records[i] for i in new], [raws[i] for i in new]
            conn.executemany("INSERT OR IGNORE INTO events (session_id, seq, ts, type, data) VALUES (?,?,?,?,?)",
                             map(add, map(_EVENT_KEY, records), zip(raws)))
            if records:
                self._derive(batch.session_id, records)
            rejected = list(batch.bad) + [
                (batch.lines[i] if i < len(batch.lines) else 0,
                 f"a second line with seq {batch.records[i]['seq']}, other than the first: not the runner's (the first is kept)")
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
        return Ingested(new, rejected)

    def _only_new(self, session_id: str, records: Sequence[Record], raws: Sequence[str]) -> tuple[list[int], list[int]]:
        """The indices of the records not stored yet, and of the lines whose seq is taken by another line."""
        if not records:
            return [], []
        seqs = list(map(_SEQ, records))
        top = self.conn.execute("SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id=?", (session_id,)).fetchone()[0]
        if seqs[0] > top and all(map(int.__lt__, seqs, seqs[1:])) and set(map(_SESSION, records)) == {session_id}:
            return list(range(len(records))), []  # the common case: a tail of new, increasing lines
        lo, hi = min(seqs), max(seqs)
        have = dict(self.conn.execute(
            "SELECT seq, data FROM events WHERE session_id=? AND seq BETWEEN ? AND ?", (session_id, lo, hi)).fetchall())
        out, conflicts = [], []
        for i, (r, raw) in enumerate(zip(records, raws, strict=True)):
            if r["session_id"] != session_id:
                continue
            if r["seq"] in have:
                if have[r["seq"]].strip() != raw.strip():
                    conflicts.append(i)
                continue
            have[r["seq"]] = raw
            out.append(i)
        return out, conflicts

    def _derive(self, sid: str, records: Sequence[Record]) -> None:
        """Derived rows and the summary row, for one session's events inserted just now."""
        conn = self.conn
        transcript, gpu, controls = [], [], []
        progress: dict[str, tuple] = {}  # call id -> the latest heartbeat row
        s: dict = {"last_ts": max(map(_TS, records)), "last_seq": max(map(_SEQ, records))}
        # transcript lines and GPU samples are nearly every event: sorted out by maps in C, in order;
        # the other kinds (a few per minute) each change the summary, in their order among themselves
        types = list(map(_TYPE, records))
        if "transcript" in types:
            transcript = list(compress(records, map(eq, types, repeat("transcript"))))
            if not _SPECIAL_KINDS.isdisjoint(map(_KIND, transcript)):
                transcript = self._special_transcript(transcript, progress, s)
        if "gpu" in types:
            gpu = list(compress(records, map(eq, types, repeat("gpu"))))
        for r in compress(records, map(not_, map(_BULK_TYPES.__contains__, types))):
            fold(s, r)  # the summary's rules (runner/wire/summary.py); the rows they leave are kept here
            t = r["type"]
            if t == "checkpoint_found":
                conn.execute(
                    "INSERT INTO checkpoints (session_id, name, official, seq, ts, budget_elapsed_s, script, self_reported)"
                    " VALUES (?,?,0,?,?,?,?,?) ON CONFLICT DO NOTHING",
                    (sid, r["name"], r["seq"], r["ts"], r["budget_elapsed_s"], r["script"], r["self_reported"]))
            elif t == "checkpoint_scored":
                found = verdicts.read(r.get("verdicts"), r.get("flags"))
                conn.execute(
                    "INSERT INTO checkpoints (session_id, name, official, seq, ts, budget_elapsed_s, value, error, eval_s,"
                    " verdicts) VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT(session_id, name, official) DO UPDATE SET"
                    " value=excluded.value, error=excluded.error, eval_s=excluded.eval_s, ts=excluded.ts,"
                    " verdicts=excluded.verdicts",
                    (sid, r["name"], int(r["official"]), r["seq"], r["ts"], r["budget_elapsed_s"], r["value"], r["error"],
                     r["eval_s"], json.dumps(verdicts.records(found)) if found else None))
            elif t == "control":
                controls.append(r)
        rows = list(map(_TRANSCRIPT_ROW, transcript))
        if progress:
            rows += self._update_progress(sid, progress)
        if rows:
            alone = not self._fts_deferred and self._outer is None  # else indexed at the transaction's end
            if alone or self._outer == "transaction":
                self._pending_from()
            conn.executemany("INSERT OR IGNORE INTO transcript (session_id, seq, ts, role, kind, tool, call_id, exit_code, text)"
                             " VALUES (?,?,?,?,?,?,?,?,?)", rows)
            if alone:
                self._index_pending()
        if gpu:
            conn.executemany("INSERT OR IGNORE INTO gpu_samples VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", map(_GPU_ROW, gpu))
            g = gpu[-1]  # the latest sample is the session's current one
            s.update(gpu_util=g["util_pct"], gpu_mem_mb=g["mem_used_mb"], gpu_mem_total_mb=g["mem_total_mb"])
        if controls:
            conn.executemany("INSERT OR IGNORE INTO controls VALUES (?,?,?,?,?,?,?)", map(_CONTROL_ROW, controls))
        self._update_summary(sid, s)

    @staticmethod
    def _special_transcript(transcript: list[Record], progress: dict[str, tuple], s: dict) -> list[Record]:
        """The transcript rows to insert, where some are heartbeats (``progress``, one row per tool
        call, updated in place) or usage (added to the summary, or its totals)."""
        rows = []
        for r in transcript:
            kind = r["kind"]
            if kind == "progress" and r["call_id"]:
                progress[r["call_id"]] = _TRANSCRIPT_ROW(r)
                continue
            rows.append(r)
            if kind == "usage":  # increments (a correction may be negative)
                for key in USAGE_COLUMNS:
                    if val := r[key]:
                        s[key] = s.get(key, 0) + val
            elif kind == "result" and (r["tokens_in"] or r["tokens_out"] or r["cost_usd"]):
                # the session's totals replace what the increments added up to, where it has them (a
                # figure it lacks, such as cache reads, keeps its increments, in this batch or before)
                s["usage_totals"] = totals = tuple(r[key] for key in USAGE_COLUMNS)
                for key, total in zip(USAGE_COLUMNS, totals, strict=True):
                    if total is not None:
                        s.pop(key, None)
        return rows

    _ADDITIVE = frozenset({*USAGE_COLUMNS, *ADDED})  # a delta's keys that add to the row's

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

    def _update_summary(self, sid: str, s: dict) -> None:
        """Apply a summary delta (:func:`runner.wire.summary.fold`, plus the bulk kinds' usage, GPU
        figures and ``last_ts``/``last_seq``) to the session's row, by the rules of runner/wire/summary.py."""
        live = s.pop("live_values", None)
        totals = s.pop("usage_totals", None)
        if totals is not None:
            usage = ", ".join(f"{key} = COALESCE(?, {key})" for key in USAGE_COLUMNS)
            self.conn.execute(f"UPDATE sessions SET {usage} WHERE session_id = ?", (*totals, sid))
        if "contract" in s:
            contract = s["contract"]
            s.update(contract=json.dumps(contract), contract_hash=contract_hash(contract))
        if "not_checked" in s:  # a JSON list (runner/integrity/checks.py)
            s["not_checked"] = json.dumps(s["not_checked"])
        sets: list[str] = []
        args: list[Any] = []
        for key, val in s.items():
            if key in self._ADDITIVE:
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
        if live:
            from tasks import best_of

            direction = self._direction(sid, s.get("task"))
            better = "MAX" if direction == "higher" else "MIN"  # best_of in SQL
            best = best_of(live, direction)
            sets.append(f"best_live = CASE WHEN best_live IS NULL THEN ? ELSE {better}(best_live, ?) END")
            args += [best, best]
        self.conn.execute(f"UPDATE sessions SET {', '.join(sets)} WHERE session_id = ?", (*args, sid))

    def _direction(self, sid: str, task: str | None = None) -> Direction:
        """The direction of the session's task: ``task`` (its session_started, in this very delta),
        else the one its row names."""
        if task is None:
            row = self.conn.execute("SELECT task FROM sessions WHERE session_id=?", (sid,)).fetchone()
            task = row[0] if row else None
        from tasks import direction_of

        return direction_of(task)

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
        return self.conn.execute("SELECT COUNT(*) FROM events WHERE session_id=?", (session_id,)).fetchone()[0]

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
        return self.conn.execute("SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id=?", (session_id,)).fetchone()[0]

    def events_of(self, session_id: str, types: Sequence[str] | None = None) -> list[dict]:
        sql, args = "SELECT data FROM events WHERE session_id=?", [session_id]
        if types:
            sql += f" AND type IN ({','.join('?' * len(types))})"
            args += list(types)
        return [json.loads(r["data"]) for r in self._query(sql + " ORDER BY seq", args)]


__all__ = ["DB_NAME", "IngestBatch", "Ingested", "SCHEMA_VERSION", "SchemaTooNew", "Store", "StoreUnusable",
           "contract_hash", "db_path", "fts_query", "redirect", "text_search", "unusable"]
