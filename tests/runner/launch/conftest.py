"""Helpers for the study tests: write a study file, watch sessions, and kill -9 by pid exactly
what a study started (queue daemon, runners, their agents) — never anything else."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import psutil
import pytest

from runner.launch.local import daemon_info
from runner.wire.liveness import ProcessId
from runner.wire.paths import runs_dir
from tests.helpers import REPO


@pytest.fixture
def fake_gpus(monkeypatch):
    """Two fake GPUs for the queue and the runners' samplers (runner.session.fake_nvml)."""
    monkeypatch.setenv("ONEGC_NVML_MODULE", "runner.session.fake_nvml")
    monkeypatch.setenv("ONEGC_FAKE_GPUS", "2")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


@pytest.fixture
def reaper(home):
    """Kills whatever the test's study left running, at teardown."""
    yield home
    kill_everything(home)


def write_study(path: Path, body: str) -> Path:
    path.write_text(textwrap.dedent(body))
    return path


def study_processes(home: Path) -> list[psutil.Process]:
    """The queue daemon and every runner under ``home/runs`` (pid + start ticks checked), with
    all their descendants."""
    roots: list[psutil.Process] = []
    info = daemon_info(runs_dir(home))
    if info and info.get("pid"):
        try:
            roots.append(psutil.Process(int(info["pid"])))
        except psutil.NoSuchProcess:
            pass
    for folder in runs_dir(home).glob("*"):
        for name in ("runner.json", "launcher.json"):
            try:
                rec = json.loads((folder / name).read_text())
                proc = psutil.Process(int(rec["pid"]))
            except (OSError, ValueError, KeyError, TypeError, psutil.NoSuchProcess):
                continue
            if "start_ticks" not in rec or ProcessId(proc.pid, rec["boot_id"], rec["start_ticks"]).alive():
                roots.append(proc)
    found = {}
    for proc in roots:
        try:
            for p in [proc, *proc.children(recursive=True)]:
                found[p.pid] = p
        except psutil.NoSuchProcess:
            continue
    return list(found.values())


def kill_everything(home: Path) -> int:
    procs = study_processes(home)
    for p in procs:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(procs, timeout=10)
    return len(procs)


def read_json(path: Path) -> dict:
    return json.loads(path.read_text())


def env_with_repo() -> dict[str, str]:
    env = dict(os.environ)
    repo = str(REPO)
    env["PYTHONPATH"] = repo + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env
