"""Study files, the plan, session classification, status, reconcile, settings and the slurm job
script — without starting any session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from runner.errors import ConfigError, OnegcError
from runner.launch.local import gpu_slots
from runner.launch.reconcile import reconcile
from runner.launch.records import write_record
from runner.launch.slurm import SlurmOptions, bind_gpu, job_script, sbatch_argv, time_limit
from runner.launch.spawn import create_session
from runner.launch.study import StudyError, classify, launch, load_study, plan, status_json, status_report, survey
from runner.settings import observer_kind
from runner.wire.paths import SessionPaths, runs_dir
from runner.wire.session_config import SessionConfig
from tests.helpers import REPO
from tests.runner.launch.conftest import write_study

BASIC = """
    name = "s"
    tasks = ["t0"]
    repeats = 2
    [[agents]]
    adapter = "scripted"
    label = "a"
    [[agents]]
    adapter = "claude-code"
    model = "claude-sonnet-4-6"
"""


def test_examples_load_and_the_paper_design_has_245_distinct_sessions():
    paper = load_study(REPO / "examples" / "paper_study.toml")
    sessions = plan(paper)
    assert len(sessions) == 7 * 7 * 5
    assert len({p.session_id for p in sessions}) == 245
    budgets = {p.task: p.config.budget_s for p in sessions}
    assert budgets["t2"] == 120 * 60 and budgets["t1"] == 40 * 60  # each task's own budget from task.toml
    demo = load_study(REPO / "examples" / "demo_study.toml")
    assert [p.session_id for p in plan(demo)] == ["demo--quick--t0--r1", "demo--steady--t0--r1",
                                                  "demo--quick--t0--r2", "demo--steady--t0--r2"]


# The paper's design (arXiv 2605.17046, shared/TASKS.md): its seven agents, each task's own
# budget in minutes, 5 repeats, 30 s grace, no internet and no package installation.
PAPER_BUDGET_MIN = {"t1": 40, "t2": 120, "t3": 80, "t4": 60, "t5": 40, "t6": 40, "t7": 40}
PAPER_AGENTS = ["sonnet-4.6", "opus-4.6", "opus-4.7", "gpt-5.5", "kimi-k2.5", "kimi-k2.6", "qwen-3.6-plus"]


def test_the_paper_study_file_is_faithful_to_the_paper():
    paper = load_study(REPO / "examples" / "paper_study.toml")
    assert paper.network == "api-only" and not paper.unsealed  # rules 3-4: no internet, no pip
    assert paper.repeats == 5 and paper.budget.grace_s == 30
    assert paper.budget.minutes is None and not paper.budget.tasks  # each task's own budget
    assert [a.label for a in paper.agents] == PAPER_AGENTS
    sessions = plan(paper)
    assert {p.config.network for p in sessions} == {"api-only"}
    assert {p.task: p.config.budget_s / 60 for p in sessions} == PAPER_BUDGET_MIN
    assert {p.config.grace_s for p in sessions} == {30}
    assert paper.canaries and {p.config.canaries for p in sessions} == {True}  # issue 35: the check is on


def test_plan_ids_are_stable_and_configs_follow_the_file(tmp_path):
    body = BASIC + """
    [budget]
    minutes = 3
    grace_s = 7
    tasks = { t0 = 1.5 }
    """
    a = plan(load_study(write_study(tmp_path / "s.toml", body)))
    b = plan(load_study(write_study(tmp_path / "s2.toml", body)))
    assert [p.session_id for p in a] == [p.session_id for p in b]
    assert a[1].session_id == "s--claude-code-claude-sonnet-4-6--t0--r1"
    assert a[1].config.model == "claude-sonnet-4-6" and a[1].config.agent == "claude-code"
    assert a[0].config.budget_s == 90 and a[0].config.grace_s == 7  # the per-task budget wins
    assert [p.repeat for p in a] == [1, 1, 2, 2]  # repeat-major: every cell gets r1 first


@pytest.mark.parametrize("patch, field", [
    ('adapter = "scripted"', "agents.0.adapter"),
    ('tasks = ["t0"]', "tasks"),
    ('repeats = 2', "repeats"),
    ('name = "s"', "(root)"),
    ('label = "a"', "agents"),
])
def test_bad_study_files_are_one_line_naming_file_and_field(tmp_path, patch, field):
    bad = {
        'adapter = "scripted"': 'adapter = "gpt-agent"',
        'tasks = ["t0"]': 'tasks = ["t0", "t99"]',
        'repeats = 2': 'repeats = 0',
        'name = "s"': 'name = "s"\ncolour = "blue"',
        'label = "a"': 'label = "claude-code-claude-sonnet-4-6"',
    }[patch]
    path = write_study(tmp_path / "bad.toml", BASIC.replace(patch, bad, 1))
    with pytest.raises(StudyError) as err:
        load_study(path)
    message = str(err.value)
    assert "\n" not in message and str(path) in message
    assert f"field '{field}'" in message or (field == "(root)" and "colour" in message), message


def test_command_adapter_needs_a_command(tmp_path):
    with pytest.raises(StudyError, match="needs command"):
        load_study(write_study(tmp_path / "c.toml", 'name = "c"\ntasks = ["t0"]\n[[agents]]\nadapter = "command"\n'))


def _ended(paths: SessionPaths, reason: str, value=0.5, budget_s=60.0, gpu_name="A100") -> None:
    contract = {"task_hash": "h", "budget_s": budget_s, "grace_s": 30, "gpu": [{"name": gpu_name, "driver": "1", "index": 0}],
                "agent_version": "x", "model": None, "network": "open", "harness_version": "0.1.0"}
    lines = [{"type": "session_started", "seq": 1, "ts": time.time(), "contract": contract},
             {"type": "session_ended", "seq": 2, "ts": time.time(), "reason": reason, "detail": f"{reason} detail"}]
    paths.events.write_text("".join(json.dumps(e) + "\n" for e in lines))
    paths.runner_info.write_text(json.dumps({"pid": 1, "host": "elsewhere"}))
    paths.result.write_text(json.dumps({"value": value, "end_reason": reason, "failure": None}))


def test_classify_done_retry_failed_queued_and_status_flags_mixed_contracts(tmp_path, home):
    study = load_study(write_study(tmp_path / "s.toml", BASIC))
    planned = {p.session_id: p for p in plan(study)}
    runs = runs_dir(home)
    ids = list(planned)
    for sid in ids:
        create_session(planned[sid].config, home)
    a1, c1, a2, c2 = (SessionPaths(runs / sid) for sid in ids)
    _ended(a1, "agent_failed", value=None)  # an agent failure is a result
    _ended(c1, "harness_error")
    _ended(a2, "budget_exhausted", value=0.7, budget_s=120.0, gpu_name="H100")
    write_record(c2, {"kind": "local", "state": "queued", "queued_at": time.time()})
    for n in (1, 2):  # two earlier attempts of c1 already failed: this third one is the last
        (runs / f"{c1.session_id}.attempt-{n}").mkdir()

    by_id = {s.planned.session_id: s for s in survey(study, home)}
    assert by_id[a1.session_id].state == "done"
    assert by_id[a2.session_id].state == "done" and by_id[a2.session_id].value == 0.7
    assert by_id[c1.session_id].state == "failed" and by_id[c1.session_id].attempts == 3
    assert "harness_error detail" in by_id[c1.session_id].reason
    assert by_id[c2.session_id].state == "queued"

    report = status_report(study, home)
    assert "MIXED" in report and "budget_s" in report and "gave up after 3 attempts" in report
    cells = {(c["agent"], c["task"]): c for c in status_json(study, home)["cells"]}
    assert set(cells[("a", "t0")]["mixed"]) == {"budget_s", "gpu"}
    assert cells[("claude-code-claude-sonnet-4-6", "t0")]["mixed"] == {}
    assert cells[("a", "t0")]["done"] == 2 and cells[("claude-code-claude-sonnet-4-6", "t0")]["queued"] == 1


@pytest.mark.slow
def test_harness_error_with_attempts_left_is_retried_in_a_fresh_folder(tmp_path, home, monkeypatch):
    monkeypatch.setattr("runner.launch.local.start_daemon", lambda *a, **k: 0)  # no processes here
    study = load_study(write_study(tmp_path / "s.toml", BASIC.replace("repeats = 2", "repeats = 1")))
    first = plan(study)[0]
    paths = create_session(first.config, home)
    _ended(paths, "harness_error")
    assert classify(paths, first, study.max_attempts).state == "retry"
    report = launch(study, home)
    assert report.retried == [first.session_id] and len(report.created) == 1
    aside = runs_dir(home) / f"{first.session_id}.attempt-1"
    assert json.loads((aside / "attempt.json").read_text())["attempt"] == 1
    assert (aside / "events.jsonl").exists() and not paths.events.exists()
    assert json.loads(paths.launcher.read_text())["state"] == "queued"
    assert classify(paths, first, study.max_attempts).attempts == 2


def test_missing_data_is_reported_before_anything_is_created(tmp_path):
    home = tmp_path / "empty"
    study = load_study(write_study(tmp_path / "s.toml", BASIC))
    with pytest.raises(StudyError, match="data for t0 not prepared: run 'onegc prepare t0'"):
        launch(study, home)
    assert not list(runs_dir(home).glob("s--*"))


@pytest.mark.slow
def test_reconcile_names_a_dead_local_runner(home):
    paths = create_session(SessionConfig(session_id="dead", task="t0", agent="scripted", budget_s=10), home)
    write_record(paths, {"kind": "local", "state": "queued"})
    assert reconcile(paths) is None  # waiting in the queue is not a failure
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    import socket

    paths.runner_info.write_text(json.dumps({"pid": proc.pid, "host": socket.gethostname(), "create_time": 1.0}))
    paths.runner_log.write_text("Traceback (most recent call last):\nMemoryError: out of memory\n")
    assert reconcile(paths) == (f"runner (pid {proc.pid} on {socket.gethostname()}) died before the session started: "
                                "MemoryError: out of memory")
    paths.events.write_text(json.dumps({"type": "session_ended", "reason": "completed"}) + "\n")
    assert reconcile(paths) is None


def test_gpu_slots(monkeypatch):
    monkeypatch.setenv("ONEGC_NVML_MODULE", "runner.session.fake_nvml")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("ONEGC_FAKE_GPUS", "3")
    assert gpu_slots() == ["0", "1", "2"]
    assert gpu_slots("1, 0,1") == ["1", "0"]
    monkeypatch.setenv("ONEGC_FAKE_GPUS", "0")
    assert gpu_slots() == [None]  # CPU only: one session at a time
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    assert gpu_slots() == ["2", "3"]
    with pytest.raises(ConfigError, match="--gpus"):
        gpu_slots("first")


def test_observer_kind_from_env_then_onegc_toml(tmp_path, monkeypatch):
    monkeypatch.delenv("ONEGC_OBSERVER", raising=False)
    assert observer_kind(tmp_path) == "inotify"
    (tmp_path / "onegc.toml").write_text('[monitor]\nobserver = "polling"\n[other]\nx = 1\n')
    assert observer_kind(tmp_path) == "polling"
    monkeypatch.setenv("ONEGC_OBSERVER", "inotify")
    assert observer_kind(tmp_path) == "inotify"
    monkeypatch.setenv("ONEGC_OBSERVER", "fsevents")
    with pytest.raises(ConfigError, match="ONEGC_OBSERVER"):
        observer_kind(tmp_path)
    monkeypatch.delenv("ONEGC_OBSERVER")
    (tmp_path / "onegc.toml").write_text('[monitor]\nobserver = "smoke"\n')
    with pytest.raises(ConfigError, match=r"onegc.toml \[monitor\]: field 'observer'"):
        observer_kind(tmp_path)


def test_slurm_job_script_and_sbatch_options(home, monkeypatch):
    config = SessionConfig(session_id="j", task="t0", agent="scripted", budget_s=40 * 60, grace_s=30)
    paths = create_session(config, home)
    opts = SlurmOptions(partition="gpu", account="lab", qos="high", extra=["--constraint=a100"],
                        setup=["module load cuda"], signal_s=120)
    argv = sbatch_argv(paths, config, opts)
    assert "--gres=gpu:1" in argv and "--signal=B:TERM@120" in argv and "--partition=gpu" in argv
    assert "--account=lab" in argv and "--qos=high" in argv and argv[-2] == "--constraint=a100"
    assert time_limit(config, opts) == str(-(-(40 * 60 + 30 + 600 + 120 + 120) // 60))
    assert time_limit(config, SlurmOptions(time="3:00:00")) == "3:00:00"
    script = job_script(paths, opts, home)
    assert script.index("module load cuda") < script.index("bind-gpu") < script.index("exec ")
    assert f"-m runner.session {paths.root}" in script
    with pytest.raises(ValueError):
        SlurmOptions(time="two hours")
    # In the job: the GPU Slurm gave is written into session.json before the runner reads it.
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    assert bind_gpu(paths.root) == "3" and paths.read_config().gpu == "3"
    assert paths.read_config().budget_s == config.budget_s


def test_cli_status_dry_run_and_errors(tmp_path, home):
    from onegc_tui.cli.study import study

    path = write_study(tmp_path / "s.toml", BASIC)
    runner = CliRunner()
    result = runner.invoke(study, ["status", str(path)])
    assert result.exit_code == 0 and "4 sessions" in result.output and "not launched yet" in result.output
    result = runner.invoke(study, [str(path), "--dry-run"])  # `onegc study FILE` = run
    assert result.exit_code == 0 and result.output.count("would create") == 4
    assert not runs_dir(home).exists() or not list(runs_dir(home).glob("s--*"))
    bad = write_study(tmp_path / "bad.toml", BASIC.replace("repeats = 2", "repeats = -1"))
    result = runner.invoke(study, ["status", str(bad)])
    assert result.exit_code == 2
    assert result.output.strip().startswith("error: ") and "field 'repeats'" in result.output


@pytest.mark.slow
def test_cli_study_does_not_import_textual():
    code = "import sys, onegc_tui.cli.study, runner.launch.study, runner.launch.slurm; print('textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.stdout.strip() == "False", out.stderr


def test_a_sealed_study_seals_every_session_and_refuses_a_task_that_cannot_be(tmp_path):
    body = BASIC.replace('name = "s"', 'name = "s"\nscored_split = "sealed"')
    sessions = plan(load_study(write_study(tmp_path / "s.toml", body)))
    assert {p.config.scored_split for p in sessions} == {"sealed"}
    with pytest.raises(OnegcError, match="its inputs are its targets"):
        plan(load_study(write_study(tmp_path / "t1.toml", body.replace('tasks = ["t0"]', 'tasks = ["t1"]'))))
