"""Starting sessions: the one path by which ``onegc run``, ``onegc demo``, the monitor's
new-session form and ``onegc study`` start sessions: the checks, then the session folders, then
the launch (at once, or through the local GPU queue, whose daemon starts each runner as
:func:`runner.launch.spawn.start_recorded` does for one started at once).

Everything is checked before anything is created (the agent known and usable, the task's data
prepared, the sandbox available unless the session is unsealed), so a refusal is one line and
leaves no folder behind. One session starts at once; several go through the local GPU queue.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.errors import OnegcError
from runner.wire.paths import data_root, is_prepared

if TYPE_CHECKING:
    from runner.wire.paths import SessionPaths
    from runner.wire.session_config import SessionConfig
    from tasks import TaskSpec


def check_prepared(spec: TaskSpec, home: Path) -> None:
    """The task's data is there, or a one-line error naming the command that prepares it
    (runner/session/workspace.py holds the one check, which the runner makes again)."""
    from runner.session.workspace import prepared_dir

    prepared_dir(spec, data_root(home))


def ensure_prepared(spec: TaskSpec, home: Path) -> None:
    """The task's data is there; a CPU task (the demo) makes its own data here, offline, when a
    person starts one (a study only checks: its sessions are planned against prepared data)."""
    if is_prepared(spec.id, data_root(home)):
        return
    if not spec.cpu_ok:
        check_prepared(spec, home)
    argv = [sys.executable, str(spec.folder / "prepare.py"), "--data-dir", str(data_root(home) / spec.id)]
    out = subprocess.run(argv, capture_output=True, text=True)
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["see 'onegc prepare " + spec.short + "'"])[-1]
        raise OnegcError(f"preparing {spec.short} failed: {last.removeprefix('error: ')}")


def ensure_sandbox(sealed: bool, unsealed_hint: str | None = None) -> None:
    """A sealed session needs the agent's sandbox (runner/sandbox/bwrap.py); refuse in one line otherwise.
    ``unsealed_hint`` replaces the CLI's "run with --unsealed" where the way out is another."""
    if not sealed:
        return
    from runner.sandbox.bwrap import status

    ready = status()
    if not ready.ok:
        detail = ready.detail
        raise OnegcError(detail.replace("run with --unsealed", unsealed_hint) if unsealed_hint else detail)


def ensure_agent(agent: str, model: str | None, command: list[str]) -> None:
    """The adapter exists, and what ``onegc doctor`` checks holds: the CLI found, its credentials
    set, a model given where the adapter needs one (runner/agents/preflight.py)."""
    from runner.agents import ADAPTERS
    from runner.agents.preflight import preflight

    if agent not in ADAPTERS:
        raise OnegcError(f"unknown agent '{agent}': choose one of {', '.join(ADAPTERS)}")
    if agent == "command" and not command:
        raise OnegcError("the command agent needs a command line: onegc run TASK --agent command -- CMD ...")
    preflight(agent, model)


def check_start(home: Path, specs: Sequence[TaskSpec], *, sealed: bool, networks: Iterable[str] = (),
                prepare: bool = False, unsealed_hint: str | None = None, open_hint: str | None = None) -> None:
    """What every start checks before it creates anything: each task's data prepared (``prepare``:
    a CPU task makes its own, as ``onegc run`` of the demo does), the sandbox for sealed sessions,
    and a network namespace for each confined policy in ``networks`` (runner/launch/network_choice.py).
    The agents are checked apart (:func:`ensure_agent`): a study on Slurm has its CLIs on the
    compute nodes."""
    from runner.launch.network_choice import ensure_network

    for spec in specs:
        (ensure_prepared if prepare else check_prepared)(spec, home)
    ensure_sandbox(sealed, unsealed_hint)
    for policy in dict.fromkeys(networks):
        ensure_network(policy, *([open_hint] if open_hint else []))


def create_sessions(home: Path, configs: Sequence[SessionConfig]) -> list[SessionPaths]:
    """Write each session's folder and ``session.json`` (the folders must not exist yet)."""
    from runner.launch.spawn import create_session

    return [create_session(config, home) for config in configs]


def start_sessions(home: Path, spec: TaskSpec, agent: str, model: str | None, repeats: int, budget_s: float,
                   gpus: str | None, command: list[str], pace_s: float, network: str | None = None,
                   sealed: bool = True, memory_bytes: int | None = None,
                   max_processes: int | None = None,
                   cost_limit_usd: float | None = None, canaries: bool = True) -> list[SessionPaths]:
    """Check, then create the sessions; one starts at once, several go through the local GPU queue."""
    from runner.launch.local import gpu_slots
    from runner.wire.defaults import default_network, new_session_id
    from runner.wire.session_config import SessionConfig

    ensure_agent(agent, model, command)
    network = network or default_network(agent)
    check_start(home, [spec], sealed=sealed, networks=[network], prepare=True)
    command = [absolute_if_file(a) for a in command]
    slots = gpu_slots(gpus)
    queued = repeats > 1
    configs = [SessionConfig(session_id=new_session_id(spec.short, agent, k), task=spec.id, agent=agent, model=model,
                             repeat=k, budget_s=budget_s, gpu=None if queued else slots[0], command=command,
                             pace_s=pace_s, network=network, sealed=sealed,
                             memory_bytes=memory_bytes, max_processes=max_processes,
                             cost_limit_usd=cost_limit_usd, canaries=canaries)
               for k in range(1, repeats + 1)]
    started = create_sessions(home, configs)
    launch_local(home, started, slots, queued=queued)
    return started


def launch_local(home: Path, sessions: Sequence[SessionPaths], slots: list[str | None], *, queued: bool = True,
                 **record: Any) -> None:
    """Start created sessions on this machine: through the local GPU queue, one session per slot
    (a GPU, or the CPU) and the rest waiting, ``record`` joining each one's ``launcher.json`` (its
    study); or, not ``queued``, each now on the GPU its config names. A queue daemon is started
    even for no new session, to serve the ones queued already (it leaves if another serves them)."""
    from runner.launch import local
    from runner.launch.spawn import spawn_local

    if not queued:
        for paths in sessions:
            spawn_local(paths)
        return
    for paths in sessions:
        local.enqueue(paths, **record)
    local.start_daemon(home, slots)


def absolute_if_file(arg: str) -> str:
    """A command agent's file argument as an absolute path: the agent starts in its workspace
    (inside its sandbox, where such a file is shown read-only at that path), not here."""
    if arg.startswith("-") or not ("/" in arg or "." in arg):
        return arg
    path = Path(arg)
    try:
        is_file = not path.is_absolute() and path.is_file()
    except (OSError, ValueError):  # cannot be a path (ENAMETOOLONG: inline code): passed through untouched
        return arg
    return str(path.absolute()) if is_file else arg  # keep links: a venv's python
