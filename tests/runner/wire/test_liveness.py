"""Runner liveness without the wall clock (issue 13, "A live session marked failed": the check
compared process start times with a 1 s tolerance, and this machine's clock steps by 2 s and
27 s). Real processes hold real locks here."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from runner.launch.reconcile import reconcile
from runner.launch.records import write_record
from runner.launch.spawn import create_session
from runner.wire.paths import SessionPaths
from runner.wire.session_config import SessionConfig
from tests.helpers import REPO, start_session, wait_event, write_agent

CLOCK_STEP_S = 27.0  # the step seen on this machine

HOLDER = """
import subprocess, sys, time
from pathlib import Path
from runner.wire.paths import SessionPaths
from runner.wire.liveness import RunnerLock
lock = RunnerLock.take(SessionPaths(Path(sys.argv[1])))
child = subprocess.Popen(["sleep", "300"])  # what a runner starts (the agent's sandbox, its scorer)
print(child.pid, flush=True)
time.sleep(300)
"""


@pytest.fixture
def holder(home):
    """A process that holds a session's runner lock as ``python -m runner.session`` does, with a
    child of its own; yields ``(paths, holder, child pid)``."""
    paths = create_session(SessionConfig(session_id="live", task="t0", agent="scripted", budget_s=60), home)
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(HOLDER), str(paths.root)], stdout=subprocess.PIPE,
                            text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    child = int(proc.stdout.readline())
    yield paths, proc, child
    for pid in (proc.pid, child):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()


def as_if_the_clock_stepped(paths: SessionPaths, step: float) -> None:
    """What the old check saw after a clock step: the runner's recorded start time and the one
    psutil reports (boot time + ticks, the boot time read off the wall clock) differing by ``step``."""
    info = json.loads(paths.runner_info.read_text())
    info["create_time"] = psutil.Process(info["pid"]).create_time() - step
    paths.runner_info.write_text(json.dumps(info))


@pytest.mark.slow
def test_a_live_runner_is_alive_to_every_caller_whatever_the_wall_clock_did(home, tmp_path):
    """A real runner; then its record is made to look as a 27 s clock step made it look to the
    old check. Before: `harness_error: runner … died` while it ran on, the study could move its
    folder aside and relaunch it, and the queue could give its GPU to another session."""
    from runner.launch.local import QueueDaemon
    from runner.launch.study import Planned, classify

    cmd = write_agent(tmp_path, "idle.py", "import time\nprint('thinking', flush=True)\ntime.sleep(300)\n")
    paths = start_session(home, "live", agent="command", command=cmd, budget_s=300)
    wait_event(paths, "agent_started", timeout=60)
    try:
        record = {**json.loads(paths.launcher.read_text()), "state": "running", "gpu": "0"}
        write_record(paths, record)
        as_if_the_clock_stepped(paths, CLOCK_STEP_S)
        assert reconcile(paths) is None  # the ingester, the --plain follower, the study's survey
        assert QueueDaemon(home)._settle(paths, record) is False  # the GPU stays booked
        planned = Planned(agent="command", task="t0", repeat=1, config=paths.read_config())
        assert classify(paths, planned, max_attempts=3).state == "running"  # not moved aside and relaunched
    finally:
        from runner.launch.abort import abort_session

        abort_session(paths, wait_s=60)


def test_the_lock_goes_with_the_runner_not_with_the_processes_it_started(holder):
    from runner.wire.liveness import runner_alive

    paths, proc, child = holder
    paths.events.write_text("")
    proc.kill()
    proc.wait()
    assert psutil.pid_exists(child)  # its child lives on (close-on-exec: it never had the lock)
    assert runner_alive(paths) is False
    assert reconcile(paths).startswith(f"runner (pid {proc.pid} on ") and "died before the session ended" in reconcile(paths)


def test_a_second_runner_for_a_live_session_is_refused(holder):
    from runner.wire.liveness import RunnerAlreadyRunning, RunnerLock

    paths, proc, _ = holder
    with pytest.raises(RunnerAlreadyRunning, match="already has a live runner"):
        RunnerLock.take(paths, wait_s=0.2)


@pytest.mark.slow
def test_a_runner_still_starting_is_alive_and_one_that_died_before_its_lock_is_not(home):
    """Between the launch and the lock (seconds of Python imports) the launcher's record speaks:
    pid, boot id and start ticks. A zombie (its parent, `onegc run`, has not reaped it) has ended."""
    from runner.wire.liveness import launch_record, runner_alive

    paths = create_session(SessionConfig(session_id="starting", task="t0", agent="scripted", budget_s=60), home)
    proc = subprocess.Popen(["sleep", "300"])
    write_record(paths, {"kind": "local", **launch_record(proc.pid)})
    assert runner_alive(paths) is True
    proc.kill()
    while psutil.Process(proc.pid).status() != psutil.STATUS_ZOMBIE:
        time.sleep(0.01)
    assert runner_alive(paths) is False
    assert "died before the session started" in reconcile(paths)
    proc.wait()


def test_a_pid_reused_by_another_process_is_not_the_runner(home):
    from runner.wire.liveness import ProcessId, launch_record, runner_alive

    paths = create_session(SessionConfig(session_id="reused", task="t0", agent="scripted", budget_s=60), home)
    record = launch_record(os.getpid())  # a live process, but not the one that was started
    record["start_ticks"] -= 1
    write_record(paths, {"kind": "local", **record})
    assert runner_alive(paths) is False
    assert ProcessId.of(os.getpid()).alive()


def test_the_runner_notices_its_folder_is_gone(home):
    import shutil

    from runner.wire.liveness import RunnerLock

    paths = create_session(SessionConfig(session_id="doomed", task="t0", agent="scripted", budget_s=60), home)
    with RunnerLock.take(paths) as lock:
        assert lock.in_place()
        shutil.rmtree(paths.root)
        assert not lock.in_place()
        paths.root.mkdir()
        (paths.root / "runner.lock").write_text("")  # another folder of that name is not ours either
        assert not lock.in_place()
