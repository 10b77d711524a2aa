"""The GPU contention guard (runner/session/contention.py): a foreign process on the session's GPU (the
fake NVML lists it) marks the session's conditions as contended; the agent's own GPU processes do
not; history marks a cell that pools contended and clean sessions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from runner.sandbox.bwrap import status
from runner.session import contention, fake_nvml
from tests.helpers import events, start_session, wait_event, write_agent

AGENT = """
import subprocess, sys, time
subprocess.run([sys.executable, "train.py"], check=True)  # the t0 baseline: a checkpoint in seconds
time.sleep(7)  # a few polls of the guard while the agent still runs
"""


def watch(monkeypatch, own=frozenset(), **env):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return contention.ContentionWatch(fake_nvml, [(0, 0)], lambda: set(own), None, "s")


def test_foreign_processes_memory_throttling_and_clock_drops_each_give_a_reason(monkeypatch):
    me = os.getpid()  # the runner itself: never foreign
    w = watch(monkeypatch, ONEGC_FAKE_GPU_PROCS=f"0:{me}:2048", ONEGC_FAKE_GPU_MEM_MB="300")
    w.start()
    w.poll({0: 90.0}, 5.0)
    assert not w.summary()["contended"] and w.summary()["reasons"] == []  # its own process, 300 MB: clean
    w = watch(monkeypatch, ONEGC_FAKE_GPU_PROCS="0:1:2048", ONEGC_FAKE_GPU_MEM_MB="5000")  # pid 1: someone else's
    w.start()
    summary = w.summary()
    assert summary["contended"] and summary["foreign_processes"][0]["pid"] == 1
    assert summary["foreign_processes"][0]["mem_mb"] == 2048.0
    assert any("foreign process" in r for r in summary["reasons"])
    assert any("GPU memory in use at start: GPU 0 5000 MB" in r for r in summary["reasons"])
    w = watch(monkeypatch, own={1}, ONEGC_FAKE_GPU_PROCS="0:1:2048", ONEGC_FAKE_GPU_MEM_MB="0")
    w.start()
    assert not w.summary()["contended"]  # pid 1 in the session's own tree: not foreign
    w = watch(monkeypatch, ONEGC_FAKE_GPU_PROCS="0:4194000:64", ONEGC_FAKE_GPU_MEM_MB="0", ONEGC_FAKE_GPU_THROTTLE="0x4",
              ONEGC_FAKE_GPU_CLOCK_MHZ="1200")  # a pid that does not run: NVML would not list it
    w.start()
    for _ in range(10):
        w.poll({0: 95.0}, 5.0)  # at the power cap, clocks down: normal under full load
    assert not w.summary()["contended"] and w.summary()["throttle_s"] == {"sw_power_cap": 50.0}
    monkeypatch.setenv("ONEGC_FAKE_GPU_THROTTLE", str(0x40 | 0x4))  # hardware thermal slowdown
    for _ in range(10):
        w.poll({0: 95.0}, 5.0)
    reasons = w.summary()["reasons"]
    assert any(r.startswith("throttled: hw_thermal_slowdown 50 s") for r in reasons), reasons
    assert any(r.startswith("SM clock under 80%") for r in reasons), reasons
    assert w.summary(pauses=2, paused_s=30.0)["reasons"][-1] == "paused by the operator 2 time(s), 30 s in all"


def test_an_nvml_without_the_calls_is_noted_not_fatal():
    broken = SimpleNamespace(nvmlDeviceGetMemoryInfo=lambda h: (_ for _ in ()).throw(RuntimeError("not supported")))
    w = contention.ContentionWatch(broken, [(0, 0)], set, None, "s")
    w.start()
    w.poll({0: 99.0}, 5.0)
    summary = w.summary()
    assert not summary["contended"] and summary["problems"][0] == "memory: RuntimeError: not supported"
    assert any(p.startswith("clocks: AttributeError") for p in summary["problems"])  # each missing call once


@pytest.mark.slow
@pytest.mark.skipif(not status().ok, reason=f"no sandbox here: {status().detail}")
def test_a_foreign_process_on_the_sessions_gpu_marks_its_contract_contended(home, tmp_path, monkeypatch):
    from onegc_tui.cli.main import main

    monkeypatch.setenv("ONEGC_NVML_MODULE", "runner.session.fake_nvml")
    monkeypatch.setenv("ONEGC_FAKE_GPUS", "1")
    monkeypatch.setenv("ONEGC_FAKE_GPU_MEM_MB", "0")
    # a name of this test's own: the fake NVML puts every process whose command line holds it on the
    # GPU, and another suite beside this one runs this same test
    marker = f"gpu_agent_{uuid.uuid4().hex[:12]}"
    cmd = write_agent(tmp_path, f"{marker}.py", AGENT)
    # the agent's own processes are on the GPU in both sessions: they are the session's, not foreign
    monkeypatch.setenv("ONEGC_FAKE_GPU_PROCS", f"0:cmd={marker}:512")
    clean = start_session(home, "clean", agent="command", command=cmd, gpu="0", budget_s=120)
    assert wait_event(clean, "session_ended", timeout=300)["reason"] == "completed"
    foreign = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
    try:
        monkeypatch.setenv("ONEGC_FAKE_GPU_PROCS", f"0:cmd={marker}:512,0:{foreign.pid}:4096")
        busy = start_session(home, "busy", agent="command", command=cmd, gpu="0", budget_s=120)
        assert wait_event(busy, "session_ended", timeout=300)["reason"] == "completed"
    finally:
        foreign.kill()
        foreign.wait()

    clean_cond = next(e for e in events(clean) if e["type"] == "conditions")
    busy_cond = next(e for e in events(busy) if e["type"] == "conditions")
    assert clean_cond["contended"] is False and not clean_cond.get("foreign_processes"), clean_cond
    assert busy_cond["contended"] is True, busy_cond
    assert [p["pid"] for p in busy_cond["foreign_processes"]] == [foreign.pid]
    assert busy_cond["foreign_processes"][0]["mem_mb"] == 4096.0
    assert json.loads(busy.result.read_text())["conditions"]["contended"] is True
    assert json.loads(clean.result.read_text())["conditions"]["contended"] is False

    out = CliRunner().invoke(main, ["history", "--format", "json", "--no-paper", "--demo"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    cell = next(r["cells"]["t0"] for s in data["studies"] for r in s["rows"] if "t0" in r["cells"])
    assert cell["n_contended"] == 1 and cell["n_clean"] == 1 and cell["mixed_conditions"]
    table = CliRunner().invoke(main, ["history", "--no-paper", "--demo"]).output
    assert "§1" in table and "n of its sessions ran contended" in table


WAIT_FOR_GO = """
import pathlib, time
for _ in range(1200):  # until the test says go (at most 2 minutes): the other session starts and ends meanwhile
    if pathlib.Path("go").exists():
        break
    time.sleep(0.1)
"""


@pytest.mark.slow
def test_two_overlapping_sessions_both_record_the_other(home, tmp_path):
    """Issue 50: of two overlapping sessions only the later one listed the other (the first polled
    at its start, before the second, and the second had ended, result.json written, before the
    first's end). Now the first reads, at its end, the finished sessions that recorded it."""
    from onegc_tui.cli.main import main

    first = start_session(home, "first", agent="command", command=write_agent(tmp_path, "wait.py", WAIT_FOR_GO),
                          budget_s=180)
    wait_event(first, "agent_started", timeout=120)
    second = start_session(home, "second", agent="command", command=write_agent(tmp_path, "quick.py", "pass\n"),
                           budget_s=60)
    wait_event(second, "session_ended", timeout=120)
    (first.workspace / "go").write_text("")
    wait_event(first, "session_ended", timeout=120)
    cond = {p.session_id: next(e for e in events(p) if e["type"] == "conditions") for p in (first, second)}
    assert cond["second"]["other_sessions"] == ["first"], cond["second"]
    assert cond["first"]["other_sessions"] == ["second"], cond["first"]  # it was []
    assert cond["first"]["contended"] is True and "shared the host with 1 other session(s)" in cond["first"]["reasons"]
    # every view: the plain table marks both, its JSON says so, history counts both
    table = CliRunner().invoke(main, ["sessions"], catch_exceptions=False).output
    marked = [line for line in table.splitlines() if line.startswith(("first ", "second "))]
    assert len(marked) == 2 and all(contention_mark in line for line in marked for contention_mark in "§"), table
    assert "§: ran contended" in table
    rows = json.loads(CliRunner().invoke(main, ["sessions", "--json"], catch_exceptions=False).output)
    assert {r["session_id"]: r["contended"] for r in rows} == {"first": 1, "second": 1}
    history = CliRunner().invoke(main, ["history", "--no-paper", "--demo"]).output
    assert "§2" in history, history
