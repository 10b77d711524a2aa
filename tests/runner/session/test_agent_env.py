"""The agents' Python (requirements-agent.txt): what a sandboxed agent can import, and the
environment's fingerprint in every session's contract."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from runner.sandbox.bwrap import status
from runner.session import agent_env
from tests.helpers import events, start_session, wait_event, write_agent

IMPORTS = """
import importlib, json
found = {}
for module in ("sklearn", "scipy", "pandas", "torchvision.ops", "timm"):
    try:
        importlib.import_module(module)
        found[module] = "ok"
    except Exception as exc:
        found[module] = f"{type(exc).__name__}: {exc}"
open("imports.json", "w").write(json.dumps(found))
"""


@pytest.mark.slow
@pytest.mark.skipif(not status().ok, reason=f"no sandbox here: {status().detail}")
def test_the_sandboxed_agent_imports_the_declared_packages_and_the_contract_names_its_environment(home, tmp_path):
    paths = start_session(home, "env1", agent="command", command=write_agent(tmp_path, "imports.py", IMPORTS), budget_s=60)
    ended = wait_event(paths, "session_ended", timeout=120)
    assert ended["reason"] == "completed", ended
    found = json.loads((paths.workspace / "imports.json").read_text())
    assert found["sklearn"] == found["scipy"] == found["pandas"] == "ok", found
    host = {c.package: c.ok for c in agent_env.check()}
    for module, dist in (("torchvision.ops", "torchvision"), ("timm", "timm")):
        assert (found[module] == "ok") == host[dist], (module, found[module])  # inside as outside
    started = next(e for e in events(paths) if e["type"] == "session_started")
    assert started["contract"]["agent_env"] == agent_env.fingerprint()
    assert (paths.root / "agent_env.txt").read_text().splitlines() == list(agent_env.freeze())


@pytest.mark.slow
@pytest.mark.skipif(not status().ok, reason=f"no sandbox here: {status().detail}")
@pytest.mark.skipif(agent_env.torchvision_problem() is not None,
                    reason=f"this environment cannot run T3's backbones: {agent_env.torchvision_problem()}")
def test_torchvision_and_timm_import_inside_the_sandbox(home, tmp_path):
    paths = start_session(home, "env2", agent="command", command=write_agent(tmp_path, "imports.py", IMPORTS), budget_s=60)
    wait_event(paths, "session_ended", timeout=120)
    found = json.loads((paths.workspace / "imports.json").read_text())
    assert found["torchvision.ops"] == found["timm"] == "ok", found


def test_torchvision_is_matched_to_torch_and_the_fix_names_a_pair():
    assert agent_env.matching_torchvision("2.13.0+cpu") == "0.28"
    assert agent_env.matching_torchvision("2.14.1+cu130") == "0.29"
    assert agent_env.matching_torchvision("1.13.1") is None



def test_torchvision_advice_is_one_command_for_this_torchs_build(monkeypatch):
    builds = {"2.13.0+cpu": "'torchvision==0.28.*' --index-url https://download.pytorch.org/whl/cpu",
              "2.14.1+cu130": "'torchvision==0.29.*' --index-url https://download.pytorch.org/whl/cu130",
              "2.13.0": "'torchvision==0.28.*'"}
    for torch, tail in builds.items():
        monkeypatch.setattr(agent_env, "_version", lambda dist, v=torch: v if dist == "torch" else None)
        command = agent_env.torchvision_install()
        assert command == f"{sys.executable} -m pip install --no-deps --force-reinstall {tail}"
        assert agent_env.torchvision_fix() == f"install the torchvision built for torch {torch}: {command}"
    monkeypatch.setattr(agent_env, "_version", lambda dist: "1.13.1" if dist == "torch" else None)
    assert agent_env.torchvision_install() is None and "no torchvision is known for torch 1.13.1" in agent_env.torchvision_fix()


def test_timm_failing_through_torchvision_points_to_its_one_fix(monkeypatch):
    monkeypatch.setattr(agent_env, "DECLARED", {"torchvision": "torchvision.ops", "timm": "timm"})
    monkeypatch.setattr(agent_env, "_version", lambda dist: {"torch": "2.13.0+cpu", "timm": "1.0.31"}.get(dist))
    failed = subprocess.CompletedProcess([], 1, "", "ModuleNotFoundError: No module named 'torchvision'")
    monkeypatch.setattr(agent_env.subprocess, "run", lambda *a, **k: failed)  # timm's import probe fails
    checks = {c.package: c for c in agent_env.check()}  # torchvision is not installed
    assert checks["torchvision"].detail.startswith("not installed: install the torchvision built for torch 2.13.0+cpu: ")
    assert not checks["timm"].ok and checks["timm"].detail == "needs torchvision (the fix is on its line)"


def test_the_imports_are_probed_in_one_interpreter_once_per_environment(tmp_path, monkeypatch):
    """onegc doctor under 3 s: torch is imported once, in one fresh interpreter, and the answer is
    kept under the environment's fingerprint (the next doctor asks no interpreter at all)."""
    import subprocess

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    calls = []

    answer = {m: None for m in agent_env.DECLARED.values()} | {"torchvision.ops": "ImportError: x"}

    def counting(argv, *args, **kwargs):  # the interpreter's answer, without starting one
        calls.append(argv)
        return subprocess.CompletedProcess(argv, 0, stdout=json.dumps(answer) + "\n", stderr="")

    monkeypatch.setattr(agent_env.subprocess, "run", counting)
    monkeypatch.setattr(agent_env, "_version", lambda dist: "1.0")
    first = agent_env.check()
    assert len(calls) == 1 and calls[0][-7:] == list(agent_env.DECLARED.values())
    assert agent_env.check() == first and len(calls) == 1  # from the cache
    tv = next(c for c in first if c.package == "torchvision")
    assert not tv.ok and tv.detail.startswith("does not import (ImportError: x): ")  # then its one fix


class _Dist:
    """An installed distribution as importlib.metadata lists it (name, version, its requirements)."""

    def __init__(self, name: str, version: str, requires: list[str] | None = None):
        self.metadata = {"Name": name}
        self.version = version
        self.requires = requires


def _fingerprint_with(monkeypatch, extra: list) -> str:
    import importlib.metadata

    real = list(importlib.metadata.distributions())
    monkeypatch.setattr(importlib.metadata, "distributions", lambda: [*real, *extra])
    agent_env.agent_packages.cache_clear()
    try:
        return agent_env.fingerprint()
    finally:
        agent_env.agent_packages.cache_clear()


def test_the_harness_extras_leave_the_agents_fingerprint_as_it_was(monkeypatch):
    """Issue 50: `pip install -e '.[export,inspect]'` into the harness's venv (docs/usage.md) made
    every later session another contract. What the extras bring, and nothing the agents' packages
    need, is outside the fingerprint; another numpy is inside it."""
    before = _fingerprint_with(monkeypatch, [])
    extras = [_Dist("sqlite-utils", "3.38", ["click", "tabulate", "pytest; extra == \"test\""]),
              _Dist("inspect_ai", "0.3.140", ["httpx", "pydantic>=2"]), _Dist("tabulate", "0.9.0")]
    assert _fingerprint_with(monkeypatch, extras) == before
    numpy = next(line for line in agent_env.agent_packages() if line.startswith("numpy=="))
    other = [_Dist("numpy", "0.0.1")]  # listed after the real one: importlib's order, the later wins here
    assert numpy and _fingerprint_with(monkeypatch, other) != before


def test_the_agents_packages_are_the_declared_ones_and_what_they_need():
    found = {line.split("==")[0] for line in agent_env.agent_packages()}
    assert {"torch", "numpy", "scipy", "scikit-learn", "pandas"} <= found
    assert "pytest" not in found and "textual" not in found and "onegc" not in found  # the harness's, not the agents'
    installed = {"a": ("1", ["b>=2", "c; extra == 'x'", "d; sys_platform == 'nonesuch'"]), "b": ("2", ["a"]),
                 "c": ("3", []), "d": ("4", [])}
    assert agent_env.closure(installed, ["A"]) == ("a==1", "b==2")  # a cycle ends; extras and foreign markers do not count
