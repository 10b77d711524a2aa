"""Real sessions: a real runner process, real agents (scripted or a command), real torch on CPU."""

from __future__ import annotations

import json
import os
import signal
import time

import psutil
import pytest

from onegc_tui.results.export import sessions_csv
from onegc_tui.store import Store
from onegc_tui.store.ingest import Ingester
from onegc_tui.views import monitor_data
from runner.wire.control import request
from tests.helpers import (
    ROOMY_BUDGET_S,
    cpu_seconds,
    events,
    start_session,
    tree_pids,
    wait_event,
    wait_for,
    write_agent,
)

pytestmark = pytest.mark.slow

BUSY_AGENT = """
import subprocess, sys, time
from pathlib import Path
Path("run_busy.py").write_text("x = 0\\nwhile True:\\n    x += 1\\n")
# like a real agent CLI's tool: a new session (setsid), so a process group signal misses it
subprocess.Popen([sys.executable, "run_busy.py"], start_new_session=True)
print("started a busy training script", flush=True)
while True:
    time.sleep(0.05)
"""

STUBBORN_AGENT = """
import signal, subprocess, sys, time
from pathlib import Path
for s in (signal.SIGINT, signal.SIGTERM):
    signal.signal(s, signal.SIG_IGN)
Path("run_stubborn.py").write_text(
    "import signal, time\\nfor s in (signal.SIGINT, signal.SIGTERM):\\n    signal.signal(s, signal.SIG_IGN)\\n"
    "while True:\\n    time.sleep(0.1)\\n")
subprocess.Popen([sys.executable, "run_stubborn.py"], start_new_session=True)
print("ignoring SIGINT and SIGTERM", flush=True)
while True:
    time.sleep(0.1)
"""


@pytest.mark.timeout(900)  # the wait below outlasts the suite's 300 s default: budget, grace, official phase
def test_scripted_session_end_to_end(home):
    paths = start_session(home, "demo1", budget_s=ROOMY_BUDGET_S)
    ended = wait_event(paths, "session_ended", timeout=600)
    assert ended["reason"] == "completed"
    scored = [e for e in events(paths) if e["type"] == "checkpoint_scored" and not e["official"]]
    values = [e["value"] for e in scored if e.get("value") is not None]
    assert len(values) >= 2 and max(values) > values[0] + 0.2, values  # the edits really improve the score
    result = json.loads(paths.result.read_text())
    assert result["value"] == pytest.approx(max(values), abs=1e-6) and result["failure"] is None
    assert ended["score"] == result["value"]
    unofficial = result["unofficial"]["test_best"]  # every checkpoint re-evaluated for it, labelled
    assert unofficial["label"].startswith("unofficial") and unofficial["complete"]
    # t0 scores val: no extra evaluation, the live scores serve where no re-evaluation replaced them
    assert unofficial["checkpoints_scored"] == result["checkpoints_found"] > len(result["evaluated"])
    official = {r["checkpoint"]: r["official"] for r in result["evaluated"]}
    live = {e["name"]: e["value"] for e in scored}
    assert unofficial["value"] == max(official.get(name, v) for name, v in live.items() if v is not None)
    transcript = [e for e in events(paths) if e["type"] == "transcript"]
    assert {"text", "tool_call", "tool_result"} <= {e["kind"] for e in transcript}
    started = [e for e in events(paths) if e["type"] == "process" and e["action"] == "started"]
    assert {e["script"] for e in started} == {"run_1.py", "run_2.py", "run_3.py"}  # t0 lists three edits

    store = Store.open(home)
    Ingester(home, store).ingest_all()
    row = store.session("demo1")
    assert row["state"] == "ended" and row["score"] == pytest.approx(result["value"])
    assert row["scripts_launched"] == 3 and row["n_checkpoints"] == result["checkpoints_found"]
    assert store.count_events("demo1") == len(paths.events.read_text().splitlines())
    (outcome,) = monitor_data.outcomes(store, include_demo=True)
    assert outcome.unofficial_test_best == pytest.approx(unofficial["value"])
    assert "unofficial_test_best" in sessions_csv([outcome]).splitlines()[0]
    store.close()


QUICK = "echo 'print(1)' > run_q.py; for i in 1 2 3; do python run_q.py; done; echo done"


def test_every_script_launch_is_counted_however_short(home):
    """Three instant launches: a once-a-second scan of the tree would see none or one."""
    paths = start_session(home, "quick1", agent="command", command=["sh", "-c", QUICK], budget_s=60)
    ended = wait_event(paths, "session_ended", timeout=90)
    assert ended["reason"] == "completed", ended
    procs = [(e["action"], e["script"]) for e in events(paths) if e["type"] == "process"]
    assert sorted(procs) == [("ended", "run_q.py")] * 3 + [("started", "run_q.py")] * 3
    store = Store.open(home)
    try:
        Ingester(home, store).ingest_all()
        assert store.session("quick1")["scripts_launched"] == 3
    finally:
        store.close()


# the agent: a word, a 4 s tool (its own session, as the CLIs start tools), a word, then 5 s of
# silence without a tool: the only wait on "the model" longer than stall_s
STALLING = "echo hello; setsid -w sleep 4; echo mid; sleep 5; echo bye"


def test_a_stall_is_waiting_on_the_model_not_running_a_tool(home):
    paths = start_session(home, "stall1", agent="command", command=["sh", "-c", STALLING], budget_s=60, stall_s=2)
    ended = wait_event(paths, "session_ended", timeout=90)
    assert ended["reason"] == "completed", ended
    evs = events(paths)
    stalls = [e for e in evs if e["type"] == "warning" and e["code"] == "stall"]
    mid = next(e for e in evs if e["type"] == "transcript" and e["text"] == "mid")
    assert len(stalls) == 1 and stalls[0]["seq"] > mid["seq"], stalls  # none while the tool ran
    assert stalls[0]["message"].startswith("no model response for") and "runs no tool" in stalls[0]["message"]


def test_pause_freezes_the_whole_tree_and_the_clock_then_resume_and_abort(home, tmp_path):
    cmd = write_agent(tmp_path, "busy_agent.py", BUSY_AGENT)
    paths = start_session(home, "pause1", agent="command", command=cmd, budget_s=120, grace_s=6)
    wait_event(paths, "process", action="started", script="run_busy.py", timeout=30)
    pids = wait_for(lambda: tree_pids(paths) if len(tree_pids(paths)) >= 2 else None, 10, "the agent's tree")

    request(paths, "pause", source="test")
    paused = wait_event(paths, "budget", state="paused", timeout=10)
    assert wait_event(paths, "control", action="pause")["accepted"]
    before = cpu_seconds(pids)
    time.sleep(1.5)
    assert cpu_seconds(pids) - before < 0.05, "a process of the tree used CPU while paused"
    for pid in pids:  # every process, the setsid'd training script included, is frozen or stopped
        assert psutil.Process(pid).status() in (psutil.STATUS_STOPPED, psutil.STATUS_DISK_SLEEP, "frozen")

    request(paths, "resume", source="test")
    resumed = wait_event(paths, "budget", state="resumed", timeout=10)
    assert resumed["remaining_s"] == pytest.approx(paused["remaining_s"], abs=0.5)  # the clock stood still
    before = cpu_seconds(pids)  # the busy script runs again: waited for, however loaded the machine
    wait_for(lambda: cpu_seconds(pids) - before > 0.2, 60, "the tree to run again after resume")

    t0 = time.monotonic()
    request(paths, "abort", source="test")
    ended = wait_event(paths, "session_ended", timeout=30)
    assert ended["reason"] == "aborted"
    assert time.monotonic() - t0 < 6 + 10  # grace + official scoring slack
    assert not tree_pids(paths)


def test_deadline_ends_an_agent_that_ignores_sigint_and_sigterm(home, tmp_path):
    cmd = write_agent(tmp_path, "stubborn.py", STUBBORN_AGENT)
    paths = start_session(home, "dl1", agent="command", command=cmd, budget_s=4, grace_s=2)
    wait_event(paths, "process", action="started", timeout=30)
    ended = wait_event(paths, "session_ended", timeout=40)
    assert ended["reason"] == "budget_exhausted"
    assert ended["active_s"] < 4 + 2 + 3
    assert wait_event(paths, "budget", state="expired")
    assert not tree_pids(paths)
    result = json.loads(paths.result.read_text())
    assert result["value"] is None and result["failure"] == "no checkpoint was saved"


GRACEFUL_AGENT = """
import os, signal, sys, time
def done(signum, _frame):
    print(f"got {signal.Signals(signum).name} as uid {os.getuid()}", flush=True)
    sys.exit(0)
signal.signal(signal.SIGINT, done)
print("waiting for the deadline", flush=True)
while True:
    time.sleep(0.1)
"""


def test_the_deadlines_sigint_reaches_a_sealed_agent_through_its_init(home, tmp_path):
    """The sandbox's init (runner/sandbox/nsinit.py) forwards the runner's graceful SIGINT to the
    agent, another uid where the runner is root: without CAP_KILL every forward failed with EPERM
    and the init died with a traceback, so no agent ever saw it."""
    cmd = write_agent(tmp_path, "graceful.py", GRACEFUL_AGENT)
    paths = start_session(home, "sigint", agent="command", command=cmd, budget_s=4, grace_s=10)
    ended = wait_event(paths, "session_ended", timeout=60)
    said = [e["text"] for e in events(paths) if e["type"] == "transcript" and e.get("text", "").startswith("got ")]
    assert said and said[0].startswith("got SIGINT"), (said, ended)
    assert ended["active_s"] < 4 + 10  # it ended on the SIGINT, not at the end of the grace
    stderr = paths.root / "agent.stderr.log"
    assert "Traceback" not in (stderr.read_text() if stderr.exists() else "")


def test_kill_9_of_the_runner_takes_the_tree_down_and_ingest_marks_it_failed(home, tmp_path):
    cmd = write_agent(tmp_path, "busy_agent.py", BUSY_AGENT)
    paths = start_session(home, "k9", agent="command", command=cmd, budget_s=ROOMY_BUDGET_S)
    wait_event(paths, "process", action="started", timeout=30)
    assert tree_pids(paths)
    runner_pid = json.loads(paths.runner_info.read_text())["pid"]
    os.kill(runner_pid, signal.SIGKILL)
    wait_for(lambda: not tree_pids(paths), 10, "the agent's tree to die with its runner")
    store = Store.open(home)
    ingester = Ingester(home, store)
    ingester.ingest_all()
    # the tree gets its death signal as the runner's threads exit; the kernel drops the runner's
    # lock once the last of them has (one in an fsync under load takes a while): until then it lives
    failed = wait_for(ingester.check_liveness, 30, "the ingester to see that the runner is gone")
    assert failed == ["k9"]
    row = store.session("k9")
    assert row["state"] == "failed" and "runner" in row["end_detail"]
    store.close()


COMPILED_AGENT = """
import subprocess, sys
from pathlib import Path
Path("run_compiled.py").write_text('''
import torch.nn as nn
import prepare
from train import build_model

class Compiled(nn.Module):  # what torch.compile returns: the model under `_orig_mod`
    def __init__(self, m):
        super().__init__()
        self._orig_mod = m

config = {"hidden": 16}
prepare.save_checkpoint(Compiled(build_model(config)), config, "compiled")
prepare.save_checkpoint(build_model(config), config, "plain")
''')
Path("run_crash.py").write_text("raise RuntimeError('CUDA out of memory (simulated)')\\n")
for script in ("run_compiled.py", "run_crash.py"):
    out = subprocess.run([sys.executable, script], capture_output=True, text=True)
    print(f"$ python {script} -> exit {out.returncode}", flush=True)
    print(out.stdout + out.stderr, flush=True)
"""


def test_compiled_checkpoint_and_crashing_script_are_reported_not_fatal(home, tmp_path):
    cmd = write_agent(tmp_path, "compiled_agent.py", COMPILED_AGENT)
    paths = start_session(home, "cc1", agent="command", command=cmd, budget_s=ROOMY_BUDGET_S)
    ended = wait_event(paths, "session_ended", timeout=90)
    assert ended["reason"] == "completed"
    scored = {e["name"]: e for e in events(paths) if e["type"] == "checkpoint_scored" and not e["official"]}
    assert "_orig_mod." in scored["compiled-1"]["error"]
    assert scored["plain-1"]["value"] is not None
    text = "\n".join(e.get("text", "") for e in events(paths) if e["type"] == "transcript")
    assert "exit 1" in text and "CUDA out of memory (simulated)" in text
    assert ended["score"] == scored["plain-1"]["value"]


NET_AGENT = """
import socket
for host in ("example.com", "10.1.2.3"):
    try:  # the gate may complete the handshake, then resets: only data coming back counts
        s = socket.create_connection((host, 443), timeout=3)
        s.sendall(b"GET / HTTP/1.0\\r\\n\\r\\n")
        print("REACHED" if s.recv(100) else "blocked", host)
    except OSError as exc:
        print("blocked", host, exc)
"""


def test_network_policy_none_blocks_and_records_every_attempt(home, tmp_path):
    from runner.sandbox.network import namespaces_available

    ok, why = namespaces_available()
    if not ok:
        pytest.skip(f"network namespaces unavailable here: {why}")
    cmd = write_agent(tmp_path, "net_agent.py", NET_AGENT)
    paths = start_session(home, "net1", agent="command", command=cmd, budget_s=60, network="none")
    assert wait_event(paths, "session_ended", timeout=90)["reason"] == "completed"
    text = "\n".join(e.get("text", "") for e in events(paths) if e["type"] == "transcript")
    assert "REACHED" not in text and "blocked example.com" in text and "blocked 10.1.2.3" in text
    blocked = [e["message"] for e in events(paths) if e["type"] == "warning" and e["code"] == "network_blocked"]
    assert any("example.com:53" in m for m in blocked) and any("10.1.2.3:443" in m for m in blocked)
    contract = next(e for e in events(paths) if e["type"] == "session_started")["contract"]
    assert contract["network"] == "none" and contract["network_allowed"] == []
