"""The scripted agent's short session (``--runs``, ``--epochs``): a study's agent ``args`` or the
suite's SHORT_DEMO make fewer, shorter runs of the same edits, and the runs really train that long."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers import REPO

pytestmark = pytest.mark.slow

EDITS = [{"note": "a", "set": {"EPOCHS": 10}}, {"note": "b", "set": {"EPOCHS": 12, "LR": 0.5}},
         {"note": "c", "set": {"EPOCHS": 20}}]


def agent(tmp_path, *args: str) -> list[dict]:
    (tmp_path / "program.md").write_text("the task\n")
    (tmp_path / "train.py").write_text("EPOCHS = 5\nLR = 0.1\nprint('epochs', EPOCHS, 'lr', LR)\n")
    out = subprocess.run([sys.executable, "-m", "runner.agents.scripted_agent", "--pace", "0", "--edits",
                          json.dumps(EDITS), *args], cwd=tmp_path, capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_runs_and_epochs_shorten_the_session_and_keep_each_runs_other_edits(tmp_path):
    said = agent(tmp_path, "--runs", "2", "--epochs", "3")
    ran = [r["input"] for r in said if r["type"] == "tool_call" and r["tool"] == "bash"]
    assert ran == ["python run_1.py", "python run_2.py"]
    printed = [r["text"] for r in said if r["type"] == "tool_output"]
    assert printed == ["epochs 3 lr 0.1", "epochs 3 lr 0.5"]


def test_without_them_every_run_is_made_as_the_task_lists_it(tmp_path):
    printed = [r["text"] for r in agent(tmp_path) if r["type"] == "tool_output"]
    assert printed == ["epochs 10 lr 0.1", "epochs 12 lr 0.5", "epochs 20 lr 0.1"]
