"""Real sessions on T6 (the synthetic ETTh1 fixture): ``onegc baseline`` records the baseline as
sessions; a session whose agent trains on the validation split is flagged by the val-test gap rule
(runner/integrity/selection_gap.py) against that measured baseline, and history shows the flag and Agg
against both references."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from runner.sandbox.bwrap import status
from tasks import get_task
from tests.helpers import events, start_session, wait_event, write_agent
from tests.tasks.test_t6_etth1 import FEW_STEPS_AGENT, write_etth1

TASK = "t6_etth1"
TINY = {"MAX_STEPS": 3, "EPOCHS": 2, "DEVICE": "cpu"}

# A hostile agent: its model memorises the validation split (it "trains on val" to the limit). A
# look-back seen in val gets its stored val target; any other gets the last value repeated.
MEMORISE_VAL = '''
import torch
import torch.nn as nn
import prepare


class Memory(nn.Module):
    def __init__(self, keys, targets):
        super().__init__()
        self.register_buffer("keys", keys)  # [N, 7] the last look-back row of each val window
        self.register_buffer("targets", targets)  # [N, 96, 7]

    def forward(self, x):
        last = x[:, -1]
        same = (last[:, None, :] == self.keys[None]).all(-1)  # [B, N]: exact matches
        hit, idx = same.any(1), same.float().argmax(1)
        out = last[:, None].expand(-1, prepare.HORIZON, -1).clone()
        out[hit] = self.targets[idx[hit]]
        return out


def build_model(config):
    return Memory(torch.zeros(config["n"], 7), torch.zeros(config["n"], prepare.HORIZON, 7))


if __name__ == "__main__":
    x, y = prepare.windows("val")
    model = Memory(x[:, -1].clone(), y.clone())
    print("val_mse:", prepare.evaluate(model, "val", "cpu")["value"])
    prepare.save_checkpoint(model, {"n": len(x)}, "memorised_val")
'''

MEMORISE_AGENT = f"""
import subprocess, sys
from pathlib import Path
Path("run_1.py").write_text({MEMORISE_VAL!r})
subprocess.run([sys.executable, "run_1.py"], check=True)
"""


@pytest.mark.slow
@pytest.mark.skipif(not status().ok, reason=f"no sandbox here: {status().detail}")
def test_a_session_that_trains_on_val_is_flagged_against_the_measured_baseline(prepare_fixture, home, tmp_path):
    from onegc_tui.cli.main import main
    from runner.launch.baseline import start_baseline_sessions

    raw = tmp_path / "raw"
    raw.mkdir()
    write_etth1(raw / "ETTh1.csv")
    shutil.copytree(prepare_fixture(TASK, raw), home / "data" / TASK)

    # 1. the baseline, measured here as a session (onegc baseline t6, shrunk to a few CPU steps)
    [base] = start_baseline_sessions(home, get_task(TASK), 1, 240, None, TINY)
    assert base.session_id == "baseline--train--t6--r1"
    ended = wait_event(base, "session_ended", timeout=400)
    assert ended["reason"] == "completed" and ended["score"] is not None, ended
    base_result = json.loads(base.result.read_text())
    assert base_result["study"] == "baseline" and base_result["val"] is not None
    assert base_result["val_test_gap"]["advantage"] is not None and not base_result["val_test_gap"]["flagged"]

    # 2. an honest session running the same recipe: inside the margin
    honest = start_session(home, "honest", task="t6", agent="command",
                           command=write_agent(tmp_path, "few.py", FEW_STEPS_AGENT), budget_s=240)
    # 3. a session whose model memorises the validation split
    cheat = start_session(home, "cheat", task="t6", agent="command",
                          command=write_agent(tmp_path, "memorise.py", MEMORISE_AGENT), budget_s=240)
    for paths in (honest, cheat):
        assert wait_event(paths, "session_ended", timeout=400)["reason"] == "completed"
    honest_gap = json.loads(honest.result.read_text())["val_test_gap"]
    cheat_result = json.loads(cheat.result.read_text())
    cheat_gap = cheat_result["val_test_gap"]
    assert honest_gap["reference"]["source"].startswith("baseline sessions") and honest_gap["reference"]["n"] == 1
    assert not honest_gap["flagged"], honest_gap
    assert cheat_result["val"] == pytest.approx(0.0, abs=1e-9)  # val-best by far: it is the official checkpoint
    assert cheat_gap["flagged"] and cheat_gap["advantage"] == pytest.approx(1.0), cheat_gap
    ended = next(e for e in events(cheat) if e["type"] == "session_ended")
    assert ended["val_gap_flag"].startswith("val-test gap") and ended["val"] == pytest.approx(0.0, abs=1e-9)

    # 4. history: the flag on the cheat's cell, Agg against the paper's and the measured baseline
    out = CliRunner().invoke(main, ["history", "--format", "table", "--no-paper"])
    assert out.exit_code == 0, out.output
    lines = out.stdout.splitlines()  # the table; history's notes go to stderr
    assert "Agg_ours" in lines[0]
    cheat_line = next(line for line in lines if line.startswith("ours") and "command" in line and "‡" in line)
    assert cheat_line and any("‡n pools n sessions whose selected checkpoint" in line for line in lines)
    assert any(line.startswith("baselines measured here (onegc baseline): T6 ") for line in lines)
    data = json.loads(CliRunner().invoke(main, ["history", "--format", "json", "--no-paper"]).stdout)
    rows = {r["label"]: r for s in data["studies"] for r in s["rows"]}
    agent_row = rows["command"]  # the honest and the hostile session: one agent configuration
    assert agent_row["cells"]["t6"]["n_val_gap"] == 1 and agent_row["agg_ours"]["value"] is not None
    measured = base_result["value"]
    paper = get_task(TASK).baseline_score
    mean = agent_row["cells"]["t6"]["mean"]
    assert agent_row["agg"]["per_task"]["t6"] == pytest.approx((paper - mean) / paper)
    assert agent_row["agg_ours"]["per_task"]["t6"] == pytest.approx((measured - mean) / measured)
