"""Studies through a real single-node Slurm on this machine (scripts/slurm-up.sh): sessions run as
sbatch jobs on distinct (fake) GPUs; pause/resume/abort travel through control.jsonl; a job the
scheduler kills is reported with a clear reason. Skipped where Slurm is not installed or cannot
start (it needs root: the daemons run as root here)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from runner.launch import slurm
from runner.launch.reconcile import reconcile
from runner.launch.study import launch, load_study, status_report, survey, wait
from runner.wire.paths import SessionPaths, runs_dir
from tests.helpers import REPO, events, wait_event, wait_for
from tests.runner.launch.conftest import read_json, write_study

pytestmark = pytest.mark.slow


def free_port_pair() -> int:
    """A port whose next one is free too (slurmctld's and slurmd's)."""
    import socket

    for _ in range(50):
        with socket.socket() as a:
            a.bind(("127.0.0.1", 0))
            port = a.getsockname()[1]
            try:
                with socket.socket() as b:
                    b.bind(("127.0.0.1", port + 1))
                    return port
            except OSError:
                continue
    raise RuntimeError("no two free ports in a row")


@pytest.fixture(scope="module")
def slurm_cluster():
    missing = [c for c in ("slurmctld", "slurmd", "sbatch", "munged") if not shutil.which(c)]
    if missing:
        pytest.skip(f"slurm not installed ({', '.join(missing)} missing): apt-get install -y slurmctld slurmd slurm-client munge")
    if os.geteuid() != 0:
        pytest.skip("the test Slurm runs its daemons as root: run the tests as root to include it")
    # a cluster of this run's own (folder, ports, munged): a developer's Slurm and a second test run
    # beside this one (another clone's `make test`) stay untouched
    folder = f"/tmp/onegc-slurm-tests-{os.getpid()}"
    env = {**os.environ, "ONEGC_SLURM_DIR": folder, "ONEGC_SLURM_PORT": str(free_port_pair()), "ONEGC_SLURM_GPUS": "2"}
    up = subprocess.run([str(REPO / "scripts/slurm-up.sh")], capture_output=True, text=True, env=env, timeout=60)
    if up.returncode != 0:
        pytest.skip(f"slurm could not start: {(up.stderr or up.stdout).strip().splitlines()[-1:]}")
    old = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = f"{folder}/slurm.conf"
    yield
    subprocess.run([str(REPO / "scripts/slurm-down.sh")], env=env, timeout=60)
    if old is None:
        os.environ.pop("SLURM_CONF", None)
    else:
        os.environ["SLURM_CONF"] = old


@pytest.fixture
def on_slurm(slurm_cluster, home, fake_gpus):
    yield home
    subprocess.run(["scancel", "--user", os.environ.get("USER") or "root"], capture_output=True)


def _study(tmp_path: Path, name: str, minutes: float, pace: float, agents=("a", "b")) -> Path:
    body = f'name = "{name}"\ntasks = ["t0"]\n[budget]\nminutes = {minutes}\ngrace_s = 2\n'
    for label in agents:
        body += f'[[agents]]\nlabel = "{label}"\nadapter = "scripted"\npace_s = {pace}\n'
    body += '[launcher]\nkind = "slurm"\n'
    return write_study(tmp_path / f"{name}.toml", body)


def test_a_study_runs_through_sbatch_one_gpu_per_job(on_slurm, tmp_path):
    home = on_slurm
    study = load_study(_study(tmp_path, "sl", 0.2, 0))
    report = launch(study, home)
    assert len(report.launched) == 2 and report.where == "slurm"
    states = wait(study, home, timeout_s=90, poll_s=0.5)
    assert [s.state for s in states] == ["done", "done"], [(s.planned.session_id, s.reason) for s in states]
    gpus = []
    for st in states:
        paths = SessionPaths(runs_dir(home) / st.planned.session_id)
        record = read_json(paths.launcher)
        assert record["kind"] == "slurm" and record["job_id"].isdigit()
        assert "--gres=gpu:1" in record["sbatch"]
        gpu = paths.read_config().gpu  # written by the job from Slurm's CUDA_VISIBLE_DEVICES
        assert f"CUDA_VISIBLE_DEVICES={gpu}" in (paths.root / f"slurm-{record['job_id']}.out").read_text()
        assert [g["index"] for g in events(paths)[0]["contract"]["gpu"]] == [int(gpu)]
        gpus.append(gpu)
    assert sorted(gpus) == ["0", "1"], "the two concurrent jobs must get different GPUs"
    assert launch(study, home).skipped_done == 2  # a re-run submits nothing


def test_pause_resume_abort_and_a_job_killed_by_the_scheduler(on_slurm, tmp_path):
    from onegc_tui.cli.study import study as study_cli

    home = on_slurm
    study_file = _study(tmp_path, "ctl", 2, 1.0, agents=("p", "k"))
    study = load_study(study_file)
    launch(study, home)
    p = SessionPaths(runs_dir(home) / "ctl--p--t0--r1")
    k = SessionPaths(runs_dir(home) / "ctl--k--t0--r1")
    for paths in (p, k):
        wait_event(paths, "agent_started", timeout=60)

    # Pause and resume from the CLI: requests in control.jsonl, acknowledged by the runner on the node.
    cli = CliRunner()
    from onegc_tui.cli.main import main as onegc

    assert cli.invoke(onegc, ["pause", p.session_id]).exit_code == 0
    wait_event(p, "budget", timeout=20, state="paused")
    assert cli.invoke(onegc, ["resume", p.session_id]).exit_code == 0
    wait_event(p, "budget", timeout=20, state="resumed")

    # k's runner is killed outright (SIGKILL to the batch step, as an OOM kill or a node failure
    # would): no session_ended, so reconcile must say what happened.
    job = read_json(k.launcher)["job_id"]
    subprocess.run(["scancel", "--batch", "--signal=KILL", job], check=True)
    wait_for(lambda: slurm.job_state(job) not in slurm.ALIVE_STATES, 30, f"slurm job {job} to end")
    reason = wait_for(lambda: reconcile(k), 10, "reconcile to report the dead job")
    assert reason.startswith(f"slurm job {job} ended (FAILED) before the session did"), reason
    assert "CANCELLED" in reason  # Slurm's own line from slurm-<job>.out
    assert not any(e["type"] == "session_ended" for e in events(k))
    by_id = {s.planned.session_id: s for s in survey(study, home)}
    assert by_id[k.session_id].state == "retry" and by_id[k.session_id].reason == reason
    assert reason in status_report(study, home)

    # Re-running the study resubmits k as attempt 2; a plain scancel (SIGTERM first) ends it cleanly.
    assert launch(study, home).retried == [k.session_id]
    assert read_json(runs_dir(home) / f"{k.session_id}.attempt-1" / "attempt.json")["reason"] == reason
    job2 = read_json(k.launcher)["job_id"]
    assert job2 != job
    wait_event(k, "agent_started", timeout=60)
    subprocess.run(["scancel", job2], check=True)
    ended = wait_event(k, "session_ended", timeout=60)
    assert ended["reason"] == "aborted" and "SIGTERM" in ended["detail"]

    # Abort the rest of the study from the CLI: p ends cleanly with reason "aborted".
    result = cli.invoke(study_cli, ["abort", str(study_file), "--yes"])
    assert result.exit_code == 0 and p.session_id in result.output
    ended = wait_event(p, "session_ended", timeout=60)
    assert ended["reason"] == "aborted"
    assert reconcile(p) is None
