"""The SQLite schema and its migrations (``PRAGMA user_version`` is the schema version).

Migrations are applied in order at open; each is one transaction. Add a migration, never edit
one that has shipped. The store can always be rebuilt from the session folders (``onegc reindex``).
"""

from __future__ import annotations

import sqlite3

from runner.errors import OnegcError

MIGRATIONS: list[str] = [
    # 1: the first schema
    """
    CREATE TABLE sessions (
        session_id TEXT PRIMARY KEY,
        folder TEXT NOT NULL,
        study TEXT, task TEXT, agent TEXT, model TEXT, repeat INTEGER,
        state TEXT NOT NULL DEFAULT 'queued',   -- queued, running, paused, ended, failed
        budget_s REAL, grace_s REAL,
        remaining_s REAL, active_s REAL, deadline REAL,
        started_ts REAL, ended_ts REAL, last_ts REAL, last_seq INTEGER DEFAULT 0,
        end_reason TEXT, end_detail TEXT,
        score REAL, best_checkpoint TEXT,       -- the official result
        best_live REAL, n_checkpoints INTEGER DEFAULT 0, first_checkpoint_s REAL,
        tokens_in INTEGER DEFAULT 0, tokens_out INTEGER DEFAULT 0, cost_usd REAL DEFAULT 0,
        scripts_launched INTEGER DEFAULT 0, procs INTEGER DEFAULT 0,
        gpu_util REAL, gpu_mem_mb REAL, gpu_mem_total_mb REAL, gpu_name TEXT,
        containment TEXT, contract TEXT, contract_hash TEXT,
        warnings INTEGER DEFAULT 0
    );
    CREATE TABLE events (
        session_id TEXT NOT NULL, seq INTEGER NOT NULL, ts REAL NOT NULL, type TEXT NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
    ) WITHOUT ROWID;
    CREATE TABLE transcript (
        session_id TEXT NOT NULL, seq INTEGER NOT NULL, ts REAL NOT NULL,
        role TEXT, kind TEXT, tool TEXT, call_id TEXT, exit_code INTEGER, text TEXT,
        PRIMARY KEY (session_id, seq)
    );
    -- indexed per batch by the store (a per-row trigger was 4-7x slower); detail=column keeps
    -- word search and drops phrase positions, which the monitor's search does not use
    CREATE VIRTUAL TABLE transcript_fts USING fts5(text, content='transcript', content_rowid='rowid',
                                                   detail=column, columnsize=0);
    CREATE TABLE gpu_samples (
        session_id TEXT NOT NULL, seq INTEGER NOT NULL, ts REAL NOT NULL, gpu INTEGER,
        util_pct REAL, mem_used_mb REAL, mem_total_mb REAL, power_w REAL, temp_c REAL,
        PRIMARY KEY (session_id, seq)
    ) WITHOUT ROWID;
    CREATE TABLE checkpoints (
        session_id TEXT NOT NULL, name TEXT NOT NULL, official INTEGER NOT NULL DEFAULT 0,
        seq INTEGER, ts REAL, budget_elapsed_s REAL, script TEXT, self_reported REAL,
        value REAL, error TEXT, eval_s REAL,
        PRIMARY KEY (session_id, name, official)
    ) WITHOUT ROWID;
    CREATE TABLE controls (
        session_id TEXT NOT NULL, seq INTEGER NOT NULL, ts REAL NOT NULL,
        action TEXT, request_id TEXT, accepted INTEGER, detail TEXT,
        PRIMARY KEY (session_id, seq)
    ) WITHOUT ROWID;
    CREATE TABLE studies (name TEXT PRIMARY KEY, file TEXT, created REAL);
    CREATE TABLE ingest_offsets (
        path TEXT PRIMARY KEY, session_id TEXT, offset INTEGER NOT NULL, line_no INTEGER NOT NULL
    );
    CREATE TABLE ingest_errors (
        path TEXT NOT NULL, line_no INTEGER NOT NULL, session_id TEXT, error TEXT, ts REAL,
        PRIMARY KEY (path, line_no)
    ) WITHOUT ROWID;
    CREATE INDEX sessions_by_study ON sessions(study, agent, task);
    CREATE INDEX events_by_type ON events(session_id, type);
    """,
    # 2: when remaining_s was measured (a later event of another kind is not a later countdown);
    # a revision per summary row, bumped by every insert or update, so a reader fetches only the
    # rows changed since it last looked (the monitor over 10 000 sessions)
    """
    ALTER TABLE sessions ADD COLUMN remaining_ts REAL;
    UPDATE sessions SET remaining_ts = last_ts WHERE remaining_s IS NOT NULL;
    ALTER TABLE sessions ADD COLUMN rev INTEGER NOT NULL DEFAULT 0;
    UPDATE sessions SET rev = rowid;
    CREATE INDEX sessions_by_rev ON sessions(rev);
    CREATE TRIGGER sessions_rev_insert AFTER INSERT ON sessions BEGIN
        UPDATE sessions SET rev = (SELECT MAX(rev) FROM sessions) + 1 WHERE rowid = NEW.rowid;
    END;
    CREATE TRIGGER sessions_rev_update AFTER UPDATE ON sessions WHEN NEW.rev = OLD.rev BEGIN
        UPDATE sessions SET rev = (SELECT MAX(rev) FROM sessions) + 1 WHERE rowid = NEW.rowid;
    END;
    """,
    # 3: integrity flags of sealed scoring (../shared/INTEGRITY.md S1-S5): per score, and how many scores
    # of a session carry one
    """
    ALTER TABLE checkpoints ADD COLUMN flags TEXT;
    ALTER TABLE sessions ADD COLUMN flagged INTEGER NOT NULL DEFAULT 0;
    """,
    # 4: prompt-cache reads and writes (parts of tokens_in) where the agent CLI reports them; the
    # running tool's heartbeat row, one per tool call, found by call_id
    """
    ALTER TABLE sessions ADD COLUMN cache_read INTEGER DEFAULT 0;
    ALTER TABLE sessions ADD COLUMN cache_write INTEGER DEFAULT 0;
    CREATE INDEX transcript_progress ON transcript(session_id, call_id) WHERE kind = 'progress';
    """,
    # 5: a session struck out of the statistics, and why (a person with 'onegc disqualify', or an
    # integrity rule of the runner's); counted in n/N, not in the mean, as the paper's violations
    """
    ALTER TABLE sessions ADD COLUMN disqualified TEXT;
    """,
    # 6: which file an offset belongs to (device:inode): a study retry moves the folder aside and
    # starts a new events.jsonl under the same session id, which must be read from its start
    """
    ALTER TABLE ingest_offsets ADD COLUMN file_id TEXT;
    """,
    # 7: the official checkpoint's validation score, the val-test gap flag (runner/integrity/selection_gap.py),
    # and whether the session ran contended (runner/session/contention.py)
    """
    ALTER TABLE sessions ADD COLUMN val REAL;
    ALTER TABLE sessions ADD COLUMN val_gap_flag TEXT;
    ALTER TABLE sessions ADD COLUMN contended INTEGER;  -- runner/session/contention.py; NULL: not recorded
    ALTER TABLE sessions ADD COLUMN conditions TEXT;    -- its reasons, '; '-joined
    """,
    # 8: the agent's output left out of the record past the session's caps (runner/wire/record_caps.py):
    # lines and transcript events, and their bytes, summed over the `truncated` events
    """
    ALTER TABLE sessions ADD COLUMN truncated INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sessions ADD COLUMN truncated_bytes INTEGER NOT NULL DEFAULT 0;
    """,
    # 9: how often a cap of the session (memory, processes, disk) stopped the agent: its warnings
    # (runner.wire.defaults.CAP_WARNINGS), counted from the events already stored
    """
    ALTER TABLE sessions ADD COLUMN caps_reached INTEGER NOT NULL DEFAULT 0;
    UPDATE sessions SET caps_reached = (
        SELECT COALESCE(SUM(COALESCE(json_extract(e.data, '$.count'), 1)), 0) FROM events e
        WHERE e.session_id = sessions.session_id AND e.type = 'warning'
          AND json_extract(e.data, '$.code') IN ('oom', 'process_cap', 'disk_full'));
    """,
    # 10: typed verdicts (runner/wire/verdicts.py) per score, in place of free-text flags (older rows keep
    # theirs in `flags`, read as verdicts of their own); the threat rows a session left unchecked
    # (runner/integrity/checks.py: a JSON list; NULL: not recorded)
    """
    ALTER TABLE checkpoints ADD COLUMN verdicts TEXT;
    ALTER TABLE sessions ADD COLUMN not_checked TEXT;
    """,
    # 11: what the GPU's units did beside its utilisation, where it has GPM (runner/session/gpm.py):
    # the share of SMs busy, of time any tensor core worked, of the DRAM bandwidth used, per sample;
    # NULL where the GPU has no GPM (and in samples stored before; `onegc reindex` reads them again)
    """
    ALTER TABLE gpu_samples ADD COLUMN sm_pct REAL;
    ALTER TABLE gpu_samples ADD COLUMN tensor_pct REAL;
    ALTER TABLE gpu_samples ADD COLUMN dram_pct REAL;
    """,
    # 12: one owner for each fact (issue 49). A transcript step's every field is in its transcript
    # row (its tokens and the CLI's raw line too), a warning's in the new warnings table, and with
    # gpu_samples and controls, which held theirs already, such a row is the event: from now on no
    # events row is written for these kinds (onegc_tui/store/rows.py OWN_TABLE; onegc_tui/store/stored.py
    # merges the tables by seq). Rows stored before keep their events row and line, which is then
    # the one read. A checkpoint's score row says which event scored it (the live feed's alerts
    # read new scores there).
    """
    ALTER TABLE transcript ADD COLUMN tokens_in INTEGER;
    ALTER TABLE transcript ADD COLUMN tokens_out INTEGER;
    ALTER TABLE transcript ADD COLUMN cache_read INTEGER;
    ALTER TABLE transcript ADD COLUMN cache_write INTEGER;
    ALTER TABLE transcript ADD COLUMN cost_usd REAL;
    ALTER TABLE transcript ADD COLUMN raw_line INTEGER;
    CREATE TABLE warnings (
        session_id TEXT NOT NULL, seq INTEGER NOT NULL, ts REAL NOT NULL, code TEXT, message TEXT,
        count INTEGER NOT NULL DEFAULT 1,
        PRIMARY KEY (session_id, seq)
    ) WITHOUT ROWID;
    INSERT INTO warnings SELECT session_id, seq, ts, json_extract(data, '$.code'), json_extract(data, '$.message'),
        COALESCE(json_extract(data, '$.count'), 1) FROM events WHERE type = 'warning';
    ALTER TABLE checkpoints ADD COLUMN scored_seq INTEGER;
    UPDATE checkpoints SET scored_seq = (
        SELECT e.seq FROM events e
        WHERE e.session_id = checkpoints.session_id AND e.type = 'checkpoint_scored'
          AND json_extract(e.data, '$.name') = checkpoints.name
          AND COALESCE(json_extract(e.data, '$.official'), 0) = checkpoints.official
        ORDER BY e.seq DESC LIMIT 1);
    CREATE INDEX checkpoints_by_score ON checkpoints(session_id, scored_seq) WHERE scored_seq IS NOT NULL;
    """,
    # 13: the history matrix kept as a summary (onegc_tui/results/history_cells.py): its cells, each
    # stored whole; which cell each session is in (over the whole home, and within its study); and
    # the sessions whose outcome changed since (marked here, in SQL, as the ingest writes them: only
    # their cells are computed again, by the next reader). Every stored session starts out marked.
    """
    CREATE TABLE history_cells (scope TEXT NOT NULL, key TEXT NOT NULL, task TEXT NOT NULL, cell TEXT NOT NULL,
                                PRIMARY KEY (scope, key)) WITHOUT ROWID;
    CREATE TABLE history_members (session_id TEXT PRIMARY KEY, home_key TEXT, study_key TEXT) WITHOUT ROWID;
    CREATE INDEX history_members_home ON history_members(home_key);
    CREATE INDEX history_members_study ON history_members(study_key);
    CREATE TABLE history_dirty (session_id TEXT PRIMARY KEY) WITHOUT ROWID;
    INSERT INTO history_dirty SELECT session_id FROM sessions;
    CREATE TRIGGER history_dirty_insert AFTER INSERT ON sessions BEGIN
        INSERT OR IGNORE INTO history_dirty VALUES (NEW.session_id);
    END;
    CREATE TRIGGER history_dirty_delete AFTER DELETE ON sessions BEGIN
        INSERT OR IGNORE INTO history_dirty VALUES (OLD.session_id);
    END;
    -- what a session's cell reads (onegc_tui/store/queries.py OUTCOME_COLUMNS): while it runs only
    -- who and what it is; once it has ended, its figures too (a heartbeat moves active_s, not a cell)
    CREATE TRIGGER history_dirty_update AFTER UPDATE ON sessions WHEN
        OLD.state IS NOT NEW.state OR OLD.task IS NOT NEW.task OR OLD.agent IS NOT NEW.agent
        OR OLD.model IS NOT NEW.model OR OLD.study IS NOT NEW.study OR OLD.repeat IS NOT NEW.repeat
        OR OLD.contract_hash IS NOT NEW.contract_hash OR OLD.contract IS NOT NEW.contract
        OR OLD.disqualified IS NOT NEW.disqualified OR OLD.started_ts IS NOT NEW.started_ts
        OR (NEW.state IN ('ended', 'failed') AND (
            OLD.score IS NOT NEW.score OR OLD.end_reason IS NOT NEW.end_reason OR OLD.budget_s IS NOT NEW.budget_s
            OR OLD.active_s IS NOT NEW.active_s OR OLD.scripts_launched IS NOT NEW.scripts_launched
            OR OLD.first_checkpoint_s IS NOT NEW.first_checkpoint_s OR OLD.flagged IS NOT NEW.flagged
            OR OLD.containment IS NOT NEW.containment OR OLD.val_gap_flag IS NOT NEW.val_gap_flag
            OR OLD.contended IS NOT NEW.contended OR OLD.truncated IS NOT NEW.truncated
            OR OLD.caps_reached IS NOT NEW.caps_reached))
    BEGIN
        INSERT OR IGNORE INTO history_dirty VALUES (NEW.session_id);
    END;
    """,
    # 14: how the record stands against its chain and seal (runner/scoring/seal.py: sealed, chained,
    # unchained, tampered, and where), what `onegc verify` found (reproduced, differs: its first
    # differences) and its re-score with a newer harness (`verify --rescore`: the official score and
    # which harness made it), from the session folder (onegc_tui/store/record_status.py)
    """
    ALTER TABLE sessions ADD COLUMN record TEXT;
    ALTER TABLE sessions ADD COLUMN record_detail TEXT;
    ALTER TABLE sessions ADD COLUMN verified TEXT;
    ALTER TABLE sessions ADD COLUMN verified_detail TEXT;
    ALTER TABLE sessions ADD COLUMN rescore REAL;
    ALTER TABLE sessions ADD COLUMN rescore_by TEXT;
    -- a cell reads them (onegc_tui/store/queries.py OUTCOME_COLUMNS): a change marks its session as 13's do
    DROP TRIGGER history_dirty_update;
    CREATE TRIGGER history_dirty_update AFTER UPDATE ON sessions WHEN
        OLD.state IS NOT NEW.state OR OLD.task IS NOT NEW.task OR OLD.agent IS NOT NEW.agent
        OR OLD.model IS NOT NEW.model OR OLD.study IS NOT NEW.study OR OLD.repeat IS NOT NEW.repeat
        OR OLD.contract_hash IS NOT NEW.contract_hash OR OLD.contract IS NOT NEW.contract
        OR OLD.disqualified IS NOT NEW.disqualified OR OLD.started_ts IS NOT NEW.started_ts
        OR OLD.record IS NOT NEW.record OR OLD.verified IS NOT NEW.verified
        OR OLD.rescore IS NOT NEW.rescore OR OLD.rescore_by IS NOT NEW.rescore_by
        OR (NEW.state IN ('ended', 'failed') AND (
            OLD.score IS NOT NEW.score OR OLD.end_reason IS NOT NEW.end_reason OR OLD.budget_s IS NOT NEW.budget_s
            OR OLD.active_s IS NOT NEW.active_s OR OLD.scripts_launched IS NOT NEW.scripts_launched
            OR OLD.first_checkpoint_s IS NOT NEW.first_checkpoint_s OR OLD.flagged IS NOT NEW.flagged
            OR OLD.containment IS NOT NEW.containment OR OLD.val_gap_flag IS NOT NEW.val_gap_flag
            OR OLD.contended IS NOT NEW.contended OR OLD.truncated IS NOT NEW.truncated
            OR OLD.caps_reached IS NOT NEW.caps_reached))
    BEGIN
        INSERT OR IGNORE INTO history_dirty VALUES (NEW.session_id);
    END;
    """,
    # 15: the checkpoints the official phase's bounds left without a re-evaluation (session_ended's
    # not_reevaluated, runner/scoring/official.py; NULL: not recorded)
    """
    ALTER TABLE sessions ADD COLUMN not_reevaluated INTEGER;
    """,
    # 16: the monitor's sessions table reads the rows it shows, by page (issue 49): an index for each
    # of its sorts (the budget left: of the sessions whose countdown does not run), on the very
    # terms of onegc_tui/store/session_pages.py ``SORTS`` (a page, a count and a session's place are
    # then ranges of one index: the state's also finds the live sessions)
    """
    CREATE INDEX sessions_by_state ON sessions(CASE state WHEN 'running' THEN 0 WHEN 'paused' THEN 1 WHEN 'queued' THEN 2
        WHEN 'failed' THEN 3 WHEN 'ended' THEN 3 ELSE 9 END, -COALESCE(started_ts, 0), session_id);
    CREATE INDEX sessions_by_best ON sessions(best_live IS NULL, -COALESCE(best_live, 0), session_id);
    CREATE INDEX sessions_by_official ON sessions(score IS NULL, -COALESCE(score, 0), session_id);
    CREATE INDEX sessions_by_task ON sessions(task IS NULL, COALESCE(task, ''), COALESCE(repeat, 0),
        -COALESCE(started_ts, 0), session_id);
    CREATE INDEX sessions_by_agent ON sessions(agent IS NULL, COALESCE(agent, ''), COALESCE(repeat, 0),
        -COALESCE(started_ts, 0), session_id);
    CREATE INDEX sessions_by_gpu ON sessions(gpu_util IS NULL, -COALESCE(gpu_util, 0), session_id);
    CREATE INDEX sessions_by_model ON sessions(model IS NULL, COALESCE(model, ''), COALESCE(repeat, 0),
        -COALESCE(started_ts, 0), session_id);
    CREATE INDEX sessions_by_started ON sessions(started_ts IS NULL, -COALESCE(started_ts, 0), session_id);
    CREATE INDEX sessions_by_rep ON sessions(COALESCE(NULLIF(repeat, 0), 1), -COALESCE(started_ts, 0), session_id);
    CREATE INDEX sessions_by_tokens ON sessions(-(COALESCE(tokens_in, 0) + COALESCE(tokens_out, 0)), session_id);
    CREATE INDEX sessions_by_cost ON sessions(cost_usd IS NULL, -COALESCE(cost_usd, 0), session_id);
    CREATE INDEX sessions_by_scripts ON sessions(scripts_launched IS NULL, -COALESCE(scripts_launched, 0), session_id);
    CREATE INDEX sessions_by_left ON sessions((CASE state WHEN 'running' THEN 0 WHEN 'paused' THEN 1 WHEN 'queued' THEN 2
        WHEN 'failed' THEN 3 WHEN 'ended' THEN 3 ELSE 9 END < 3 AND remaining_s IS NOT NULL),
        COALESCE(CASE WHEN state IN ('ended', 'failed') AND budget_s IS NOT NULL
        THEN MAX(0.0, budget_s - COALESCE(active_s, 0.0)) ELSE remaining_s END, 0.0), session_id);
    """,
    # 17: a sealed split's whole-split figure beside the official score, which is then its private part's
    # (runner/integrity/split_parts.py); NULL under the paper's split and in sessions stored before
    """
    ALTER TABLE sessions ADD COLUMN whole REAL;
    -- a cell reads it (onegc_tui/store/queries.py OUTCOME_COLUMNS): 14's trigger, watching it too (13's columns and 14's)
    DROP TRIGGER history_dirty_update;
    CREATE TRIGGER history_dirty_update AFTER UPDATE ON sessions WHEN
        OLD.state IS NOT NEW.state OR OLD.task IS NOT NEW.task OR OLD.agent IS NOT NEW.agent
        OR OLD.model IS NOT NEW.model OR OLD.study IS NOT NEW.study OR OLD.repeat IS NOT NEW.repeat
        OR OLD.contract_hash IS NOT NEW.contract_hash OR OLD.contract IS NOT NEW.contract
        OR OLD.disqualified IS NOT NEW.disqualified OR OLD.started_ts IS NOT NEW.started_ts
        OR OLD.record IS NOT NEW.record OR OLD.verified IS NOT NEW.verified
        OR OLD.rescore IS NOT NEW.rescore OR OLD.rescore_by IS NOT NEW.rescore_by OR OLD.whole IS NOT NEW.whole
        OR (NEW.state IN ('ended', 'failed') AND (
            OLD.score IS NOT NEW.score OR OLD.end_reason IS NOT NEW.end_reason OR OLD.budget_s IS NOT NEW.budget_s
            OR OLD.active_s IS NOT NEW.active_s OR OLD.scripts_launched IS NOT NEW.scripts_launched
            OR OLD.first_checkpoint_s IS NOT NEW.first_checkpoint_s OR OLD.flagged IS NOT NEW.flagged
            OR OLD.containment IS NOT NEW.containment OR OLD.val_gap_flag IS NOT NEW.val_gap_flag
            OR OLD.contended IS NOT NEW.contended OR OLD.truncated IS NOT NEW.truncated
            OR OLD.caps_reached IS NOT NEW.caps_reached))
    BEGIN
        INSERT OR IGNORE INTO history_dirty VALUES (NEW.session_id);
    END;
    """,
    # 18: a row names how its scored split was held both ways where the task leaves a choice (`[paper split]`
    # beside `[sealed split]`, runner/wire/defaults.py split_mark): every session's cell keys are made again
    """
    INSERT OR IGNORE INTO history_dirty SELECT session_id FROM sessions;
    """,
]

SCHEMA_VERSION = len(MIGRATIONS)


class SchemaTooNew(OnegcError, RuntimeError):
    """A store written by a newer onegc: this one cannot read it."""


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the database to :data:`SCHEMA_VERSION`; returns the version found before."""
    found = conn.execute("PRAGMA user_version").fetchone()[0]
    if found > SCHEMA_VERSION:
        raise SchemaTooNew(
            f"onegc.db has schema {found}, newer than this onegc ({SCHEMA_VERSION}): upgrade onegc, "
            "or move onegc.db aside and run 'onegc reindex'"
        )
    for version in range(found, SCHEMA_VERSION):
        conn.execute("BEGIN IMMEDIATE")  # one process migrates at a time: two monitors started on a new home
        try:
            if conn.execute("PRAGMA user_version").fetchone()[0] > version:  # the other one did this step
                conn.rollback()
                continue
            for statement in statements(MIGRATIONS[version]):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {version + 1}")
            conn.commit()
        except BaseException:
            conn.rollback()
            raise
    return found


def statements(script: str) -> list[str]:
    """A migration's SQL one statement at a time (a trigger's body whole), for a transaction that
    checks the version first (``executescript`` would commit the check's transaction first)."""
    out, start = [], 0
    for i, ch in enumerate(script):
        if ch == ";" and sqlite3.complete_statement(script[start:i + 1]):
            if any(line.strip() and not line.strip().startswith("--") for line in script[start:i].splitlines()):
                out.append(script[start:i + 1])
            start = i + 1
    return out
