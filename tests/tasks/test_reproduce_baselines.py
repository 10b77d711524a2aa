"""benchmarks/reproduce_baselines.py --seeds: the seed table and its noise rule (benchmarks/seed_table.py),
and its usage errors."""

from __future__ import annotations

import statistics
import subprocess
import sys

import pytest

from tests.tasks.conftest import TASKS_DIR

sys.path.insert(0, str(TASKS_DIR.parent / "benchmarks"))
import seed_table  # noqa: E402

SCRIPT = TASKS_DIR.parent / "benchmarks" / "reproduce_baselines.py"


def runs(pairs):
    return [{"seed": k, "score": v, "if_picked_by_scored_split": t, "split": "test"} for k, (v, t) in enumerate(pairs)]


def test_the_table_gives_mean_and_sample_std_under_val_best_with_test_best_beside_it():
    pairs = [(0.3709, 0.3705), (0.3747, 0.3701), (0.3783, 0.3699), (0.3736, 0.3704), (0.3720, 0.3702)]
    s = seed_table.summarise("t6_etth1", "test_mse", "train.py as shipped", runs(pairs), 0.384)
    vals = [v for v, _ in pairs]
    assert s.val_best == vals and s.n == 5 and s.seeds == [0, 1, 2, 3, 4]
    assert s.mean_std(s.val_best) == pytest.approx((statistics.fmean(vals), statistics.stdev(vals)))
    assert s.verdict == "differs beyond noise (-0.0101, 3.5 sd)"  # the paper's 0.384: 3.5 sd away
    row = seed_table.table([s]).splitlines()[2]
    assert row.startswith("| t6_etth1 (test_mse) | train.py as shipped | 5 (0, 1, 2, 3, 4) | 0.3739 ± 0.0029 | 0.3702 ± 0.0002 |")
    assert "| 0.384 | -0.0101 |" in row


def test_the_paper_within_two_sd_agrees_and_failed_seeds_are_left_out():
    s = seed_table.summarise("t6_etth1", "test_mse", "r", runs([(0.380, 0.379), (0.388, 0.385)]) + [
        {"seed": 2, "score": None, "if_picked_by_scored_split": None}], 0.384)
    assert s.n == 2 and s.seeds == [0, 1] and s.verdict.startswith("agrees within noise")
    assert seed_table.summarise("t1", "val_bpb", "r", runs([(3.40, 3.40)]), 3.438).verdict == "one seed: no spread"
    only_val = seed_table.summarise("t1", "val_bpb", "r", [{"seed": 0, "score": 3.4, "if_picked_by_scored_split": 3.4,
                                                             "split": "val"}], 3.438)
    assert only_val.test_best == []  # T1-T3, T7: the scored split is val, there is no test-best


@pytest.mark.slow
@pytest.mark.parametrize("args, message", [
    (["--seeds", "0"], "--seeds 0: give a number of seeds from 1 to 100"),
    (["--seeds", "2", "--set", "SEED=3"], "--seeds sets SEED itself"),
    (["--set", "lr=3"], "UPPERCASE constant name"),
    (["--set", "LR=three"], "VALUE must be a Python literal"),
])
def test_usage_errors_are_one_line_and_exit_2(args, message, tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), "t6", "--data-dir", str(tmp_path / "d"), *args],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], lines
    assert not (tmp_path / "d").exists()


def _saved(path, seed: int | None, score: float, test_best: float, **constants):
    import json

    if seed is not None:
        constants["SEED"] = seed
    path.write_text(json.dumps({"task": "t4_molhiv", "split": "test", "score": score,
                                "if_picked_by_scored_split": test_best, "constants": constants}))
    return str(path)


@pytest.mark.slow
def test_table_summarises_single_seed_runs_saved_with_json(tmp_path):
    files = [_saved(tmp_path / f"s{k}.json", k, v, t) for k, (v, t) in enumerate([(0.70, 0.72), (0.72, 0.73), (0.74, 0.75)])]
    proc = subprocess.run([sys.executable, str(SCRIPT), "t4", "--table", *files], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    row = proc.stdout.strip().splitlines()[-1]
    assert row.startswith("| t4_molhiv (test_auroc) | train.py as shipped | 3 (0, 1, 2) | 0.7200 ± 0.0200 | 0.7333 ± 0.0153 |")
    assert "| 0.706 | +0.0140 | agrees within noise (+0.0140, 0.7 sd) |" in row
    other = _saved(tmp_path / "lr.json", 3, 0.7, 0.7, LR=0.01)  # another recipe: refused
    proc = subprocess.run([sys.executable, str(SCRIPT), "t4", "--table", *files, other], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2 and "differ in more than SEED" in proc.stderr, proc.stderr
