"""kill -9 of the monitor mid-session: the session runs on, and a restarted monitor stores every
event exactly once (rows = lines of events.jsonl)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from onegc_tui.store import Store
from onegc_tui.store.ingest import Ingester
from tests.helpers import REPO, SHORT_DEMO, start_session, wait_event, wait_for

pytestmark = pytest.mark.slow

MONITOR = ("import sys; from pathlib import Path; from onegc_tui.app import make_app; "
           "make_app(Path(sys.argv[1])).run(headless=True)")


def monitor(home):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.Popen([sys.executable, "-c", MONITOR, str(home)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def stored(home, sid) -> int:
    store = Store(home / "onegc.db")
    try:
        return store.count_events(sid)
    finally:
        store.close()


def test_kill_9_of_the_monitor_loses_nothing_and_duplicates_nothing(home):
    first = monitor(home)
    try:  # a failed wait never leaves a headless monitor behind
        # a pace between steps keeps it running while the first monitor is killed and the second starts
        paths = start_session(home, "mk9", budget_s=300, pace_s=2.0, agent_args=SHORT_DEMO)
        wait_event(paths, "checkpoint_scored", timeout=120)
        wait_for(lambda: (home / "onegc.db").exists() and stored(home, "mk9") > 5, 120, "the monitor to ingest")
    finally:
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
    second = monitor(home)  # restarted mid-session
    try:
        ended = wait_event(paths, "session_ended", timeout=300)
        assert ended["reason"] == "completed", ended["detail"]  # the session never noticed
        lines = len(paths.events.read_text().splitlines())
        wait_for(lambda: stored(home, "mk9") == lines, 30, "the restarted monitor to catch up")
    finally:
        second.kill()
        second.wait()
    store = Store(home / "onegc.db")
    Ingester(home, store).ingest_all()  # and once more: still no duplicates
    assert store.count_events("mk9") == lines
    assert store.session("mk9")["state"] == "ended"
    store.close()
