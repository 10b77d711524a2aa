"""T1 sealed (issue 47, part 2), in real sessions on TinyShakespeare (../shared/data): val's text is
nowhere the agent can read, its ``prepare.evaluate(model, "val")`` hands the model to the harness,
which runs it on val's public windows in a sealed child and answers through the Ladder; the
baseline ``train.py`` runs through it unchanged (a tiny configuration: seconds on a CPU) and its
official re-evaluation sees the same checkpoints as under the paper's workspace, so its whole-split
figure is the paper's official value bit for bit. A hostile agent that looks for val's text, in its
workspace, its home, /tmp and every other place it can read, finds none, even through a model that
writes what it is shown, and cannot read the session's secret or the parts' folders."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from runner.sandbox.bwrap import status
from tests.helpers import ROOMY_BUDGET_S, start_session, wait_event
from tests.integrity import causal_models, hostile_t1_sealed

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not status().ok, reason=f"no sandbox here: {status().detail}")]

AGENT = Path(hostile_t1_sealed.__file__)
from tests.tasks.conftest import SHARED_DATA  # noqa: E402  (one place finds the offline copies)


@pytest.fixture
def t1_home(home: Path) -> Path:
    if not (SHARED_DATA / "tinyshakespeare").is_dir():
        pytest.skip(f"offline dataset copies not found at {SHARED_DATA}")
    causal_models.prepare("t1_shakespeare", home / "data" / "t1_shakespeare", SHARED_DATA / "tinyshakespeare")
    return home


def run(home: Path, sid: str, mode: str, *args: str, scored_split: str = "sealed"):
    paths = start_session(home, sid, task="t1", agent="command", budget_s=ROOMY_BUDGET_S, scored_split=scored_split,
                          command=[sys.executable, str(AGENT), mode, *args])
    ended = wait_event(paths, "session_ended", timeout=ROOMY_BUDGET_S + 120)
    return paths, ended, json.loads((paths.workspace / "report.json").read_text()), json.loads(paths.result.read_text())


def test_the_baseline_runs_through_a_sealed_val_and_scores_as_under_the_papers_workspace(t1_home: Path) -> None:
    sealed, ended, report, result = run(t1_home, "t1-sealed", "baseline")
    assert ended["reason"] == "completed" and report["exit"] == 0, report
    assert not (sealed.workspace / "data" / "val.npy").exists()
    # each epoch's check was answered by the harness: the first is a new value, on the Ladder's grid
    vals = [float(line.split("val_bpb ")[1].split()[0]) for line in report["stdout"].splitlines()
            if line.startswith("epoch ")]
    assert len(vals) == 2 and all(v == round(v, 2) for v in vals), report["stdout"]  # one check in each of two runs
    assert result["answers"]["asked"] == 2 and result["answers"]["judged"] == 2, result["answers"]
    assert result["scored_split"] == "sealed" and result["value"] == result["parts"]["private"], result
    assert abs(result["parts"]["public"] - vals[-1]) <= 0.005 + 1e-9 or result["answers"]["ladder"]["new_values"] < 2
    # the same run under the paper's workspace: the same checkpoints, the same whole-split figure
    paper, ended, report, plain = run(t1_home, "t1-paper", "baseline", scored_split="paper")
    assert ended["reason"] == "completed" and report["exit"] == 0, report
    assert plain["scored_split"] == "paper" and plain["whole"] is None
    assert plain["checkpoint"] == result["checkpoint"] and plain["value"] == result["whole"], (plain, result)


def test_a_t1_agent_finds_val_nowhere_and_no_model_of_its_carries_val_out(t1_home: Path) -> None:
    data = t1_home / "data" / "t1_shakespeare"
    vocab = json.loads((data / "meta.json").read_text())["vocab"]
    val, train = np.load(data / "val.npy"), np.load(data / "train.npy")
    stretch = "".join(vocab[i] for i in val[5000:5048])
    assert stretch not in "".join(vocab[i] for i in train)  # a stretch of val that train does not hold
    paths, ended, report, result = run(t1_home, "t1-search", "search", stretch.encode().hex())
    assert ended["reason"] == "completed", ended
    assert report["files_searched"] > 5 and report["val_text_found_in"] == [], report
    assert "val.npy" not in report["data_files"] and "train.npy" in report["data_files"], report
    assert "sealed" in report["load_val"] and "answered by the harness" in report["load_val"], report
    assert all(str(v).startswith("refused") for v in report["secrets"].values()), report["secrets"]
    # the leaky model was evaluated (its figure came back, nothing else did)
    assert report["leaky_exit"] == 0 and isinstance(report["leaky"].get("value"), float), report["leaky"]
    assert report["leaky"]["part"] == "public" and report["leaks_seen"] == [], report
    assert result["answers"]["judged"] == 1
