"""Every session reaches an end state in bounded time (issue 13, "Stuck forever"): a runner
killed before its first event, a session folder deleted mid-run. Real runners."""

from __future__ import annotations

import json
import os
import shutil
import signal

import psutil
import pytest

from onegc_tui.store.ingest import Ingester
from runner.launch.spawn import create_session, spawn_local
from runner.wire.session_config import SessionConfig
from tests.helpers import start_session, tree_pids, wait_event, wait_for, write_agent
from tests.runner.session.test_session_e2e import BUSY_AGENT

pytestmark = pytest.mark.slow


def test_a_runner_killed_before_its_first_event_ends_failed(home, store):
    """Before: "queued" forever."""
    paths = create_session(SessionConfig(session_id="k0", task="t0", agent="scripted", budget_s=60, pace_s=0), home)
    pid = spawn_local(paths)
    os.kill(pid, signal.SIGKILL)  # still importing: nothing written yet
    wait_for(lambda: psutil.Process(pid).status() == psutil.STATUS_ZOMBIE, 10, "the runner to die")
    assert not paths.events.exists()
    ingester = Ingester(home, store)
    ingester.ingest_all()
    assert ingester.check_liveness() == ["k0"]
    row = store.session("k0")
    assert row["state"] == "failed" and f"runner (pid {pid} on " in row["end_detail"]
    assert "died before the session started" in row["end_detail"]
    os.waitpid(pid, 0)


def test_a_session_folder_deleted_mid_run_ends_the_session_and_its_runner(home, tmp_path, store):
    """Before: "running 00:00" forever in the store, and the runner and its agent ran on."""
    cmd = write_agent(tmp_path, "busy.py", BUSY_AGENT)
    paths = start_session(home, "rm1", agent="command", command=cmd, budget_s=300)
    wait_event(paths, "process", action="started", timeout=60)
    runner = psutil.Process(json.loads(paths.runner_info.read_text())["pid"])
    ingester = Ingester(home, store)
    ingester.ingest_all()
    assert store.session("rm1")["state"] == "running"
    wait_for(lambda: shutil.rmtree(paths.root, ignore_errors=True) or not paths.root.exists(), 30,
             "the folder to be deleted")  # the runner may write a file in between: delete again
    assert ingester.check_liveness() == ["rm1"]
    assert "deleted or moved" in store.session("rm1")["end_detail"]
    wait_for(lambda: not runner.is_running() or runner.status() == psutil.STATUS_ZOMBIE, 60, "the runner to stop")
    wait_for(lambda: not tree_pids(paths), 30, "the agent's tree to stop")
