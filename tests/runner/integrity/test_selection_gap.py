"""The val-test gap rule (runner/integrity/selection_gap.py) on numbers and files; the real sessions are in
tests/tasks/test_t6_val_gap.py."""

from __future__ import annotations

import json

import pytest

from runner.integrity import selection_gap as gap
from tasks import get_task


def test_the_val_advantage_is_relative_to_the_test_score_in_the_task_direction():
    assert gap.val_advantage(0.65, 0.37, "lower") == pytest.approx((0.37 - 0.65) / 0.37)
    assert gap.val_advantage(0.30, 0.37, "lower") == pytest.approx(0.07 / 0.37)  # val better than test: positive
    assert gap.val_advantage(0.80, 0.70, "higher") == pytest.approx(0.1 / 0.7)
    assert gap.val_advantage(None, 0.3, "lower") is None and gap.val_advantage(0.3, None, "lower") is None
    assert gap.val_advantage(float("nan"), 0.3, "lower") is None and gap.val_advantage(0.3, 0.0, "lower") is None


def test_a_session_is_flagged_only_beyond_the_baseline_gap_and_its_margin():
    ref = gap.GapReference(value=-0.75, margin=0.10, source="test")
    honest = gap.check(0.62, 0.36, "lower", ref)  # a = -0.72: inside
    assert honest.flag is None and honest.advantage == pytest.approx(-0.72222, abs=1e-4)
    assert gap.check(0.498, 0.3, "lower", ref).flag is None  # a = -0.66: just inside the line
    assert gap.check(0.492, 0.3, "lower", ref).flag  # a = -0.64: just beyond it
    trained_on_val = gap.check(0.40, 0.37, "lower", ref)  # a = -0.08
    assert trained_on_val.flag and "beyond the baseline's -0.750 + margin 0.100" in trained_on_val.flag
    found = trained_on_val.verdict
    assert found is not None and (found.check, found.strength, found.evidence) == ("val_test_gap", "look", trained_on_val.flag)
    assert honest.verdict is None
    rec = trained_on_val.record()
    assert rec["flagged"] and rec["reference"]["source"] == "test" and json.dumps(rec)
    assert gap.check(0.1, 0.37, "lower", None).flag is None  # no reference: nothing to compare with


def test_the_reference_from_baseline_runs_takes_their_mean_and_three_sigma_margin():
    pairs = [(0.65, 0.37), (0.66, 0.372), (0.64, 0.369)]
    ref = gap.reference_from_runs(pairs, "lower", "runs")
    advs = [gap.val_advantage(v, t, "lower") for v, t in pairs]
    assert ref is not None and ref.n == 3 and ref.value == pytest.approx(sum(advs) / 3)
    assert ref.margin >= gap.MIN_MARGIN
    wide = gap.reference_from_runs([(0.5, 0.4), (0.9, 0.4)], "lower", "runs")
    assert wide is not None and wide.margin > gap.MIN_MARGIN  # 3 sd of a wide spread beats the floor
    assert gap.reference_from_runs([(None, 0.3)], "lower", "runs") is None  # type: ignore[list-item]
    assert gap.reference_from_spec(None, None) is None
    assert gap.reference_from_spec(-0.75, 0.01).margin == gap.MIN_MARGIN  # never under the floor


def test_t6_declares_its_measured_reference_and_the_val_scored_tasks_have_no_check():
    t6 = get_task("t6")
    assert t6.baseline_val_gap is not None and t6.val_gap_margin is not None
    assert gap.check_selected(get_task("t1"), None, 1.0, 1.0) is None  # T1: the scored split is val
    measured = gap.check_selected(t6, None, 0.655, 0.378)  # the shipped baseline itself (seed 0-4: val 0.654-0.656)
    assert measured is not None and measured.flag is None


def _baseline_folder(runs, name, task, val, value, task_hash, study="baseline"):
    folder = runs / name
    folder.mkdir(parents=True)
    (folder / "result.json").write_text(json.dumps({"task": task, "study": study, "val": val, "value": value}))
    (folder / "events.jsonl").write_text(json.dumps({"type": "session_started", "contract": {"task_hash": task_hash}}) + "\n")
    return folder


def test_baseline_sessions_are_read_from_the_runs_folder_with_the_same_task_files_only(tmp_path):
    runs = tmp_path / "runs"
    _baseline_folder(runs, "baseline--train--t6--r1", "t6_etth1", 0.65, 0.37, "h1")
    _baseline_folder(runs, "baseline--train--t6--r2", "t6_etth1", 0.64, 0.37, "h2")  # other task files
    _baseline_folder(runs, "baseline--train--t5--r1", "t5_covtype", 0.9, 0.8, "h1")  # another task
    _baseline_folder(runs, "other--train--t6--r1", "t6_etth1", 0.1, 0.37, "h1")  # not a baseline session
    broken = runs / "baseline--train--t6--r3"
    broken.mkdir()
    (broken / "result.json").write_text("{not json")
    _baseline_folder(runs, "baseline--train--t6--r4", "t6_etth1", True, 0.37, "h1")  # a bool is no score
    assert gap.baseline_pairs(runs, "t6_etth1", "h1") == [(0.65, 0.37)]
    assert sorted(gap.baseline_pairs(runs, "t6_etth1", None)) == [(0.64, 0.37), (0.65, 0.37)]
    assert gap.baseline_pairs(tmp_path / "nowhere", "t6_etth1", None) == []


@pytest.mark.parametrize("args, message", [
    (["t9"], "t9"),
    (["t6", "--set", "EPOCHS"], "--set 'EPOCHS': write NAME=VALUE"),
    (["t6", "--set", "EPOCHS=five"], "--set 'EPOCHS=five': write NAME=VALUE"),
    (["t6", "--label", "a b"], "--label 'a b'"),
])
def test_onegc_baseline_refuses_bad_input_in_one_line(args, message, home):
    from click.testing import CliRunner

    from onegc_tui.cli.main import main

    (home / "data" / "t6_etth1").mkdir(parents=True)
    (home / "data" / "t6_etth1" / "manifest.json").write_text("{}")  # prepared, as far as the check goes
    out = CliRunner().invoke(main, ["baseline", *args])
    assert out.exit_code == 2, out.output
    lines = [line for line in out.output.splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], lines
    assert not (home / "runs").exists()  # nothing created


def test_baseline_sessions_number_their_repeats_after_the_ones_there(tmp_path):
    from runner.launch.baseline import baseline_command, next_repeat

    runs = tmp_path / "runs"
    assert next_repeat(runs, "train", "t6") == 1
    for name in ("baseline--train--t6--r1", "baseline--train--t6--r2", "baseline--other--t6--r3", "baseline--train--t5--r4"):
        (runs / name).mkdir(parents=True)
    assert next_repeat(runs, "train", "t6") == 3 and next_repeat(runs, "other", "t6") == 1
    assert baseline_command({})[-1] == "train.py"  # unmodified
    assert json.loads(baseline_command({"EPOCHS": 2})[-1]) == {"EPOCHS": 2}
