"""The sealed agent (../shared/INTEGRITY.md A1-A9): each attack is a real session of the command agent
running ``hostile.py``, which tries it from inside its sandbox. Each test asserts that the
attack got nothing and that the record (``events.jsonl``, ``result.json``, the store, other
sessions, the install) is what the runner alone made it."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sys
import threading
from pathlib import Path

import pytest

from onegc_tui.store import Store
from onegc_tui.store.ingest import Ingester
from runner.sandbox.bwrap import status
from tests.helpers import REPO, events, start_session, wait_event

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not status().ok, reason=f"no sandbox here: {status().detail}")]

HOSTILE = Path(__file__).with_name("hostile.py")
SECRET = b"HELD-OUT-LABELS-4242"


def attack(home: Path, sid: str, name: str, *args: str, **fields):
    """Run ``hostile.py name args`` as a session's agent; returns (paths, findings, session_ended)."""
    fields.setdefault("budget_s", 90)
    paths = start_session(home, sid, agent="command", command=[sys.executable, str(HOSTILE), name, *args], **fields)
    ended = wait_event(paths, "session_ended", timeout=fields["budget_s"] + 90)
    findings = json.loads((paths.workspace / "findings.json").read_text())
    return paths, findings, ended


def honest_session(home: Path, sid: str):
    paths, findings, ended = attack(home, sid, "honest")
    assert ended["reason"] == "completed" and ended["score"] is not None, (ended, findings)
    return paths


def ingest(home: Path) -> Store:
    store = Store.open(home)
    Ingester(home, store).ingest_all()
    return store


def digest(*paths: Path) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.read_bytes())
    return h.hexdigest()


def assert_sealed_view(findings: dict, sid: str) -> None:
    """What the agent sees of the host: its workspace and agent home, nothing else of onegc."""
    facts = findings["facts"]
    assert facts["uid"] == 1000 and int(facts["cap_eff"], 16) == 0, facts
    assert facts["home_visible"] == ["runs"] and facts["runs_visible"] == [sid], facts
    assert set(facts["session_visible"]) <= {"workspace", "agent_home"}, facts
    assert len(facts["proc_pids"]) < 10, facts  # its own tree, not the host's processes


def assert_blocked(findings: dict, *names: str) -> None:
    assert not findings["got"], findings["got"]
    assert set(names) <= set(findings["blocked"]), findings


@pytest.fixture
def secrets_home(home: Path) -> Path:
    """A home whose data folder also holds held-out labels and a raw download, as T4-T6's do."""
    (home / "data" / "t0_demo" / "test_y.npy").write_bytes(SECRET)
    raw = home / "data" / "_downloads" / "t0_demo"
    raw.mkdir(parents=True)
    (raw / "raw.csv").write_bytes(SECRET)
    return home


def test_a1_held_out_labels_and_raw_downloads_are_not_there(secrets_home):
    paths, findings, ended = attack(secrets_home, "a1", "labels", "t0_demo", "test_y.npy", "raw.csv")
    assert_blocked(findings, "private labels", "raw download", "list data", "store", "via pid 1 root")
    assert_sealed_view(findings, "a1")
    assert SECRET not in paths.agent_stdout.read_bytes()
    assert ended["reason"] == "completed"


def test_a2_the_installed_evaluator_cannot_be_written_or_even_read(home):
    files = [REPO / "tasks" / "t0_demo" / "prepare.py", REPO / "tasks" / "onegc_kit.py"]
    before = digest(*files)
    paths, findings, _ = attack(home, "a2", "evaluator", str(REPO))
    assert_blocked(findings, "write prepare.py", "write onegc_kit.py", "read runner source")
    assert digest(*files) == before


def test_a3_to_a5_the_record_is_the_runners_alone(home):
    paths, findings, ended = attack(home, "a3", "record")
    assert_blocked(findings, "forge events", "pause the clock", "garbage session.json", "write result.json",
                   "100 MB line", "replace session folder entries")
    lines = paths.events.read_bytes().splitlines()
    recorded = [json.loads(line) for line in lines]  # every line whole and the runner's
    assert [e["seq"] for e in recorded] == list(range(1, len(recorded) + 1))
    assert all(e["session_id"] == "a3" for e in recorded)
    assert not any(e["type"] == "budget" and e["state"] == "paused" for e in recorded)
    assert ended["reason"] == "completed" and ended["detail"] == "the agent finished"
    assert json.loads(paths.config.read_text())["session_id"] == "a3"
    result = json.loads(paths.result.read_text())
    assert result["value"] is None and result["failure"] == "no checkpoint was saved"
    store = ingest(home)
    row = store.session("a3")
    warned = [e["code"] for e in recorded if e["type"] == "warning"]
    assert set(warned) <= {"no_gpu"}  # this machine's only complaint; nothing about the record
    assert row["state"] == "ended" and row["score"] is None and row["warnings"] == len(warned)
    assert store.count_events("a3") == len(lines)
    store.close()


def test_a6_an_earlier_repeat_is_out_of_reach(home):
    first = honest_session(home, "r1")
    result_before = first.result.read_bytes()
    paths, findings, ended = attack(home, "r2", "other", str(first.root))
    assert_blocked(findings, "list other", "read other transcript", "read other code", "steal other checkpoint",
                   "rewrite other result")
    assert first.result.read_bytes() == result_before
    assert json.loads(paths.result.read_text())["checkpoints_found"] == 0
    store = ingest(home)
    assert store.session("r1")["score"] == json.loads(result_before)["value"]
    store.close()


def test_a7_checkpoints_as_a_link_to_another_session_are_not_followed(home):
    first = honest_session(home, "s1")
    result_before = first.result.read_bytes()
    paths, findings, ended = attack(home, "s2", "ckpt_symlink", str(first.root))
    assert "symlink checkpoints" in findings["got"]  # its own folder: the agent may make a link there...
    found = [e for e in events(paths) if e["type"] == "checkpoint_found"]
    assert found == []  # ...but the runner never reads through it
    warnings = [e["message"] for e in events(paths) if e["type"] == "warning" and e["code"] == "checkpoint"]
    assert any("not a folder" in w for w in warnings), warnings
    result = json.loads(paths.result.read_text())
    assert result["value"] is None and result["checkpoints_found"] == 0
    assert first.result.read_bytes() == result_before


def test_a7_fifo_folder_link_and_backdated_checkpoints_are_skipped_and_the_watcher_goes_on(home):
    paths, findings, ended = attack(home, "sp", "ckpt_special", budget_s=60)
    assert ended["reason"] == "completed"  # no hang on the FIFO, after the budget or before
    warnings = " | ".join(e["message"] for e in events(paths) if e["type"] == "warning" and e["code"] == "checkpoint")
    for name in ("fifo.pt is a FIFO", "folder.pt is a folder", "link.pt is a symbolic link", "backdated.pt is dated before"):
        assert name in warnings, warnings
    found = {e["name"] for e in events(paths) if e["type"] == "checkpoint_found"}
    assert found == {"old-1", "after-1"}, found  # the honest ones, before and after the hostile entries
    scored = {e["name"]: e for e in events(paths) if e["type"] == "checkpoint_scored" and not e["official"]}
    assert scored["after-1"]["value"] is not None, scored


@pytest.fixture
def loopback_secret():
    """A host service on 127.0.0.1 (the host's network namespace) that gives out a secret."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.sendall(SECRET)
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    yield port
    server.close()


def test_a8_the_runner_and_the_host_are_invisible_and_unreachable(home, loopback_secret):
    host_pid = os.getpid()  # a process outside the sandbox, as the runner is
    paths, findings, ended = attack(home, "a8", "proc", str(host_pid), str(loopback_secret), network="none")
    assert_blocked(findings, "signal runner", "open runner netns", "nsenter runner", "nsenter init", "host loopback",
                   "runner in /proc", "new user namespace root")
    assert_sealed_view(findings, "a8")
    assert SECRET not in paths.agent_stdout.read_bytes()


def test_a9_only_the_assigned_gpu_is_device_0(home, monkeypatch):
    monkeypatch.setenv("ONEGC_NVML_MODULE", "runner.session.fake_nvml")
    monkeypatch.setenv("ONEGC_FAKE_GPUS", "4")
    paths, findings, ended = attack(home, "a9", "gpu", gpu="2")
    assert findings["facts"]["cuda_visible"] == "GPU-fake-2"  # the assigned GPU by UUID: index 0 inside
    assert not [d for d in findings["facts"]["dev"] if d.startswith("nvidia")]  # this machine has no nodes
    started = next(e for e in events(paths) if e["type"] == "session_started")
    assert started["contract"]["sealed"] is True and [g["index"] for g in started["contract"]["gpu"]] == [2]


def test_unsealed_the_same_agent_reads_the_labels_and_it_is_on_the_record(secrets_home):
    """What --unsealed gives up (and proof that the attack script works when nothing stops it)."""
    paths, findings, _ = attack(secrets_home, "u1", "labels", "t0_demo", "test_y.npy", "raw.csv", sealed=False)
    assert {"private labels", "raw download", "list data"} <= set(findings["got"])
    assert SECRET.decode() in findings["got"]["private labels"]
    started = next(e for e in events(paths) if e["type"] == "session_started")
    assert started["contract"]["sealed"] is False
