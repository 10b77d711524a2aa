"""The store under two ingesters and liveness verdicts (issue 13): a corrupt line counts once,
a session whose runner died before its first event or whose folder vanished reaches an end
state, and a verdict gives way to the session's own events."""

from __future__ import annotations

import os
import shutil
import time

import pytest

from onegc_tui.store import Store
from onegc_tui.store.ingest import IngestBatch, Ingester, write_batch
from onegc_tui.store.records import parse_record
from runner.launch.records import write_record
from runner.launch.spawn import create_session
from runner.wire.jsonl import EventWriter
from runner.wire.session_config import SessionConfig


def session(home, sid="s1") -> EventWriter:
    paths = create_session(SessionConfig(session_id=sid, task="t0", agent="scripted", budget_s=60), home)
    w = EventWriter(paths.events, sid)
    w.emit("session_started", task="t0", agent="scripted", budget_s=60, grace_s=30)
    return w


@pytest.fixture
def store(home):
    s = Store.open(home)
    yield s
    s.close()


def ingested(home, store) -> Ingester:
    """An ingester that has read every session folder once."""
    ingester = Ingester(home, store)
    ingester.ingest_all()
    return ingester


def test_two_ingesters_meeting_the_same_corrupt_line_count_it_once(home):
    """A monitor and `onegc sessions` read the same new lines; both commit them. Before: the
    corrupt line was added to `warnings` by each."""
    w = session(home)
    line = w.path.read_bytes().splitlines()[0]
    w.close()
    batch = IngestBatch(str(w.path), "s1", [parse_record(line)], [line.decode()], offset=1000, line_no=2,
                        bad=[(2, "not a JSON object")], lines=[1])
    monitor, cli = Store.open(home), Store.open(home)  # two connections to one file, as two processes
    monitor.register_session("s1", str(w.path.parent), {})
    assert len(write_batch(monitor, batch).new) == 1
    assert write_batch(cli, batch).new == []  # the same lines again: nothing new
    assert cli.session("s1")["warnings"] == 1 and len(cli.ingest_errors("s1")) == 1
    monitor.close()
    cli.close()


def test_an_ingester_that_read_less_does_not_move_the_offset_back(home):
    w = session(home)
    w.close()
    a, b = Store.open(home), Store.open(home)
    a.register_session("s1", str(w.path.parent), {})
    write_batch(a, IngestBatch(str(w.path), "s1", [], [], offset=500, line_no=5))
    write_batch(b, IngestBatch(str(w.path), "s1", [], [], offset=200, line_no=2))  # it had read less
    assert a.offset(str(w.path)) == (500, 5)
    a.close()
    b.close()


@pytest.mark.slow
def test_a_runner_killed_before_its_first_event_is_failed_not_queued_forever(home, store):
    """launcher.json names a runner process that is gone; it wrote nothing. Before: the session
    stayed "queued" (only running sessions were ever checked)."""
    import subprocess
    import sys

    from runner.wire.liveness import launch_record

    paths = create_session(SessionConfig(session_id="q1", task="t0", agent="scripted", budget_s=60), home)
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    write_record(paths, {"kind": "local", **launch_record(proc.pid)})
    proc.wait()
    ingester = ingested(home, store)
    assert store.session("q1")["state"] == "queued"
    assert ingester.check_liveness() == ["q1"]
    row = store.session("q1")
    assert row["state"] == "failed" and "died before the session started" in row["end_detail"]


def test_a_session_created_and_never_launched_fails_after_a_while(home, store):
    """The command that created it died before launching it: no launcher record, ever."""
    paths = create_session(SessionConfig(session_id="orphan", task="t0", agent="scripted", budget_s=60), home)
    ingester = ingested(home, store)
    assert ingester.check_liveness() == []  # just created: its launcher is about to claim it
    old = time.time() - 3600
    os.utime(paths.config, (old, old))
    assert ingester.check_liveness() == ["orphan"]
    assert "never launched" in store.session("orphan")["end_detail"]


def test_a_session_whose_folder_vanished_mid_run_is_failed(home, store):
    """Before: "running 00:00" forever."""
    w = session(home, "gone")
    w.emit("heartbeat", remaining_s=30, active_s=30)
    w.close()
    ingester = ingested(home, store)
    assert store.session("gone")["state"] == "running"
    shutil.rmtree(home / "runs" / "gone")
    assert ingester.check_liveness() == ["gone"]
    row = store.session("gone")
    assert row["state"] == "failed" and "deleted or moved" in row["end_detail"]
    assert store.count_events("gone") == 2  # what was ingested stays


def test_a_liveness_verdict_gives_way_to_the_sessions_own_events(home, store):
    paths = create_session(SessionConfig(session_id="late", task="t0", agent="scripted", budget_s=60), home)
    ingester = ingested(home, store)
    store.mark_failed("late", "created 60 min ago and never launched")
    w = EventWriter(paths.events, "late")  # launched after all (e.g. by `onegc study`)
    w.emit("session_started", task="t0", agent="scripted", budget_s=60, grace_s=30)
    w.emit("budget", state="running", remaining_s=60, deadline=time.time() + 60)
    ingester.ingest_all()
    row = store.session("late")
    assert (row["state"], row["end_reason"], row["end_detail"]) == ("running", None, None)
    w.emit("session_ended", reason="completed", active_s=1, wall_s=1, paused_s=0)
    w.emit("budget", state="running", remaining_s=0, deadline=time.time())  # a late one cannot revive it
    w.close()
    ingester.ingest_all()
    assert store.session("late")["state"] == "ended"


def test_a_retried_session_is_read_afresh_not_hidden_behind_its_first_attempt(home, store):
    """`onegc study` moves a failed attempt aside and starts the session again under the same id.
    Found while checking the study retry: the store kept the first attempt's rows and state, and
    read the new events.jsonl from the old one's offset (nothing, or half a line)."""
    import os

    w = session(home, "x")
    for i in range(10):
        w.emit("transcript", role="assistant", kind="text", text=f"first attempt {i} " + "z" * 60)
    w.close()
    ingested(home, store)
    store.mark_failed("x", "runner (pid 1 on h) died before the session ended")
    os.rename(home / "runs" / "x", home / "runs" / "x.attempt-1")
    w = session(home, "x")  # the second attempt
    w.emit("transcript", role="assistant", kind="text", text="second attempt")
    w.close()
    errors = []
    Ingester(home, store, on_error=errors.append).ingest_all()  # a monitor started later, or `onegc sessions`
    row = store.session("x")
    assert (row["state"], row["end_detail"]) == ("running", None)
    assert [r["text"] for r in store.transcript("x")] == ["second attempt"]
    assert [r["text"] for r in store.transcript("x", search="attempt")] == ["second attempt"]
    assert store.count_events("x") == 2 and not errors
