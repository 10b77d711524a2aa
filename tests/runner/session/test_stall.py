"""The stall alert's clock: time waiting on the model, while no tool runs."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from runner.session.stall import StallWatch, tool_pids


def test_the_alert_comes_once_after_stall_s_of_waiting_and_rearms_on_an_answer():
    now = [0.0]
    watch = StallWatch(60.0, clock=lambda: now[0])
    now[0] = 59.0
    assert watch.check(busy=False) is None
    now[0] = 61.0
    assert watch.check(busy=False) == 61.0
    now[0] = 200.0
    assert watch.check(busy=False) is None  # once per stall
    watch.model_answered()
    now[0] = 259.0
    assert watch.check(busy=False) is None
    now[0] = 261.0
    assert watch.check(busy=False) == 61.0


def test_a_running_tool_or_a_pause_is_not_waiting_on_the_model():
    now = [0.0]
    watch = StallWatch(60.0, clock=lambda: now[0])
    for t in range(0, 601, 10):  # a 10-minute training run, seen every 10 s
        now[0] = float(t)
        assert watch.check(busy=True) is None
    now[0] = 650.0
    assert watch.check(busy=False) is None  # 50 s after the tool ended
    now[0] = 661.0
    assert watch.check(busy=False) == 61.0


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
