"""Budgets and GPU indices are bounded, and a refusal is one line and exit 2 that starts nothing
(issue 29: 0.001 and 1e20h were accepted as budgets, --gpus 7 on a machine without GPU 7)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from onegc_tui.cli.main import main
from runner.duration import MAX_BUDGET_S, MIN_BUDGET_S, BadDuration, duration_s


def run(*args):
    return CliRunner().invoke(main, list(args))


def nothing_started(home) -> bool:
    return not (home / "runs").exists() or not any(p.name.startswith("2") for p in (home / "runs").iterdir())


def test_a_budget_is_bounded_from_10_seconds_to_7_days():
    assert (MIN_BUDGET_S, MAX_BUDGET_S) == (10, 7 * 24 * 3600)
    assert duration_s("10s") == 10 and duration_s("168h") == MAX_BUDGET_S and duration_s(1.0) == 60
    for bad in ("0.001", "9s", "1e20h", "169h", "99999999999999999999h", 0.001, 1e20):
        with pytest.raises(BadDuration, match="from 10s to 7 days"):
            duration_s(bad)


@pytest.mark.parametrize("budget", ["0.001", "1e20h", "200h", "5s"])
def test_run_refuses_an_unbounded_budget_in_one_line(home, budget):
    r = run("run", "t0", "--agent", "scripted", "--budget", budget, "--detach")
    assert r.exit_code == 2, r.output
    (line,) = r.output.strip().splitlines()
    assert line.startswith("error: Invalid value for '--budget'") and "from 10s to 7 days" in line
    assert nothing_started(home)


def test_a_study_budget_outside_the_bounds_is_refused(tmp_path):
    from runner.launch.study import StudyError, load_study

    path = tmp_path / "s.toml"
    path.write_text('name = "s"\ntasks = ["t0"]\n[[agents]]\nadapter = "scripted"\n[budget]\nminutes = 0.001\n')
    with pytest.raises(StudyError, match="budget.minutes.*from 10s to 7 days"):
        load_study(path)


@pytest.fixture
def two_fake_gpus(monkeypatch):
    monkeypatch.setenv("ONEGC_NVML_MODULE", "runner.session.fake_nvml")
    monkeypatch.setenv("ONEGC_FAKE_GPUS", "2")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


@pytest.mark.slow  # the sandbox check before it runs bwrap
def test_gpus_beyond_nvmls_device_count_are_refused(home, two_fake_gpus, monkeypatch):
    r = run("run", "t0", "--agent", "scripted", "--gpus", "7", "--detach")
    assert r.exit_code == 2 and r.output.strip().splitlines() == [
        "error: --gpus '7': this machine has no GPU 7 (NVML sees GPUs 0-1): see nvidia-smi"], r.output
    r = run("run", "t0", "--agent", "scripted", "--gpus", "1,2,3", "--detach", "--repeats", "2")
    assert r.exit_code == 2 and "no GPU 2, 3 (NVML sees GPUs 0-1)" in r.output
    monkeypatch.setenv("ONEGC_FAKE_GPUS", "0")
    r = run("run", "t0", "--agent", "scripted", "--gpus", "0", "--detach")
    assert r.exit_code == 2 and "has no GPU that NVML sees" in r.output and "leave out --gpus" in r.output
    assert nothing_started(home)


def test_gpus_that_exist_and_uuids_pass(two_fake_gpus):
    from runner.launch.local import gpu_slots

    assert gpu_slots("1,0") == ["1", "0"]
    assert gpu_slots("GPU-abc") == ["GPU-abc"]  # a UUID is CUDA's to check


def test_a_local_study_with_a_missing_gpu_is_refused(two_fake_gpus):
    from runner.errors import ConfigError
    from runner.launch.local import gpu_slots

    with pytest.raises(ConfigError, match="no GPU 5"):
        gpu_slots("0,5")
