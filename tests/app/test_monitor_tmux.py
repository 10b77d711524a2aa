"""The real monitor in a real terminal: ``onegc monitor`` in tmux over two scripted sessions;
select, pause by key, open history, quit, reading the screen with ``tmux capture-pane``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid

import pytest

from tests.conftest import REPO, start_session, wait_event, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")]


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=False).stdout


def test_monitor_in_tmux_select_pause_history_quit(home):
    s1 = start_session(home, "tm1", budget_s=300, pace_s=0.5)
    wait_event(s1, "session_started", timeout=60)
    s2 = start_session(home, "tm2", budget_s=300, pace_s=0.5)
    wait_event(s2, "session_started", timeout=60)
    name = f"onegc-test-{uuid.uuid4().hex[:8]}"
    cmd = (f"env ONEGC_HOME={home} PYTHONPATH={REPO} TERM=xterm-256color "
           f"{sys.executable} -m onegc_tui.cli monitor")
    tmux("new-session", "-d", "-s", name, "-x", "160", "-y", "45", cmd)
    tmux("resize-window", "-t", name, "-x", "160", "-y", "45")
    screen = lambda: tmux("capture-pane", "-p", "-t", name)  # noqa: E731
    try:
        _drive(name, screen, s1, s2)
    except AssertionError:
        print(screen())  # what the terminal showed, for the failure report
        raise
    finally:
        tmux("kill-session", "-t", name)
        for paths in (s1, s2):
            from runner.control import request

            request(paths, "abort", source="test")
        for paths in (s1, s2):
            wait_event(paths, "session_ended", timeout=120)


def first_request(paths) -> str | None:
    lines = paths.control.read_text().splitlines() if paths.control.exists() else []
    return json.loads(lines[0])["action"] if lines else None  # the file exists a moment before its line


def _drive(name, screen, s1, s2) -> None:
    if True:
        wait_for(lambda: "tm1" in screen() and "tm2" in screen(), 60, "both sessions on the monitor")
        wait_for(lambda: "tm2" in screen().splitlines()[0], 30, "the most recent running session selected (header)")
        tmux("send-keys", "-t", name, "Down")
        wait_for(lambda: "tm1" in screen().splitlines()[0], 30, "the other session selected (header)")
        tmux("send-keys", "-t", name, "p")
        wait_for(lambda: first_request(s1) == "pause", 30, "a pause request in tm1's control.jsonl")
        assert not s2.control.exists()  # the selected session, not the other
        wait_for(lambda: "PAUSED" in screen(), 60, "the paused state on screen")
        tmux("send-keys", "-t", name, "h")
        wait_for(lambda: "Sonnet 4.6" in screen() and "history" in screen(), 60, "the history matrix with the paper")
        tmux("send-keys", "-t", name, "h")  # h again (or Escape) goes back
        wait_for(lambda: "sorted by" in screen(), 30, "back on the dashboard")
        tmux("send-keys", "-t", name, "q")
        wait_for(lambda: name not in tmux("list-sessions", "-F", "#{session_name}"), 30, "the monitor to quit")
