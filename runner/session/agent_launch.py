"""Starting the agent: its environment, its command line (inside its sandbox where the session is
sealed, and inside the network policy's namespace), its prompt, and its process tree
(runner/sandbox/proctree.py) in its own cgroup under the session's caps."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from runner.agents import LaunchContext
from runner.agents.base import AgentAdapter
from runner.agents.prompt import standard_prompt
from runner.integrity import sealed_split
from runner.sandbox import bwrap as sandbox
from runner.sandbox.caps import CapGroup
from runner.sandbox.execlog import ExecLog
from runner.sandbox.network import NetworkSandbox
from runner.sandbox.proctree import ProcessTree, start_tree
from runner.wire.jsonl import EventWriter
from runner.wire.paths import SessionPaths
from runner.wire.session_config import SessionConfig
from tasks import TaskSpec

KEPT_ONEGC_VARS = ("ONEGC_NVML_MODULE", "ONEGC_FAKE_GPUS")  # the only ONEGC_* the agent inherits (a fake GPU's)


def agent_env(config: SessionConfig, paths: SessionPaths, launches: ExecLog, deadline: float,
              spec: TaskSpec | None = None) -> dict[str, str]:
    """The runner's environment as the agent gets it: no ONEGC_* settings of the harness, the exec
    shims first on PATH (runner/sandbox/execlog.py), its GPU, its deadline."""
    env = dict(os.environ)
    for key in list(env):
        if key.startswith("ONEGC_") and key not in KEPT_ONEGC_VARS:
            env.pop(key)
    bin_dir = str(Path(sys.executable).parent)
    env["PATH"] = launches.path_with_shims(bin_dir + os.pathsep + env.get("PATH", ""))
    env["CUDA_VISIBLE_DEVICES"] = config.gpu or ""
    env["PWD"] = str(paths.workspace)  # OpenCode takes its working folder from $PWD, not the cwd
    env["ONEGC_DEADLINE"] = f"{deadline:.3f}"
    env["ONEGC_SESSION"] = config.session_id
    if config.scored_split == "sealed":  # the kit asks the harness (runner/integrity/sealed_split.py)
        seen_at = sealed_split.ANSWERS_INSIDE if config.sealed else sealed_split.answers_dir(paths.root)
        assert spec is not None
        env.update(sealed_split.agent_vars(spec, paths.workspace, seen_at))
    env["PYTHONUNBUFFERED"] = "1"
    return env


def start_agent(adapter: AgentAdapter, config: SessionConfig, spec: TaskSpec, paths: SessionPaths, *,
                launches: ExecLog, net: NetworkSandbox | None, caps: CapGroup | None,
                gpus: tuple[tuple[int, ...], tuple[str | None, ...]], deadline: float, events: EventWriter,
                version: str | None) -> ProcessTree:
    """Start the agent and emit ``agent_started``. ``gpus``: the assigned GPUs' device-node minors
    and UUIDs; ``launches``: the exec log, started here."""
    paths.agent_home.mkdir(exist_ok=True)
    launches.start(sandbox.agent_ids(config.session_id) if config.sealed else None)
    ctx = LaunchContext(
        workspace=paths.workspace,
        session_dir=paths.root,
        agent_home=paths.agent_home,
        prompt=standard_prompt(spec.title, config.budget_s / 60, spec.scored_split,
                               config.sealed_answers if config.scored_split == "sealed" else None,
                               text_sealed=spec.inputs_are_targets),
        model=config.model,
        base_env=agent_env(config, paths, launches, deadline, spec),
        extra_args=tuple(config.agent_args),
    )
    if hasattr(adapter, "configure"):
        adapter.configure(config)
    price_warning = getattr(adapter, "price_warning", None)
    if price_warning:
        events.emit("warning", code="prices", message=price_warning)
    prepare_home = getattr(adapter, "prepare_home", None)
    if prepare_home:
        prepare_home(ctx)
    argv = agent_argv = adapter.argv(ctx)
    env = adapter.env(ctx)
    if config.sealed:
        answers = ((sealed_split.answers_dir(paths.root), sealed_split.ANSWERS_INSIDE),) \
            if config.scored_split == "sealed" else ()
        argv, env = _seal(adapter, paths, launches, gpus, config.session_id, argv, env, answers)
    if net is not None:  # joined from outside: the sandboxed agent could not enter it itself
        argv = net.wrap_argv(argv)
        env.update(net.env())
    stdin = subprocess.PIPE if adapter.prompt_on_stdin else subprocess.DEVNULL
    tree = start_tree(argv, cwd=paths.workspace, env=env, stdin=stdin, stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE, name=f"{config.session_id}.{os.getpid()}",  # its own cgroup
                      sandboxed=config.sealed, caps=caps)
    if adapter.prompt_on_stdin and tree.popen.stdin is not None:  # stdin=PIPE gives a stream
        try:
            tree.popen.stdin.write(ctx.prompt.encode())
        finally:
            tree.popen.stdin.close()  # an open stdin makes some CLIs wait forever
    events.emit("agent_started", pid=tree.root_pid, argv=[short(a) for a in agent_argv],
                containment=tree.mode, version=version)
    return tree


def _seal(adapter: AgentAdapter, paths: SessionPaths, launches: ExecLog,
          gpus: tuple[tuple[int, ...], tuple[str | None, ...]], session_id: str,
          argv: list[str], env: dict[str, str], mounts: tuple[tuple[Path, Path], ...] = ()
          ) -> tuple[list[str], dict[str, str]]:
    """The agent's command line and environment inside its sandbox (runner/sandbox/bwrap.py)."""
    home = paths.root.parent.parent
    minors, uuids = gpus
    plan = sandbox.SandboxPlan(
        workspace=paths.workspace, agent_home=paths.agent_home, private=paths.sandbox,
        protected=(home,), read_only=tuple(adapter.read_only_paths() + sandbox.extra_read_only(os.environ)),
        mounts=(launches.mount(), *mounts), gpu_minors=minors, ids=sandbox.agent_ids(session_id))
    ws = paths.workspace
    sandbox.hand_over(plan, [ws, paths.checkpoints, ws / "train.py", ws / "program.md"])
    return sandbox.wrap(plan, argv, sandbox.status().bwrap or "bwrap"), sandbox.sandbox_env(env, plan, uuids)


def short(arg: str, limit: int = 200) -> str:
    """``arg`` cut to ``limit`` characters, marked where cut."""
    return arg if len(arg) <= limit else arg[:limit] + "…"
