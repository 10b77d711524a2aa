"""The disk fills up mid-session (issue 13, "Disk full"): ONEGC_HOME on a 30 MB tmpfs, a
checkpoint scored live, then the agent fills the disk and keeps printing.

Before: the runner died without a word (empty runner.log, no result.json, no session_ended),
events.jsonl ended in a cut-off line, the agent blocked on stdout, `onegc run --plain` died with
a traceback, and the live score was lost. Now the session ends with a one-line reason that
names the path, and result.json holds the scored checkpoint."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading

import pytest

from runner.wire.paths import SessionPaths
from tests.helpers import REPO, tree_pids, wait_event, wait_for, write_agent

pytestmark = pytest.mark.slow

FILLING_AGENT = """
import subprocess, sys, time
from pathlib import Path
Path("run_1.py").write_text('''
import prepare
from train import build_model
config = {"hidden": 16}
prepare.save_checkpoint(build_model(config), config, "first")
''')
out = subprocess.run([sys.executable, "run_1.py"], capture_output=True, text=True)
print("$ python run_1.py ->", out.returncode, out.stderr[-300:], flush=True)
while not Path("go").exists():  # the test says when the checkpoint is scored
    time.sleep(0.1)
with open("fill.bin", "wb") as f:  # fill the disk
    try:
        while True:
            f.write(b"x" * (1 << 20))
            f.flush()
    except OSError as exc:
        print("disk full:", exc, flush=True)
for i in range(20000):  # 2 MB more: a runner that stopped reading would block us here
    print(f"{i:08d} " + "y" * 91, flush=True)
print("AGENT DONE", flush=True)
time.sleep(300)
"""


def test_a_full_disk_ends_the_session_with_its_reason_and_keeps_the_scored_checkpoint(small_tmpfs, demo_data, tmp_path):
    home = small_tmpfs("30m")
    shutil.copytree(demo_data, home / "data" / "t0_demo")
    cmd = write_agent(tmp_path, "filling_agent.py", FILLING_AGENT)
    cli = subprocess.Popen([sys.executable, "-m", "onegc_tui.cli", "run", "t0", "--agent", "command", "--budget", "5",
                            "--plain", "--", *cmd], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           env={**os.environ, "ONEGC_HOME": str(home), "PYTHONPATH": str(REPO)})
    output: list[str] = []
    reader = threading.Thread(target=lambda: output.extend(cli.stdout), daemon=True)
    reader.start()
    try:
        folder = wait_for(lambda: next((p.parent for p in (home / "runs").glob("*/session.json")), None), 60,
                          "the session folder")
        paths = SessionPaths(folder)
        live = wait_event(paths, "checkpoint_scored", timeout=120)
        assert live["value"] is not None, live
        (paths.workspace / "go").write_text("")
        assert cli.wait(timeout=180) == 0  # the agent filled it (agent_failed) and left a scored checkpoint (docs/exit-codes.md)
    finally:
        if cli.poll() is None:
            cli.kill()
    reader.join(timeout=10)
    text = "".join(output)
    assert "Traceback" not in text, text
    lines = paths.events.read_bytes()
    assert lines.endswith(b"\n")
    every = [json.loads(line) for line in lines.splitlines()]  # every line whole
    assert [e["seq"] for e in every] == list(range(1, len(every) + 1))
    ended = every[-1]
    # the agent's own file filled it: its result, which a study keeps (tests/integrity/test_disk_fill.py)
    assert ended["type"] == "session_ended" and ended["reason"] == "agent_failed"
    assert "the agent's doing" in ended["detail"]
    assert ended["detail"].startswith(f"disk full: {home}") and "\n" not in ended["detail"]
    assert any(e["type"] == "warning" and e["code"] == "disk_full" for e in every)
    result = json.loads(paths.result.read_text())
    # the scored checkpoint kept (t0 is sealed by default: its official value is val's private part)
    assert result["checkpoint"] == live["name"] and result["value"] == ended["score"] is not None, result
    # t0 scores val: the re-evaluation (the warm live scorer, no disk needed) or, had it failed
    # for want of room, the live score itself; result.json says which
    assert result["scored_by"] == "official re-evaluation" or result["scored_by"].startswith(
        "live scoring: the disk was full"), result["scored_by"]
    assert result["end_detail"] == ended["detail"]
    assert f"{paths.session_id}: agent_failed, official val" in text and f"{ended['score']:.4f}" in text  # --plain's last line
    log = paths.runner_log.read_text().strip().splitlines()
    assert "disk full" in log[-1], log[-5:]
    assert not (paths.root / ".reserve").exists()
    wait_for(lambda: not tree_pids(paths), 30, "the agent's tree to be gone")
