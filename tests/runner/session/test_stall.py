"""The stall rule's clock: time waiting on the model, while no tool runs; a warning when a stall
begins and one when it ends (runner/session/stall.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from runner.session.stall import StallChange, StallWatch, tool_pids


def test_the_alert_comes_once_after_stall_s_of_waiting_and_ends_at_an_answer():
    now = [0.0]
    watch = StallWatch(60.0, clock=lambda: now[0])
    now[0] = 59.0
    assert watch.check(tool_running=False) is None
    now[0] = 61.0
    assert watch.check(tool_running=False) == StallChange(True, 61.0)
    now[0] = 200.0
    assert watch.check(tool_running=False) is None  # once per stall
    watch.model_answered()
    now[0] = 201.0
    ended = watch.check(tool_running=False)
    assert ended == StallChange(False, 201.0, answered=True)
    assert ended.message() == "the model answered again after 3 min"
    assert watch.check(tool_running=False) is None  # the end is said once
    now[0] = 260.0
    assert watch.check(tool_running=False) is None
    now[0] = 262.0
    assert watch.check(tool_running=False) == StallChange(True, 61.0)  # a new stall warns again


def test_the_wait_begins_when_the_agent_starts_not_when_the_session_is_set_up():
    now = [0.0]
    watch = StallWatch(60.0, clock=lambda: now[0])
    now[0] = 100.0  # the workspace, the network, the sandbox: a slow machine's set-up
    watch.start()
    now[0] = 150.0
    assert watch.check(tool_running=False) is None
    now[0] = 161.0
    assert watch.check(tool_running=False) == StallChange(True, 61.0)


def test_a_running_tool_or_a_pause_is_not_waiting_on_the_model():
    now = [0.0]
    watch = StallWatch(60.0, clock=lambda: now[0])
    for t in range(0, 601, 10):  # a 10-minute training run, seen every 10 s
        now[0] = float(t)
        assert watch.check(tool_running=True) is None
    now[0] = 650.0
    assert watch.check(tool_running=False) is None  # 50 s after the tool ended
    now[0] = 661.0
    assert watch.check(tool_running=False) == StallChange(True, 61.0)
    now[0] = 700.0
    assert watch.check(tool_running=False, paused=True) is None  # a pause stops the clock and ends nothing
    now[0] = 730.0
    ended = watch.check(tool_running=True)  # a tool at work ends it
    assert ended == StallChange(False, 130.0) and ended.message() == "a tool runs again after 2 min"


def test_the_warning_names_the_wait_and_the_agents_last_error():
    assert StallChange(True, 75.0).message("HTTP 503") == \
        "no model response for 75 s while the agent runs no tool; its last error: HTTP 503"
    assert StallChange(True, 600.0).message() == "no model response for 10 min while the agent runs no tool"


@pytest.mark.slow
def test_tools_are_the_processes_outside_the_agents_session():
    same = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    own = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True)
    try:
        assert tool_pids([same.pid, own.pid, 999_999_999], os.getsid(0)) == [own.pid]
        assert tool_pids([same.pid, own.pid], os.getsid(0), scaffolding={own.pid}) == []
    finally:
        for p in (same, own):
            p.kill()
            p.wait()


def test_a_stall_still_going_at_the_end_is_named_in_the_end_detail():
    now = [0.0]
    watch = StallWatch(300.0, clock=lambda: now[0])
    now[0] = 200.0
    assert watch.check(False) is None and watch.end_note() is None  # not yet a stall
    now[0] = 301.0
    assert watch.check(False).stalled
    now[0] = 720.0  # the budget ends while the stream still hangs
    assert watch.end_note() == ("the model stream stalled: no model response in its last 12 min while no tool ran "
                                "(named after 5 min)")
    watch.model_answered()  # it came back: the stall ends, nothing to name at the end
    assert not watch.check(False).stalled and watch.end_note() is None
