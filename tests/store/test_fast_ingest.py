"""The fast ingest path (a batch of lines validated to dicts by one map) stores exactly what the
path line by line stores: the same rows in every table, the same search hits, the same summary,
the same lines reported; and every event reads back from the store as its line says, though the
kinds with a table of their own keep no copy of the line (onegc_tui/store/rows.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from onegc_tui.store import Store, stored
from onegc_tui.store.ingest import MAX_BATCH_BYTES, Ingester
from onegc_tui.store.parallel import from_scratch_in_two
from onegc_tui.store.records import parse_record
from runner.launch.spawn import create_session
from runner.wire.events import parse_event
from runner.wire.jsonl import EventWriter, JsonlTail
from runner.wire.session_config import SessionConfig
from tests.homes import build_crowd, build_home

TABLES = {  # what each table is ordered by
    "sessions": "session_id", "events": "session_id, seq", "transcript": "session_id, seq", "gpu_samples": "session_id, seq",
    "checkpoints": "session_id, name, official", "controls": "session_id, seq", "studies": "name",
    "ingest_offsets": "path", "ingest_errors": "path, line_no",
}
VOLATILE = {"folder", "path", "created", "ts"}  # absolute paths and wall clocks: not what the ingest decides
SEARCHES = ["learning", "loss", "python run_1", "running for 90", "val_acc", "nothing-matches", "step 3"]


class Clock:
    def __init__(self):
        self.t = 1_790_000_000.0

    def __call__(self):
        self.t += 0.5
        return self.t


def every_kind(home: Path, sid: str = "all-kinds") -> Path:
    """One session with every event type and transcript kind, and every line the ingest must refuse."""
    paths = create_session(SessionConfig(session_id=sid, task="t0", agent="scripted", budget_s=600, study="fast"), home)
    w = EventWriter(paths.events, sid, clock=Clock())
    w.emit("session_started", task="t0_demo", agent="scripted", study="fast", budget_s=600, grace_s=30,
           contract={"task_hash": "abc", "budget_s": 600, "gpu": [{"name": "H200", "driver": "1"}]})
    w.emit("agent_started", pid=7, argv=["scripted"], containment="bwrap", version="1.0")
    w.emit("budget", state="running", remaining_s=600, deadline=1_790_000_600.0)
    for i in range(40):
        w.emit("transcript", role="assistant", kind="text", text=f"step {i}: about learning rates, loss {1 / (i + 1):.4f}")
        if i % 10 == 0:
            w.emit("gpu", index=0, util_pct=float(i), mem_used_mb=1000 + i, mem_total_mb=80000, power_w=300, temp_c=60)
    w.emit("transcript", role="assistant", kind="tool_call", tool="Bash", call_id="t1", text="$ python run_1.py")
    for elapsed in (30, 60, 90):
        w.emit("transcript", role="tool", kind="progress", tool="Bash", call_id="t1", text=f"running for {elapsed} s")
    w.emit("transcript", role="tool", kind="progress", text="a heartbeat without a call id")
    w.emit("transcript", role="tool", kind="tool_result", tool="Bash", call_id="t1", exit_code=0, text="val_acc 0.8")
    w.emit("transcript", role="system", kind="usage", tokens_in=1540, tokens_out=1, cache_read=500, cache_write=40,
           cost_usd=0.0033)
    w.emit("transcript", role="system", kind="usage", tokens_in=-40, tokens_out=29, cost_usd=-0.0001)
    w.emit("transcript", role="system", kind="thinking", text="hmm ünïcödé ✓")
    w.emit("process", action="started", pid=9, script="run_1.py", cmdline="python run_1.py")
    w.emit("process", action="started", pid=10, script="ls", cmdline="ls", training=False)
    w.emit("heartbeat", remaining_s=500, active_s=100, procs=2)
    w.emit("checkpoint_found", name="a-1", path="p", snapshot="s", script="run_1.py", self_reported=0.5, budget_elapsed_s=3)
    w.emit("checkpoint_scored", name="a-1", value=0.61, metric="val_acc", split="val", budget_elapsed_s=3, eval_s=0.2)
    w.emit("checkpoint_scored", name="b-1", error="bad keys", metric="val_acc", split="val", budget_elapsed_s=4,
           flags=["S2"])
    w.emit("control", action="pause", request_id="r1", accepted=True)
    w.emit("budget", state="paused", remaining_s=480, deadline=1_790_000_900.0)
    w.emit("control", action="resume", request_id="r2", accepted=False, detail="not paused")
    w.emit("warning", code="no_gpu", message="no GPU visible")
    w.emit("transcript", role="system", kind="result", text="done", tokens_in=1500, tokens_out=30, cost_usd=0.0036)
    w.emit("transcript", role="system", kind="usage", tokens_in=100, tokens_out=3, cost_usd=0.0001)
    w.emit("checkpoint_scored", name="a-1", value=0.6, metric="val_acc", split="test", budget_elapsed_s=3,
           official=True, val=0.61)
    w.emit("session_ended", reason="completed", detail="done", active_s=200, wall_s=210, paused_s=10, score=0.6,
           best_checkpoint="a-1")
    w.close()
    lines = paths.events.read_bytes().splitlines(keepends=True)
    with open(paths.events, "wb") as f:  # the lines a runner never writes, between its own
        f.writelines(lines[:5])
        f.write(b"{garbage\n")
        f.write(b"\n")
        f.write(lines[2])  # the same line twice: no conflict
        f.write(lines[3].replace(b"learning", b"forged!!"))  # another line with a taken seq: rejected
        f.write(json.dumps({"v": 1, "session_id": "intruder", "seq": 999, "ts": 1.0, "type": "warning", "code": "x",
                            "message": "y"}).encode() + b"\n")  # another session's event
        f.write(b'{"v":1,"session_id":"%s","seq":998,"ts":1.0,"type":"warning","code":"x","message":"y","extra":1}\n'
                % sid.encode())  # a field no event has
        f.write(b'{"v":1,"session_id":"%s","seq":997,"ts":"soon","type":"warning","code":"x","message":"y"}\n'
                % sid.encode())  # a field of the wrong type
        f.write(b"\xff\xfe not utf-8\n")
        f.writelines(lines[5:])
    return paths.events


def dump(store: Store) -> dict:
    out = {}
    for table, order in TABLES.items():
        rows = store.conn.execute(f"SELECT * FROM {table} ORDER BY {order}")
        cols = [c[0] for c in rows.description]
        out[table] = [{c: v for c, v in zip(cols, row, strict=True) if c not in VOLATILE} for row in rows]
    for row in out["sessions"]:
        row.pop("rev")  # a revision counter: how many writes, not what they wrote
    out["fts"] = {q: [r["text"] for s in out["sessions"] for r in store.transcript(s["session_id"], search=q)]
                  for q in SEARCHES}
    out["fts_rows"] = store.conn.execute("SELECT COUNT(*) FROM transcript_fts").fetchone()[0]
    return out


def ingest(home: Path, db: str, watched: bool) -> tuple[dict, list, list]:
    """Every session folder of ``home`` into a new store ``db``: its rows, the lines reported, and
    (events stored, the events ``on_events`` saw, where ``watched``)."""
    store = Store(home / db)
    seen, errors = [], []
    ing = Ingester(home, store, on_events=(lambda sid, evs: seen.extend((sid, e["seq"]) for e in evs)) if watched else None,
                   on_error=errors.append)
    n = ing.ingest_all()
    assert ing.ingest_all() == 0
    out = dump(store)
    store.close()
    return out, errors, [n, seen]


@pytest.fixture
def homes(home):
    every_kind(home)
    every_kind(home, "all-kinds-2")
    build_home(home, full=True)
    build_crowd(home, n_ended=6)
    (home / "onegc.db").unlink()
    return home


def test_the_fast_path_stores_what_the_path_line_by_line_stores(homes, monkeypatch):
    fast, fast_errors, (n_fast, seen) = ingest(homes, "fast.db", watched=True)
    monkeypatch.setattr(Ingester, "_fast_batch", staticmethod(lambda sid, first, lines: None))
    slow, slow_errors, (n_slow, _) = ingest(homes, "slow.db", watched=False)
    assert n_fast == n_slow == len(seen) > 100
    assert fast == slow
    assert fast_errors == slow_errors
    # what the session above says, to be sure the comparison compares something
    errors = [e for e in fast_errors if "all-kinds/" in e]
    assert len(errors) == 6  # garbage, the forged seq, the intruder, the extra field, the wrong type, not UTF-8
    row = next(r for r in fast["sessions"] if r["session_id"] == "all-kinds")
    assert (row["state"], row["score"], row["best_live"], row["scripts_launched"], row["n_checkpoints"]) == \
        ("ended", 0.6, 0.61, 1, 1)
    assert (row["tokens_in"], row["tokens_out"], row["flagged"], row["warnings"], row["containment"]) == \
        (1600, 33, 1, 7, "bwrap")
    assert fast["fts"]["running for 90"] == ["running for 90 s"] * 2
    assert [c["accepted"] for c in fast["controls"] if c["session_id"] == "all-kinds"] == [1, 0]


def test_the_fast_path_in_small_batches_stores_what_one_batch_stores(homes, monkeypatch):
    whole, whole_errors, _ = ingest(homes, "whole.db", watched=False)
    # a few lines per transaction (more than any one line, its chain link included)
    monkeypatch.setattr("onegc_tui.store.ingest.MAX_BATCH_BYTES", 800)
    small, small_errors, _ = ingest(homes, "small.db", watched=False)
    for table in ("ingest_offsets",):
        assert whole[table] == small[table]
    assert whole == small and sorted(whole_errors) == sorted(small_errors)
    assert MAX_BATCH_BYTES > 800


def test_a_record_is_the_models_fields(homes):
    lines = [line for p in sorted((homes / "runs").glob("*/events.jsonl")) for line in p.read_bytes().splitlines()]
    good = bad = 0
    for line in lines:
        try:
            model = parse_event(line)
        except ValidationError as exc:
            with pytest.raises(ValidationError) as got:
                parse_record(line)
            assert got.value.errors() == exc.errors()  # the same message for a bad line
            bad += 1
            continue
        assert parse_record(line) == model.__dict__
        good += 1
    assert good > 100 and bad >= 6


def test_every_event_reads_back_from_the_store_as_its_line_says(homes):
    """One owner for each fact: a transcript step, a GPU sample, a warning and a control are stored
    in their own tables only, and the store gives back every field of every event (the first of two
    lines with one seq: the second is refused)."""
    store = Store(homes / "back.db")
    Ingester(homes, store).ingest_all()
    for path in sorted((homes / "runs").glob("*/events.jsonl")):
        sid = path.parent.name
        want: dict[int, dict] = {}
        for line in path.read_bytes().splitlines():
            try:
                record = parse_record(line)
            except (ValidationError, ValueError):
                continue
            if record["session_id"] == sid:
                want.setdefault(record["seq"], {**record, "prev": None})
        got = stored.records(store.conn, sid, stored.envelopes(store.conn, sid))
        # every field but the chain's link, which belongs to the file's line (checked there at the
        # session's end, runner/scoring/seal.py, and kept as the session's record status)
        assert [{**parse_record(json.dumps(r)), "prev": None} for r in got] == [want[seq] for seq in sorted(want)], sid
    kinds = dict(store.conn.execute("SELECT type, COUNT(*) FROM events GROUP BY type").fetchall())
    assert {"gpu", "warning", "control"}.isdisjoint(kinds)  # their own table's row is the event
    assert kinds["session_started"] > 0 and kinds["checkpoint_scored"] > 0  # the other kinds keep their line
    assert store.conn.execute("SELECT COUNT(*) FROM warnings").fetchone()[0] > 0
    heartbeats = store.conn.execute("SELECT COUNT(*) FROM events WHERE type = 'transcript'"
                                    " AND json_extract(data, '$.kind') = 'progress'").fetchone()[0]
    assert kinds["transcript"] == heartbeats  # of the transcript, only a tool's heartbeats
    assert heartbeats >= 6  # a tool's heartbeats keep theirs: its one transcript row holds only the latest
    store.close()


def test_read_block_is_read_lines_at_once(tmp_path):
    path = tmp_path / "e.jsonl"
    path.write_bytes(b"a\nbb\n" + b"x" * 50 + b"\nc\npartial")
    one, many = JsonlTail(path), JsonlTail(path)
    got_lines = [list(one.read_lines(20)) for _ in range(4)]
    got_blocks = []
    for _ in range(4):
        first, block = many.read_block(20)
        got_blocks.append(list(zip(range(first, first + len(block)), block, strict=True)))
    assert got_lines == got_blocks == [[(1, b"a"), (2, b"bb")], [(3, None)], [(4, b"c")], []]
    assert one.state == many.state



def test_reindex_in_one_bulk_transaction_stores_what_the_live_ingest_stores(homes, monkeypatch):
    from click.testing import CliRunner

    from onegc_tui.cli.main import main

    live, live_errors, _ = ingest(homes, "live.db", watched=True)
    monkeypatch.setattr("onegc_tui.store.BULK_COMMIT_ROWS", 50)  # a commit every few batches, as over millions
    result = CliRunner().invoke(main, ["reindex"])
    assert result.exit_code == 0, result.output
    store = Store.open(homes)
    assert dump(store) == live
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    # the search index, built once at the end of the bulk, agrees with its content table
    store.conn.execute("INSERT INTO transcript_fts(transcript_fts, rank) VALUES('integrity-check', 1)")
    store.close()


def test_lines_whose_write_did_not_commit_are_read_again_and_shown_once(tmp_path, monkeypatch):
    """The ingester keeps its own place in each file (no query per look while nothing is new);
    a batch that fails, or a transaction that does not commit, leaves the place to the store."""
    home = tmp_path / "home"
    paths = create_session(SessionConfig(session_id="s", task="t0", agent="scripted", budget_s=600), home)
    w = EventWriter(paths.events, "s", clock=Clock())
    w.emit("session_started", task="t0_demo", agent="scripted", budget_s=600, grace_s=30, contract={})
    store = Store.open(home)
    seen: list[int] = []
    ing = Ingester(home, store, on_events=lambda sid, evs: seen.extend(e["seq"] for e in evs))
    ing.discover()
    assert ing.ingest_session("s") == 1
    queries: list[str] = []
    store.conn.set_trace_callback(queries.append)
    assert ing.ingest_session("s") == 0 and queries == []  # nothing new: not a query
    store.conn.set_trace_callback(None)

    w.emit("transcript", role="assistant", kind="text", text="two")
    real = store.write
    monkeypatch.setattr(store, "write", lambda rows, best=None: (_ for _ in ()).throw(OSError("disk")))
    with pytest.raises(OSError):
        ing.ingest_session("s")
    monkeypatch.setattr(store, "write", real)
    assert ing.ingest_session("s") == 1  # read again from the store's place

    w.emit("transcript", role="assistant", kind="text", text="three")
    ing.hold()
    with pytest.raises(RuntimeError), store.transaction():
        ing.ingest_session("s")
        raise RuntimeError("the commit fails")
    ing.discard()
    ing.hold()
    with store.transaction():
        assert ing.ingest_session("s") == 1
    ing.deliver()
    assert seen == [1, 2, 3]
    assert [r[0] for r in stored.envelopes(store.conn, "s")] == [1, 2, 3]
    store.close()


def test_the_live_ingests_one_transaction_per_wake_indexes_what_batch_by_batch_indexes(homes, monkeypatch):
    """The live ingest writes every session of a wake in one transaction and indexes the new
    transcript once, at its end; a tool's heartbeat row updated in place within that transaction
    (small batches: several per session) is indexed as it ends up."""
    monkeypatch.setattr("onegc_tui.store.ingest.MAX_BATCH_BYTES", 600)  # many batches per session
    alone, _, _ = ingest(homes, "alone.db", watched=True)  # a transaction per batch
    store = Store(homes / "wake.db")
    ing = Ingester(homes, store, on_events=lambda sid, evs: None)
    with store.transaction():
        ing.ingest_all()
    store.conn.execute("INSERT INTO transcript_fts(transcript_fts, rank) VALUES('integrity-check', 1)")
    assert dump(store) == alone
    store.close()


def test_the_two_parts_of_a_reindex_are_ranges_of_ids_with_about_half_the_bytes_each(monkeypatch):
    """The second process's ids all sort after this one's (its rows go on at the end of every
    table and index when copied in), and the bytes to read are shared within one session's."""
    from onegc_tui.store.reindex import split

    monkeypatch.setattr("onegc_tui.store.parallel.PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr("onegc_tui.store.parallel.os.cpu_count", lambda: 2)
    sizes = {f"s{k:03d}": (k * 7919) % 1000 + 1 for k in range(200)}
    mine, theirs = split(sizes)
    assert mine + theirs == sorted(sizes) and max(mine) < min(theirs)
    gap = abs(sum(sizes[i] for i in mine) - sum(sizes[i] for i in theirs))
    assert gap <= max(sizes.values())
    assert split({"b": 10, "a": 1}) == (["a"], ["b"])  # one each, however uneven
    assert split({"a": 5, "b": 5, "c": 100}) == (["a", "b"], ["c"])
    monkeypatch.setattr("onegc_tui.store.parallel.os.cpu_count", lambda: 1)
    assert split(sizes) == ([], [])


@pytest.mark.slow
def test_a_reindex_in_two_processes_stores_what_one_stores(homes, monkeypatch):
    """On two cores a second process builds part of the store, and its rows are copied in: the
    same rows in every table, the same search hits, an index that agrees with its table."""
    from onegc_tui.store.parallel import split, store_sizes
    from onegc_tui.store.reindex import rebuild

    live, _, (n_live, _) = ingest(homes, "live.db", watched=True)
    folders = sorted(p.parent for p in (homes / "runs").glob("*/session.json"))
    monkeypatch.setattr("onegc_tui.store.parallel.PARALLEL_MIN_BYTES", 0)  # two processes, however small
    monkeypatch.setattr("onegc_tui.store.parallel.os.cpu_count", lambda: 2)
    mine, theirs = split(store_sizes(homes / "runs"))
    assert mine and theirs and not set(mine) & set(theirs) and sorted(mine + theirs) == [f.name for f in folders]
    monkeypatch.setattr("onegc_tui.store.BULK_COMMIT_ROWS", 50)
    sessions, events = rebuild(homes, homes / "two.db")
    store = Store(homes / "two.db")
    assert dump(store) == live and sessions == len(live["sessions"]) and events == n_live
    store.conn.execute("INSERT INTO transcript_fts(transcript_fts, rank) VALUES('integrity-check', 1)")
    assert not list(homes.glob("two.db.part*"))  # the part and its files are gone
    store.close()


@pytest.mark.slow
def test_a_reindex_whose_second_process_fails_says_so_and_leaves_the_store_as_it_was(homes, monkeypatch, tmp_path):
    from click.testing import CliRunner

    from onegc_tui.cli.main import main

    ingest(homes, "onegc.db", watched=False)
    before = (homes / "onegc.db").read_bytes()
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'disk full while writing the part' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setattr("onegc_tui.store.parallel.PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr("onegc_tui.store.parallel.os.cpu_count", lambda: 2)
    monkeypatch.setattr("onegc_tui.store.parallel.sys.executable", str(fake))
    result = CliRunner().invoke(main, ["reindex"])
    assert result.exit_code == 2, result.output
    assert "the second process failed (disk full while writing the part)" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert (homes / "onegc.db").read_bytes() == before
    assert not [p for p in homes.iterdir() if ".part" in p.name]


@pytest.mark.slow
@pytest.mark.parametrize("merge", ["copied in", "another ingester got there first"])
def test_a_catch_up_from_scratch_in_two_processes_stores_what_one_stores(homes, monkeypatch, merge):
    """A store that has never seen these sessions (``onegc sessions`` on a new machine) is caught
    up on two cores the same way; where the part cannot be copied in (rows another ingester wrote
    meanwhile), it is dropped and those sessions are read here: the same store either way."""
    import sqlite3

    import onegc_tui.store.parallel as reindex

    live, _, (n_live, _) = ingest(homes, "live.db", watched=True)
    monkeypatch.setattr("onegc_tui.store.parallel.PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr("onegc_tui.store.parallel.os.cpu_count", lambda: 2)
    parts: list[tuple[list[str], list[str]]] = []
    real_split = reindex.split
    monkeypatch.setattr(reindex, "split", lambda sizes: parts.append(real_split(sizes)) or parts[-1])
    if merge != "copied in":
        def refused(self, part):
            raise sqlite3.IntegrityError("UNIQUE constraint failed: events.session_id, events.seq")
        monkeypatch.setattr(Store, "merge_part", refused)
    # this process's part commits as it goes (and indexes for search at each commit): another
    # writer waits for a few rows, not for the whole part
    monkeypatch.setattr("onegc_tui.store.parallel.CATCH_UP_COMMIT_ROWS", 20)
    store = Store(homes / "two.db")
    part_commits: list[str] = []  # the commits inside this process's part (its transaction)
    store.conn.set_trace_callback(lambda sql: sql == "COMMIT" and store._outer == "transaction"
                                  and part_commits.append(sql))
    ing = Ingester(homes, store)
    assert from_scratch_in_two(ing) == n_live  # what parallel.catch_up reads before its liveness check
    store.conn.set_trace_callback(None)
    assert len(part_commits) >= 3  # (one, its last, where it does not commit as it goes)
    assert ing.ingest_all() == 0 and ing.live == {r["session_id"] for r in live["sessions"]
                                                  if r["state"] not in ("ended", "failed")}
    assert dump(store) == live
    store.conn.execute("INSERT INTO transcript_fts(transcript_fts, rank) VALUES('integrity-check', 1)")
    assert not list(homes.glob("two.db.part*"))
    assert len(parts) == 1 and all(parts[0])  # it did run in two parts
    store.close()
