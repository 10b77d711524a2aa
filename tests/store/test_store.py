"""The SQLite store and the ingester: exactly once, whole lines, corrupt lines reported, rebuildable."""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from onegc_tui.cli.main import main
from onegc_tui.store import SCHEMA_VERSION, Store
from onegc_tui.store.ingest import Ingester
from onegc_tui.store.live import LiveIngest
from onegc_tui.store.schema import MIGRATIONS, SchemaTooNew
from runner.launch.spawn import create_session
from runner.wire.jsonl import EventWriter
from runner.wire.session_config import SessionConfig
from tests.helpers import wait_for


def fake_session(home, sid="s1", n_transcript=10) -> EventWriter:
    paths = create_session(SessionConfig(session_id=sid, task="t0", agent="scripted", budget_s=60), home)
    w = EventWriter(paths.events, sid)
    w.emit("session_started", task="t0_demo", agent="scripted", budget_s=60, grace_s=30,
           contract={"task_hash": "abc", "budget_s": 60, "gpu": [{"name": "H200", "driver": "1"}]})
    for i in range(n_transcript):
        w.emit("transcript", role="assistant", kind="text", text=f"line {i} about learning rates")
    w.emit("gpu", index=0, util_pct=87, mem_used_mb=1000, mem_total_mb=80000)
    w.emit("checkpoint_found", name="a-1", path="p", snapshot="s", script="run_1.py", self_reported=0.5, budget_elapsed_s=3)
    w.emit("checkpoint_scored", name="a-1", value=0.61, metric="val_acc", split="val", budget_elapsed_s=3)
    w.emit("process", action="started", pid=1, script="run_1.py", cmdline="python run_1.py")
    return w


def test_ingest_is_exactly_once_and_keeps_the_summary_current(home):
    w = fake_session(home)
    store = Store.open(home)
    ing = Ingester(home, store)
    assert ing.ingest_all() == 15
    assert ing.ingest_all() == 0
    # a second ingester from offset zero (e.g. after a crash before the offset commit): still no duplicates
    store.conn.execute("DELETE FROM ingest_offsets")
    store.conn.commit()
    assert Ingester(home, store).ingest_all() == 0
    # and no line of the runner's reads as a conflict: a transcript row keeps no chain link, the file's line does
    assert store.conn.execute("SELECT COUNT(*) FROM ingest_errors").fetchone()[0] == 0
    w.emit("session_ended", reason="completed", active_s=42, wall_s=43, paused_s=1, score=0.7, best_checkpoint="a-1")
    w.close()
    assert ing.ingest_all() == 1
    row = store.session("s1")
    assert (row["state"], row["score"], row["best_live"], row["gpu_util"], row["scripts_launched"]) == ("ended", 0.7, 0.61, 87, 1)
    assert row["contract_hash"] and row["gpu_name"] == "H200"
    assert store.count_events("s1") == len((home / "runs/s1/events.jsonl").read_text().splitlines()) == 16
    assert [r["text"] for r in store.transcript("s1", search="learning")][:1] == ["line 0 about learning rates"]
    assert store.checkpoints("s1")[0]["value"] == 0.61


def test_partial_and_corrupt_lines(home):
    w = fake_session(home, n_transcript=1)
    w.close()
    events = home / "runs/s1/events.jsonl"
    with open(events, "ab") as f:
        f.write(b"{garbage\n")
        f.write(b'{"v":1,"session_id":"s1","seq":7,"ts":1.0,"type":"warning","code":"x","mes')
    store = Store.open(home)
    errors = []
    ing = Ingester(home, store, on_error=errors.append)
    assert ing.ingest_all() == 6
    assert len(errors) == 1 and "events.jsonl:7" in errors[0]
    assert store.ingest_errors("s1")[0]["line_no"] == 7
    with open(events, "ab") as f:
        f.write(b'sage":"finished later"}\n')
    assert ing.ingest_all() == 1
    assert store.session("s1")["warnings"] == 2  # the corrupt line and the warning event


def test_reindex_rebuilds_the_same_rows(home):
    fake_session(home).close()
    store = Store.open(home)
    Ingester(home, store).ingest_all()
    before = store.sessions()
    store.close()
    result = CliRunner().invoke(main, ["reindex"])
    assert result.exit_code == 0, result.output
    store = Store.open(home)
    after = store.sessions()
    assert [{k: v for k, v in r.items()} for r in after] == before
    store.close()


def test_schema_version_and_a_newer_database_is_refused(tmp_path):
    store = Store(tmp_path / "x.db")
    assert store.schema_version == SCHEMA_VERSION
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    store.close()
    conn = sqlite3.connect(tmp_path / "x.db")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(SchemaTooNew, match="reindex"):
        Store(tmp_path / "x.db")


def test_a_first_schema_database_is_migrated_and_its_rows_get_revisions(tmp_path):

    conn = sqlite3.connect(tmp_path / "old.db")
    conn.executescript(MIGRATIONS[0] + "; PRAGMA user_version = 1;")
    conn.executemany("INSERT INTO sessions (session_id, folder, state, remaining_s, last_ts) VALUES (?, 'f', ?, ?, ?)",
                     [("old-a", "ended", None, 5.0), ("old-b", "running", 30.0, 7.0)])
    conn.commit()
    conn.close()
    store = Store(tmp_path / "old.db")
    assert store.schema_version == SCHEMA_VERSION
    rows = {r["session_id"]: r for r in store.sessions_since(0)}
    assert rows["old-a"]["rev"] > 0 and rows["old-b"]["remaining_ts"] == 7.0
    since = max(r["rev"] for r in rows.values())
    store.mark_failed("old-b", "runner gone")
    assert [(r["session_id"], r["state"]) for r in store.sessions_since(since)] == [("old-b", "failed")]
    store.register_session("new", "f2", {"task": "t0"})
    assert [r["session_id"] for r in store.sessions_since(since)] == ["old-b", "new"]


def _schema(path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(path)
    try:
        return sorted(conn.execute("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL").fetchall())
    finally:
        conn.close()


def test_a_schema_5_store_of_main_migrates_to_6_keeping_its_rows_and_its_place_in_each_file(home, tmp_path):
    """Migration 5 is main's (sessions.disqualified); 6 records which file an offset belongs to.
    A store main left at 5, mid-session, goes on from where it was: nothing read twice, nothing
    lost, the disqualification kept."""

    assert SCHEMA_VERSION >= 6 and "disqualified" in MIGRATIONS[4] and "file_id" in MIGRATIONS[5]
    w = fake_session(home)
    store = Store.open(home)
    assert Ingester(home, store).ingest_all() == 15
    store.set_disqualified("s1", "copied an earlier repeat")
    store.close()
    db = home / "onegc.db"
    conn = sqlite3.connect(db)  # what main's onegc leaves: schema 5, offsets without their file
    conn.execute("ALTER TABLE ingest_offsets DROP COLUMN file_id")
    undo_migrations_12_and_13(conn, home / "runs/s1/events.jsonl")
    for column in ("val", "val_gap_flag", "contended", "conditions",  # migration 7's
                   "truncated", "truncated_bytes",  # 8's
                   "caps_reached",  # 9's
                   "not_checked"):  # and 10's
        conn.execute(f"ALTER TABLE sessions DROP COLUMN {column}")
    conn.execute("ALTER TABLE checkpoints DROP COLUMN verdicts")  # 10's
    for column in GPM_COLUMNS:  # 11's
        conn.execute(f"ALTER TABLE gpu_samples DROP COLUMN {column}")
    conn.execute("PRAGMA user_version = 5")
    conn.close()
    reference = sqlite3.connect(tmp_path / "v5.db")
    for version, script in enumerate(MIGRATIONS[:5], start=1):
        reference.executescript("BEGIN;" + script + f"; PRAGMA user_version = {version}; COMMIT;")
    reference.close()
    assert _schema(db) == _schema(tmp_path / "v5.db")  # exactly main's schema 5

    w.emit("session_ended", reason="completed", active_s=42, wall_s=43, paused_s=1, score=0.7, best_checkpoint="a-1")
    w.close()
    store = Store.open(home)
    assert store.schema_version == SCHEMA_VERSION  # 6, and the later ones (7: val, val_gap_flag, contended)
    assert store.session("s1")["disqualified"] == "copied an earlier repeat"
    assert store.ingested_file(str(home / "runs/s1/events.jsonl")) is None  # not known before 6
    assert Ingester(home, store).ingest_all() == 1  # the new line only: its offset held
    assert store.count_events("s1") == 16 and store.session("s1")["state"] == "ended"
    assert store.ingested_file(str(home / "runs/s1/events.jsonl"))  # recorded from now on
    store.close()


def test_live_ingest_with_a_real_watchdog_observer(home):
    seen: list[int] = []
    got = threading.Event()

    def on_events(sid, events):
        seen.extend(e["seq"] for e in events)
        if len(seen) >= 16:
            got.set()

    live = LiveIngest(home, on_events=on_events, rescan_s=30)  # only watchdog can deliver within the wait
    live.start()
    try:
        assert live.ready.wait(10)
        w = fake_session(home)
        time.sleep(0.3)
        w.emit("heartbeat", remaining_s=10, active_s=50)
        w.close()
        assert got.wait(10), f"only {len(seen)} events arrived"
        assert seen == list(range(1, 17))
    finally:
        live.stop()


def test_at_rest_a_line_or_two_wait_for_more_and_a_stream_is_read_at_once():
    from onegc_tui.store.live import BUSY_BYTES, BUSY_LINES, HOLD_S, hold_back

    assert hold_back(150, 0, 0.0) and hold_back(BUSY_BYTES - 1, BUSY_LINES, HOLD_S / 2)  # a GPU sample waits
    assert not hold_back(150, 0, HOLD_S)  # ... HOLD_S at most
    assert not hold_back(BUSY_BYTES, 0, 0.0)  # the first look at a stream reads it
    assert not hold_back(150, BUSY_LINES + 1, 0.0)  # while streaming, nothing waits


def test_live_ingest_at_rest_still_delivers_a_lone_line_and_a_burst_with_it(home):
    """A lone heartbeat is held back for company (``hold_back``), never forgotten; what comes after
    it reaches the monitor whole and in order."""
    from onegc_tui.store.live import HOLD_S

    batches: list[list[int]] = []
    got = threading.Event()
    w = fake_session(home)
    live = LiveIngest(home, on_events=lambda sid, events: (batches.append([e["seq"] for e in events]), got.set()),
                      rescan_s=3600)  # only the looks can deliver
    live.start()
    try:
        assert live.ready.wait(10) and got.wait(10)
        batches.clear(), got.clear()
        w.emit("heartbeat", remaining_s=10, active_s=50)
        assert got.wait(10 + HOLD_S), "the lone heartbeat never arrived"
        assert batches == [[16]]
        batches.clear(), got.clear()
        w.emit("heartbeat", remaining_s=9, active_s=51)
        for i in range(100):  # ~10 KiB, well over BUSY_BYTES
            w.emit("transcript", role="assistant", kind="text", text=f"line {i} " + "x" * 80)
        w.close()
        deadline = time.monotonic() + 10
        while sum(map(len, batches)) < 101 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert [s for b in batches for s in b] == list(range(17, 118))
    finally:
        live.stop()


def test_the_countdown_runs_from_the_last_heartbeat_not_from_the_last_event(home):
    """A transcript line after a heartbeat must not make the sessions table show more time left."""
    from onegc_tui.views.sessions_view import session_cells

    w = fake_session(home, n_transcript=0)  # its events carry today's time: later than the heartbeat's
    t = [1_000.0]
    w.clock = lambda: t[0]
    w.emit("heartbeat", remaining_s=50.0, active_s=10.0, procs=1)
    t[0] = 1_008.0
    w.emit("transcript", role="assistant", kind="text", text="still thinking")
    store = Store.open(home)
    Ingester(home, store).ingest_all()
    row = store.session("s1")
    assert (row["remaining_s"], row["remaining_ts"]) == (50.0, 1_000.0) and row["last_ts"] > 1_000.0
    assert session_cells(row, now=1_010.0)["left"].endswith("00:40")


def test_usage_adds_up_with_cache_and_corrections_and_a_result_sets_the_totals(home):
    w = fake_session(home, "u1", n_transcript=0)
    store = Store.open(home)
    ing = Ingester(home, store)
    w.emit("transcript", role="system", kind="usage", tokens_in=1540, tokens_out=1, cache_read=500, cache_write=40,
           cost_usd=0.0033)  # fmt: skip
    ing.ingest_all()  # a live figure, between two batches
    row = store.session("u1")
    assert (row["tokens_in"], row["tokens_out"], row["cache_read"], row["cache_write"]) == (1540, 1, 500, 40)
    w.emit("transcript", role="system", kind="usage", tokens_in=0, tokens_out=29, cost_usd=0.0004)
    w.emit("transcript", role="system", kind="usage", tokens_in=-40, tokens_out=0, cache_write=-40, cost_usd=-0.0001)
    ing.ingest_all()
    row = store.session("u1")
    assert (row["tokens_in"], row["tokens_out"], row["cache_read"], row["cache_write"]) == (1500, 30, 500, 0)
    assert row["cost_usd"] == pytest.approx(0.0036)
    w.emit("transcript", role="system", kind="result", text="done", tokens_in=1500, tokens_out=30, cache_read=500,
           cost_usd=0.0036)  # fmt: skip
    w.emit("transcript", role="system", kind="usage", tokens_in=100, tokens_out=3, cost_usd=0.0001)  # a later turn
    ing.ingest_all()
    row = store.session("u1")
    assert (row["tokens_in"], row["tokens_out"], row["cache_read"]) == (1600, 33, 500)
    store.close()


def test_a_tools_heartbeats_are_one_row_updated_in_place(home):
    w = fake_session(home, "p1", n_transcript=0)
    store = Store.open(home)
    ing = Ingester(home, store)
    w.emit("transcript", role="assistant", kind="tool_call", tool="Bash", call_id="t1", text="$ python run_1.py")
    for elapsed in (30, 60):
        w.emit("transcript", role="tool", kind="progress", tool="Bash", call_id="t1", text=f"running for {elapsed} s")
    ing.ingest_all()
    w.emit("transcript", role="tool", kind="progress", tool="Bash", call_id="t1", text="running for 90 s")
    w.emit("transcript", role="tool", kind="progress", tool="Bash", call_id="t2", text="running for 30 s")
    ing.ingest_all()
    rows = [(r["kind"], r["call_id"], r["text"]) for r in store.transcript("p1")]
    assert rows == [("tool_call", "t1", "$ python run_1.py"), ("progress", "t1", "running for 90 s"),
                    ("progress", "t2", "running for 30 s")]  # fmt: skip
    assert [r["text"] for r in store.transcript("p1", search="90")] == ["running for 90 s"]
    assert store.transcript("p1", search="60") == []  # the search index follows the update
    store.close()


def test_search_finds_words_of_several_tokens(home):
    """'run_1.py' is three tokens to FTS5 and the index keeps no positions: searching it crashed
    the monitor ("phrase queries are not supported"); now the tokens find rows and the word is checked."""
    from onegc_tui.views.monitor_data import pane_entries

    w = fake_session(home, n_transcript=0)
    w.emit("transcript", role="assistant", kind="tool_call", tool="bash", text="python run_1.py")
    w.emit("transcript", role="tool", kind="tool_result", text="epoch 1 val_acc 0.52")
    w.emit("transcript", role="assistant", kind="text", text="run it, then 1 more .py file")  # tokens, not the word
    store = Store.open(home)
    Ingester(home, store).ingest_all()
    assert [line.split(" ", 2)[2] for _, line in pane_entries(store, "s1", "all", "run_1.py")] == ["[bash] python run_1.py"]
    assert len(pane_entries(store, "s1", "all", "val_acc")) == 1
    assert len(pane_entries(store, "s1", "all", "val_ac")) == 1  # a word typed in part
    assert [r["text"] for r in store.transcript("s1", search="run_1.py")] == ["python run_1.py"]
    assert store.transcript("s1", search="::") == []  # no token at all: nothing matches, no error


def test_search_takes_any_text_and_finds_it_behind_a_thousand_rows_that_share_its_tokens(home):
    """Issue 13: search must take what people type (file names, metric names, numbers, stray
    quotes). A word's tokens ("12" and "30" for "12:30") are in many rows; the word itself was
    checked only after the row limit, so an older real match fell behind the limit and was lost."""
    from onegc_tui.views.monitor_data import pane_entries

    w = fake_session(home, n_transcript=0)
    typed = {"run_1.py": "python run_1.py", "val_acc": "epoch 1 val_acc 0.52", "a-b": "compare a-b runs",
             "x/y": "wrote x/y.pt", "12:30": "started at 12:30", '"': 'said "go"', "*": "glob *.pt"}
    for text in typed.values():
        w.emit("transcript", role="tool", kind="tool_result", text=text)
    for i in range(2100):  # later rows with the same tokens, none with the words
        w.emit("transcript", role="tool", kind="tool_result", text=f"step 12 of 30, a b x y run 1 py val acc {i}")
    store = Store.open(home)
    Ingester(home, store).ingest_all()
    for word, text in typed.items():
        assert [r["text"] for r in store.transcript("s1", search=word)] == [text], word
        lines = [line for _, line in pane_entries(store, "s1", "all", word)]
        assert len(lines) == 1 and lines[0].endswith(" " + text), (word, lines)
    assert store.transcript("s1", search="12:30 started") and not store.transcript("s1", search="12:30 nowhere")
    store.close()


RECORD_COLUMNS = ("record", "record_detail", "verified", "verified_detail", "rescore", "rescore_by")  # migration 14's
# the session pages' indexes (onegc_tui/store/session_pages.py), from the migration that builds them
PAGE_INDEXES = re.findall(r"CREATE INDEX (\w+)", next(m for m in MIGRATIONS if "sessions_by_state" in m))


def undo_migrations_12_and_13(conn: sqlite3.Connection, events: Path) -> None:
    """What a store of schema 11 holds: an events row with its line for every event (since migration
    12 a kind with a table of its own is that row only), and none of 12's to 17's tables, columns,
    triggers and indexes (the session pages')."""
    for index in PAGE_INDEXES:
        conn.execute(f"DROP INDEX {index}")
    for name in ("insert", "delete", "update"):
        conn.execute(f"DROP TRIGGER history_dirty_{name}")
    # 14's and 17's once the trigger that reads them is gone; 15's
    for column in (*RECORD_COLUMNS, "whole", "not_reevaluated"):
        conn.execute(f"ALTER TABLE sessions DROP COLUMN {column}")
    for table in ("history_cells", "history_members", "history_dirty"):
        conn.execute(f"DROP TABLE {table}")
    for line in events.read_text().splitlines():
        e = json.loads(line)
        conn.execute("INSERT OR IGNORE INTO events VALUES (?,?,?,?,?)", (e["session_id"], e["seq"], e["ts"], e["type"], line))
    conn.execute("DROP TABLE warnings")
    conn.execute("DROP INDEX checkpoints_by_score")
    for table, columns in (("transcript", ("tokens_in", "tokens_out", "cache_read", "cache_write", "cost_usd", "raw_line")),
                           ("checkpoints", ("scored_seq",))):
        for column in columns:
            conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    conn.commit()


def test_migration_12_keeps_every_event_of_a_schema_11_store_and_its_new_rows_are_whole(home):
    """A store of schema 11 keeps every line; after migration 12 its warnings are in their table
    and its scores say which event scored them, and every event reads back as its line says."""
    from onegc_tui.store import stored
    from onegc_tui.store.records import parse_record

    w = fake_session(home)
    w.emit("warning", code="network_blocked", message="example.com:443")
    store = Store.open(home)
    Ingester(home, store).ingest_all()
    store.close()
    conn = sqlite3.connect(home / "onegc.db")
    undo_migrations_12_and_13(conn, w.path)
    conn.execute("PRAGMA user_version = 11")
    conn.close()
    w.emit("transcript", role="assistant", kind="text", text="after the upgrade")
    w.close()
    store = Store.open(home)
    assert store.conn.execute("SELECT code FROM warnings").fetchall() == [("network_blocked",)]
    assert store.conn.execute("SELECT name, scored_seq FROM checkpoints").fetchall() == [("a-1", 14)]
    Ingester(home, store).ingest_all()
    lines = w.path.read_text().splitlines()
    unlinked = [{**parse_record(json.dumps(r)), "prev": None}  # the chain's link is the file line's (seal.py)
                for r in stored.records(store.conn, "s1", stored.envelopes(store.conn, "s1"))]
    assert unlinked == [{**parse_record(line), "prev": None} for line in lines]
    kept = store.conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]
    assert kept == len(lines) - 1  # the old rows keep their line; the new transcript step is its transcript row alone
    store.close()


def test_migration_9_counts_the_caps_a_stored_session_already_reached(home):
    """A store at schema 8 learns from its stored warnings how often a cap stopped each agent; new
    warnings then add to the count as they are ingested (runner.wire.defaults.CAP_WARNINGS)."""
    w = fake_session(home)
    w.emit("warning", code="oom", message="the kernel killed 1 process (out of memory)")
    w.emit("warning", code="process_cap", message="refused at the cap of 64 processes", count=3)
    w.emit("warning", code="no_gpu", message="no GPU visible")  # not a cap
    store = Store.open(home)
    Ingester(home, store).ingest_all()
    assert store.session("s1")["caps_reached"] == 4
    store.close()
    conn = sqlite3.connect(home / "onegc.db")
    undo_migrations_12_and_13(conn, w.path)
    conn.execute("ALTER TABLE sessions DROP COLUMN caps_reached")
    conn.execute("ALTER TABLE sessions DROP COLUMN not_checked")  # 10's
    conn.execute("ALTER TABLE checkpoints DROP COLUMN verdicts")
    for column in GPM_COLUMNS:  # 11's
        conn.execute(f"ALTER TABLE gpu_samples DROP COLUMN {column}")
    conn.execute("PRAGMA user_version = 8")
    conn.close()
    store = Store.open(home)
    assert store.session("s1")["caps_reached"] == 4  # counted from the events already stored
    w.emit("warning", code="disk_full", message="the disk is full")
    Ingester(home, store).ingest_all()
    assert store.session("s1")["caps_reached"] == 5
    store.close()


GPM_COLUMNS = ("sm_pct", "tensor_pct", "dram_pct")  # migration 11: what the GPU's units did (runner/session/gpm.py)


def test_migration_11_keeps_the_gpu_samples_and_stores_gpm_figures_from_then_on(home):
    """Issue 50: a GPU sample carries GPM's SM, tensor-core and DRAM activity where the GPU has it; a
    store at schema 10 keeps its samples (their GPM figures unknown) and stores them from then on."""
    from onegc_tui.store import queries

    w = fake_session(home)
    w.emit("gpu", index=0, util_pct=97, mem_used_mb=1, mem_total_mb=2)
    store = Store.open(home)
    Ingester(home, store).ingest_all()
    store.close()
    conn = sqlite3.connect(home / "onegc.db")
    undo_migrations_12_and_13(conn, w.path)
    for column in GPM_COLUMNS:
        conn.execute(f"ALTER TABLE gpu_samples DROP COLUMN {column}")
    conn.execute("PRAGMA user_version = 10")
    conn.close()
    store = Store.open(home)
    assert store.schema_version == SCHEMA_VERSION
    w.emit("gpu", index=0, util_pct=98, mem_used_mb=1, mem_total_mb=2, sm_active_pct=61.5, tensor_active_pct=33.0,
           dram_bw_pct=20.5)
    w.close()
    Ingester(home, store).ingest_all()
    samples = store.gpu_samples("s1")
    assert [(r["util_pct"], r["sm_pct"], r["tensor_pct"], r["dram_pct"]) for r in samples] == [
        (87, None, None, None), (97, None, None, None), (98, 61.5, 33.0, 20.5)]
    assert [row[2:] for row in queries.gpm_series(store, "s1")] == [(61.5, 33.0, 20.5)]
    store.close()


@pytest.mark.slow
def test_three_live_ingests_on_one_home_never_fail_on_each_others_commits(home):
    """Two monitors and a web monitor on one live home (seen in tmux: "ingesting … failed:
    OperationalError: database is locked"). A look that read in a deferred transaction could not
    write once another ingester had committed since (SQLite's snapshot rule, no busy wait): the
    look takes the write lock first, so each waits its turn and none fails."""
    Store.open(home).close()  # the store made before they start (its making by several at once: below)
    errors: list[str] = []
    seen: list[set[tuple[str, int]]] = [set() for _ in range(3)]
    lives = [LiveIngest(home, on_events=lambda sid, evs, s=s: s.update((sid, e["seq"]) for e in evs),
                        on_error=errors.append, rescan_s=3600) for s in seen]
    for live in lives:
        live.start()
    try:
        assert all(live.ready.wait(30) for live in lives), errors
        writers = [fake_session(home, f"w{k}", n_transcript=0) for k in range(3)]
        for i in range(300):  # three sessions streaming, as fast as a busy agent prints
            for w in writers:
                w.emit("transcript", role="assistant", kind="text", text=f"line {i}")
            if i % 20 == 0:
                time.sleep(0.02)
        for w in writers:
            w.close()
        lines = {(f"w{k}", n) for k in range(3) for n in range(1, 306)}
        wait_for(lambda: errors or set().union(*seen) == lines, 120, "every line stored, or an error")
        assert errors == []
        # each line stored by exactly one of them (the others find it stored: no duplicate, no conflict)
        assert set().union(*seen) == lines and sum(map(len, seen)) == len(lines), [len(s) for s in seen]
        store = Store.open(home)
        try:
            assert [store.count_events(f"w{k}") for k in range(3)] == [305] * 3
            assert store.conn.execute("SELECT COUNT(*) FROM ingest_errors").fetchone()[0] == 0
        finally:
            store.close()
    finally:
        for live in lives:
            live.stop()


def test_several_monitors_making_a_new_store_at_once_all_open_it(tmp_path):
    """Two monitors started together on a new home: each read version 0 and ran the first
    migration, and the second said "table sessions already exists: move it aside" (seen with three
    live ingests starting at once). Each step is now taken under the write lock, after reading the
    version again. Eight connections at once, as eight processes' would be."""
    start = threading.Barrier(8)
    results: list[int | str] = []

    def open_store() -> None:
        start.wait()
        try:
            store = Store.open(tmp_path)
        except Exception as exc:  # noqa: BLE001 (the failure is the answer)
            results.append(f"{type(exc).__name__}: {exc}")
            return
        try:
            results.append(store.conn.execute("PRAGMA user_version").fetchone()[0])
        finally:
            store.close()

    threads = [threading.Thread(target=open_store) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [SCHEMA_VERSION] * 8


def test_the_migrations_one_statement_at_a_time_make_the_schema_a_script_makes():
    from onegc_tui.store.schema import migrate

    script = sqlite3.connect(":memory:")
    for version, sql in enumerate(MIGRATIONS):
        with script:
            script.executescript("BEGIN;" + sql + f"; PRAGMA user_version = {version + 1};")
    stepped = sqlite3.connect(":memory:")
    migrate(stepped)
    schema = "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name"
    assert stepped.execute(schema).fetchall() == script.execute(schema).fetchall()
    assert stepped.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
