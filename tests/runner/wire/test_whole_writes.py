"""Writes that cannot half-happen (issue 13, "Disk full"): a line lands whole or not at all, a
full disk is noticed and answered, and a stream the runner copies is never stopped by its copy.

A filling disk gives a short write, then ENOSPC. A file-size limit (RLIMIT_FSIZE) gives exactly
the same to a process — a short write up to the limit, then EFBIG — without root, so these run
everywhere; the reserve's test uses a real tmpfs where one can be mounted.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers import REPO

LIMIT = 4096 + 37  # the limit falls inside a line


def run_limited(code: str, *args: str, limit: int = LIMIT) -> dict:
    """Run ``code`` in a Python child whose files may not grow past ``limit`` bytes (the soft
    limit: the child may lift it); returns the JSON object it prints last."""
    def limit_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))

    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True,
                         cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, preexec_fn=limit_files, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def whole_lines(path: Path) -> list[dict]:
    data = path.read_bytes()
    assert data.endswith(b"\n"), f"{path} ends inside a line: {data[-60:]!r}"
    return [json.loads(line) for line in data.splitlines()]


@pytest.mark.slow
def test_an_event_line_is_written_whole_or_not_at_all(tmp_path):
    """Before: the short write was not checked, and events.jsonl ended in a cut-off line."""
    path = tmp_path / "events.jsonl"
    run_limited("""
        import json, sys
        from pathlib import Path
        from runner.wire.jsonl import EventWriter
        w = EventWriter(Path(sys.argv[1]), "s", clock=lambda: 1.0)
        failures = 0
        for i in range(100):
            try:
                w.emit("warning", code="x", message="m" * 60 + str(i))
            except OSError:
                failures += 1
        print(json.dumps({"failures": failures}))
    """, str(path))
    lines = whole_lines(path)
    assert 0 < len(lines) < 100 and path.stat().st_size <= LIMIT
    assert [e["seq"] for e in lines] == list(range(1, len(lines) + 1))


@pytest.mark.slow
def test_a_full_disk_holds_essential_events_drops_routine_ones_and_writes_them_once_there_is_room(tmp_path):
    path = tmp_path / "events.jsonl"
    result = run_limited("""
        import json, resource, sys
        from pathlib import Path
        from runner.wire.jsonl import EventWriter
        path = Path(sys.argv[1])
        told = []
        w = EventWriter(path, "s", clock=lambda: 1.0, on_no_space=told.append)
        for i in range(100):
            w.emit("checkpoint_found", name=f"c-{i}", path="p", snapshot="s", budget_elapsed_s=float(i))
            w.emit("heartbeat", remaining_s=5, active_s=1)
        full_at = path.stat().st_size
        resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))  # room again
        w.release_held()
        w.emit("session_ended", reason="harness_error", detail="disk full", active_s=1, wall_s=1, paused_s=0)
        print(json.dumps({"told": [e.path for e in told], "dropped": dict(w.dropped), "full_at": full_at}))
    """, str(path))
    assert result["told"] == [str(path)]  # told once, naming the file
    assert result["full_at"] <= LIMIT
    lines = whole_lines(path)
    assert [e["seq"] for e in lines] == list(range(1, len(lines) + 1))  # no gap, no repeat
    found = [e["name"] for e in lines if e["type"] == "checkpoint_found"]
    assert found == [f"c-{i}" for i in range(100)]  # every essential event, in order
    beats = sum(e["type"] == "heartbeat" for e in lines)
    assert result["dropped"] == {"heartbeat": 100 - beats} and beats < 100
    assert lines[-1]["type"] == "session_ended"


@pytest.mark.slow
def test_control_requests_append_whole_lines(tmp_path):
    path = tmp_path / "control.jsonl"
    result = run_limited("""
        import json, sys
        from pathlib import Path
        from runner.wire.jsonl import append_json_line
        failures = 0
        for i in range(100):
            try:
                append_json_line(Path(sys.argv[1]), {"id": str(i), "action": "pause", "pad": "p" * 60})
            except Exception as exc:
                failures += 1
                kind = type(exc).__name__
        print(json.dumps({"failures": failures, "kind": kind}))
    """, str(path))
    assert [r["id"] for r in whole_lines(path)] == [str(i) for i in range(100 - result["failures"])]
    assert result["failures"] > 0 and result["kind"] == "DiskFull"


@pytest.mark.slow
def test_the_agents_output_is_read_to_its_end_when_its_copy_finds_no_room(tmp_path):
    """Before: the runner's stdout pump died on the failed write, the pipe filled and the agent
    blocked on its next print. The copy (RawLog) stops; the reading does not."""
    path = tmp_path / "agent.stdout.jsonl"
    result = run_limited("""
        import json, subprocess, sys
        from pathlib import Path
        from runner.wire.jsonl import RawLog
        writer = "import sys\\nfor i in range(40000):\\n    sys.stdout.write(f'{i:09d} ' + 'x' * 90 + '\\\\n')\\n"
        agent = subprocess.Popen([sys.executable, "-c", writer], stdout=subprocess.PIPE)
        told = []
        raw = RawLog(Path(sys.argv[1]), told.append)
        read = 0
        for line in iter(agent.stdout.readline, b""):
            raw.write(line)
            read += 1
        print(json.dumps({"read": read, "exit": agent.wait(), "lost": raw.lost_bytes, "told": len(told)}))
    """, str(path))
    line = 101  # nine digits, a space, 90 x and the newline
    assert result == {"read": 40000, "exit": 0, "lost": 40000 * line - path.stat().st_size, "told": 1}
    assert path.stat().st_size % line == 0 and path.read_bytes().endswith(b"\n")  # what was kept is whole lines


@pytest.mark.slow
def test_the_reserve_gives_back_room_for_the_end_of_a_session(small_tmpfs):
    from runner.errors import DiskFull
    from runner.session.diskguard import DiskGuard

    root = small_tmpfs("8m")
    guard = DiskGuard(root)
    assert not guard.check()
    with open(root / "fill.bin", "wb") as f:  # the agent fills the disk
        try:
            while True:
                f.write(b"\0" * (1 << 16))
                f.flush()
        except OSError:
            pass
    assert guard.check() and guard.path == str(root) and "no space left" in guard.cause
    assert guard.reason.startswith(f"disk full: {root}: no space left on the device")
    try:
        (root / "result.json").write_bytes(b"{}" * 50_000)
        raise AssertionError("the disk was not full")
    except OSError:
        pass
    guard.release()
    (root / "result.json").write_bytes(b"{}" * 500_000)  # a megabyte fits now
    assert not (root / ".reserve").exists()
    try:
        DiskGuard(root)
        raise AssertionError("a reserve was made on a full disk")
    except DiskFull as exc:
        assert "reserve" in str(exc) and str(root) in str(exc)
