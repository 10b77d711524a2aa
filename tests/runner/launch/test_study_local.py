"""The local queue with real runners on fake GPUs: sessions wait for a free GPU, and a study
re-run after kill -9 of everything resumes without repeating finished sessions."""

from __future__ import annotations

import json
import sys

import pytest

from runner.launch.local import QUEUE_LOG, daemon_info
from runner.launch.study import launch, load_study, wait
from runner.wire.paths import SessionPaths, runs_dir
from tests.helpers import events, slack, wait_for
from tests.runner.launch.conftest import kill_everything, read_json, write_study

pytestmark = pytest.mark.slow


def test_three_sessions_on_two_gpus_third_waits_for_a_free_one(home, fake_gpus, reaper, tmp_path):
    study = load_study(write_study(tmp_path / "q.toml", """
        name = "q"
        tasks = ["t0"]
        repeats = 3
        [budget]
        minutes = 0.2
        grace_s = 2
        [[agents]]
        label = "s"
        adapter = "scripted"
        pace_s = 0
        [launcher]
        gpus = "0,1"
    """))
    report = launch(study, home)
    assert len(report.created) == 3 and len(report.launched) == 3
    states = wait(study, home, timeout_s=120 * slack(), poll_s=0.5)
    assert [s.state for s in states] == ["done"] * 3, [(s.planned.session_id, s.state, s.reason) for s in states]

    runs = runs_dir(home)
    rec = {k: read_json(runs / f"q--s--t0--r{k}" / "launcher.json") for k in (1, 2, 3)}
    ended = {k: events(SessionPaths(runs / f"q--s--t0--r{k}"))[-1] for k in (1, 2, 3)}
    assert all(e["type"] == "session_ended" for e in ended.values())
    # The first two start at once on the two GPUs; the third waits.
    assert {rec[1]["gpu"], rec[2]["gpu"]} == {"0", "1"}
    assert abs(rec[1]["started_at"] - rec[2]["started_at"]) < 5
    first = min((1, 2), key=lambda k: rec[k]["ended_at"])
    assert rec[3]["started_at"] >= ended[first]["ts"], "the third session started before a GPU was free"
    assert rec[3]["started_at"] >= rec[first]["ended_at"]
    assert rec[3]["gpu"] == rec[first]["gpu"]
    # The runner was told its GPU: session.json and the session contract agree with the queue.
    for k in (1, 2, 3):
        paths = SessionPaths(runs / f"q--s--t0--r{k}")
        assert paths.read_config().gpu == rec[k]["gpu"]
        started = events(paths)[0]
        assert [g["index"] for g in started["contract"]["gpu"]] == [int(rec[k]["gpu"])]
    # With nothing left the daemon goes away.
    wait_for(lambda: daemon_info(runs) is None, 20, "the queue daemon to exit")


HOLD = """import os, time
while not os.path.exists({release!r}):
    time.sleep(0.2)
print("released")
"""


def test_rerun_after_kill_9_of_everything_resumes_without_repeating(home, fake_gpus, reaper, tmp_path, monkeypatch):
    signals = tmp_path / "signals"  # shown read-only inside the agents' sandboxes, live
    signals.mkdir()
    monkeypatch.setenv("ONEGC_SANDBOX_RO", str(signals))
    release = signals / "release"
    study_file = write_study(tmp_path / "k.toml", f"""
        name = "k"
        tasks = ["t0"]
        repeats = 2
        [budget]
        minutes = 1
        grace_s = 2
        [[agents]]
        label = "short"
        adapter = "command"
        command = ["{sys.executable}", "-c", "print('done')"]
        [[agents]]
        label = "hold"
        adapter = "command"
        command = ["{sys.executable}", "-c", {json.dumps(HOLD.format(release=str(release)))}]
        [launcher]
        gpus = "0,1"
    """)
    study = load_study(study_file)
    launch(study, home)
    runs = runs_dir(home)
    short = [SessionPaths(runs / f"k--short--t0--r{k}") for k in (1, 2)]
    hold = [SessionPaths(runs / f"k--hold--t0--r{k}") for k in (1, 2)]

    def settled():
        done = all(e and e[-1]["type"] == "session_ended" for e in map(events, short))
        running = all(any(x["type"] == "agent_started" for x in events(p)) for p in hold)
        return done and running

    try:
        wait_for(settled, 60, "both short sessions to end and both hold sessions to run", interval=0.3)
    except AssertionError as e:  # what each session and the queue did, for a failure seen once in a full run
        raise AssertionError(f"{e}\n{where_they_are(runs, short + hold)}") from None
    before = {p.session_id: p.events.read_bytes() for p in short}

    assert kill_everything(home) >= 3  # the daemon, two runners (and their agents)
    assert daemon_info(runs) is None
    release.write_text("go")

    first = launch(study, home)
    second = launch(study, home)  # a second scheduler at once must not double-book a GPU
    assert first.skipped_done == 2 and sorted(first.retried) == sorted(p.session_id for p in hold)
    assert second.retried == [] and second.active == 2
    states = wait(study, home, timeout_s=60 * slack(), poll_s=0.5)
    assert [s.state for s in states] == ["done"] * 4, [(s.planned.session_id, s.state, s.reason) for s in states]

    for p in short:  # finished before the kill: untouched, never attempted again
        assert p.events.read_bytes() == before[p.session_id]
        assert not list(runs.glob(f"{p.session_id}.attempt-*"))
    for p in hold:  # killed mid-run: kept aside as attempt 1, then run afresh to the end
        attempt = read_json(runs / f"{p.session_id}.attempt-1" / "attempt.json")
        assert "died before the session ended" in attempt["reason"]
        assert events(p)[-1]["reason"] == "completed"
        assert read_json(p.launcher)["gpu"] in ("0", "1")
    log = (runs / QUEUE_LOG).read_text()
    assert log.count("serving") == 2, log  # one daemon before the kill, exactly one after


def where_they_are(runs, sessions: list[SessionPaths]) -> str:
    """Each session's event types and launcher record, and the queue's log."""
    lines = []
    for p in sessions:
        launcher = json.dumps(read_json(p.launcher)) if p.launcher.exists() else "no launcher record"
        lines.append(f"{p.session_id}: {[e['type'] for e in events(p)][-12:]} · {launcher}")
    log = runs / QUEUE_LOG
    lines.append("queue log:\n" + (log.read_text()[-4000:] if log.exists() else "none"))
    return "\n".join(lines)
