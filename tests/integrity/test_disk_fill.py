"""R3 (issue 38 part 6): an agent that fills the disk on purpose does not get its session re-rolled
by a study; a disk filled by someone else does. Each test is a real session of a study's planned
command agent, on a small tmpfs home, judged by the study's own rule
(``runner.wire.end_reasons.harness_failure`` through ``runner.launch.study.classify``)."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from runner.launch.spawn import create_session, spawn_local
from runner.launch.study import classify, launch, load_study, plan
from tests.helpers import wait_event

pytestmark = pytest.mark.slow

AGENT = """
import subprocess, sys, time
from pathlib import Path
Path("run_1.py").write_text('''
import prepare
from train import build_model
config = {"hidden": 8}
prepare.save_checkpoint(build_model(config), config, "first")
''')
subprocess.run([sys.executable, "run_1.py"], check=True)
while not Path("go").exists():  # the test says when the checkpoint is scored
    time.sleep(0.1)
if sys.argv[1] == "fill":
    with open("fill.bin", "wb") as f:  # fill the disk, on purpose
        try:
            while True:
                f.write(b"x" * (1 << 20))
                f.flush()
        except OSError as exc:
            print("disk full:", exc, flush=True)
time.sleep(300)  # the runner ends the session
"""


def study_session(tmp_path: Path, home: Path, demo_data: Path, monkeypatch, how: str):
    shutil.copytree(demo_data, home / "data" / "t0_demo")
    monkeypatch.setenv("ONEGC_HOME", str(home))
    agent = tmp_path / "filler.py"
    agent.write_text(AGENT)
    study = load_study(_write(tmp_path / "fill.toml", f"""
        name = "fill"
        tasks = ["t0"]
        repeats = 1
        [budget]
        minutes = 3
        grace_s = 5
        [[agents]]
        adapter = "command"
        label = "filler"
        command = [{json.dumps(sys.executable)}, {json.dumps(str(agent))}, "{how}"]
        """))
    planned = plan(study)[0]
    paths = create_session(planned.config, home)
    spawn_local(paths)
    scored = wait_event(paths, "checkpoint_scored", timeout=120)
    assert scored.get("value") is not None, scored
    return study, planned, paths


def _write(path: Path, body: str) -> Path:
    path.write_text(textwrap.dedent(body))
    return path


def test_an_agent_that_fills_the_disk_on_purpose_is_not_re_rolled(small_tmpfs, demo_data, tmp_path, monkeypatch):
    home = small_tmpfs("60m")
    study, planned, paths = study_session(tmp_path, home, demo_data, monkeypatch, "fill")
    (paths.workspace / "go").write_text("")
    ended = wait_event(paths, "session_ended", timeout=180)
    assert ended["reason"] == "agent_failed" and "the agent's doing" in ended["detail"], ended
    assert ended["detail"].startswith("disk full: ") and "\n" not in ended["detail"]
    result = json.loads(paths.result.read_text())
    # the scored checkpoint kept (a study is sealed: its official value is val's private part, not the live whole)
    assert result["checkpoint"] == scored_checkpoint(paths) and result["value"] == ended["score"] is not None, result
    state = classify(paths, planned, study.max_attempts)
    assert state.state == "done" and state.end_reason == "agent_failed", state
    monkeypatch.setattr("runner.launch.local.start_daemon", lambda *a, **k: 0)  # no queue: only what it decides
    report = launch(study, home)
    assert report.retried == [] and report.created == []
    assert not list(paths.root.parent.glob("*.attempt-*"))


def test_a_disk_filled_by_someone_else_is_the_harness_s_failure_and_re_rolled(small_tmpfs, demo_data, tmp_path,
                                                                                monkeypatch):
    home = small_tmpfs("60m")
    study, planned, paths = study_session(tmp_path, home, demo_data, monkeypatch, "wait")
    with open(home / "another-tenant.bin", "wb") as f:  # outside the session: not the agent's doing
        try:
            while True:
                f.write(b"y" * (1 << 20))
                f.flush()
        except OSError:
            pass
    ended = wait_event(paths, "session_ended", timeout=180)
    (home / "another-tenant.bin").unlink()
    assert ended["reason"] == "harness_error" and "not its doing" in ended["detail"], ended
    assert classify(paths, planned, study.max_attempts).state == "retry"


def scored_checkpoint(paths) -> str:
    from tests.helpers import events

    return next(e["name"] for e in events(paths)
                if e["type"] == "checkpoint_scored" and not e.get("official") and e.get("value") is not None)
