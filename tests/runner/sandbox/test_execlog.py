"""The exec shim: every python launch through PATH is recorded, however short, with the PID the
runner sees; the launched interpreter is the one PATH named, unchanged."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner.sandbox.execlog import ExecLog
from runner.sandbox.proctree import pidns_available

VENV_BIN = str(Path(sys.executable).parent)


@pytest.fixture
def log(tmp_path):
    folder = tmp_path / ("deep-" * 20) / "exec"  # a socket path far over the 108-byte limit
    started = ExecLog(folder).start()
    yield started
    started.close()


def run(log: ExecLog, script: str, cwd: Path, **kw) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=log.path_with_shims(VENV_BIN + os.pathsep + os.environ.get("PATH", "")))
    return subprocess.run(["sh", "-c", script], env=env, cwd=cwd, capture_output=True, text=True, timeout=60, **kw)


@pytest.mark.slow
def test_three_instant_launches_are_three_records(log, tmp_path):
    (tmp_path / "run_2.py").write_text("print('quick')\n")
    out = run(log, "for i in 1 2 3; do python run_2.py; done; python3 -c 'raise SystemExit(3)' || echo rc=$?", tmp_path)
    assert out.stdout == "quick\nquick\nquick\nrc=3\n", out.stderr  # exit codes pass through
    log.close()  # every record sent is now in hand
    launches = log.drain()
    assert [launch.argv for launch in launches] == [("python", "run_2.py")] * 3 + [("python3", "-c", "raise SystemExit(3)")]
    assert all(launch.cwd == str(tmp_path) and launch.pid > 0 for launch in launches)
    assert len({launch.pid for launch in launches}) == 4


@pytest.mark.slow
def test_the_launched_interpreter_is_the_one_path_names(log, tmp_path):
    out = run(log, "python -c 'import sys; print(sys.executable); print(sys.prefix); print(input())'", tmp_path,
              input="from stdin\n")  # fmt: skip
    assert out.stdout.splitlines() == [str(Path(VENV_BIN) / "python"), sys.prefix, "from stdin"], out.stderr


@pytest.mark.slow
def test_a_python_not_on_the_rest_of_path_is_not_found(log, tmp_path):
    env = {"PATH": log.path_with_shims("/nonexistent")}
    out = subprocess.run([str(log.bin_dir / "python"), "-c", "print(1)"], env=env, capture_output=True, text=True)
    assert out.returncode == 127 and "python: command not found" in out.stderr


@pytest.mark.slow
def test_without_a_listener_the_script_still_runs(log, tmp_path):
    log.close()
    out = run(log, "python -c 'print(42)'", tmp_path)
    assert out.returncode == 0 and out.stdout == "42\n"
    assert log.drain() == []


@pytest.mark.skipif(not pidns_available(), reason="no PID namespaces here (unshare --pid)")
@pytest.mark.slow
def test_the_pid_is_the_runners_view_across_a_pid_namespace(log, tmp_path):
    """The kernel translates the sender's PID (SCM_CREDENTIALS) into the receiver's namespace."""
    script = "python -c 'import os, time; print(os.getpid(), flush=True); time.sleep(3)' & sleep 1; wait"
    proc = subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child", "sh", "-c", script], cwd=tmp_path,
                            env=dict(os.environ, PATH=log.path_with_shims(VENV_BIN + os.pathsep + os.environ["PATH"])),
                            stdout=subprocess.PIPE, text=True)  # fmt: skip
    inner = int(proc.stdout.readline())
    try:
        import time

        for _ in range(100):
            launches = log.drain()
            if launches:
                break
            time.sleep(0.05)
        (launch,) = launches
        status = Path(f"/proc/{launch.pid}/status").read_text().splitlines()
        nspid = next(line for line in status if line.startswith("NSpid:"))
        assert nspid.split()[1:] == [str(launch.pid), str(inner)]  # outer (ours), then the namespace's own
    finally:
        proc.wait(timeout=30)
