"""Starting sessions: the one path by which ``onegc run``, ``onegc demo``, the monitor's
new-session form, ``onegc baseline`` and ``onegc study`` start sessions, each from start requests
(runner/launch/request.py): the checks, then the session folders, then the launch (at once, or
through the local GPU queue, whose daemon starts each runner as
:func:`runner.launch.spawn.start_recorded` does for one started at once).

Everything is checked before anything is created (the agent known and usable, the task's data
prepared, the sandbox available unless the session is unsealed, the network policy, the GPUs
asked for), so a refusal is one line and leaves no folder behind. One session starts at once;
several go through the local GPU queue.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.errors import OnegcError
from runner.wire.paths import data_root, is_prepared

if TYPE_CHECKING:
    from runner.launch.request import StartRequest
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


def ensure_agent(agent: str, model: str | None) -> None:
    """What ``onegc doctor`` checks holds: the agent's CLI found, its credentials set, a model
    given where the adapter needs one (runner/agents/preflight.py). The agent's name and a command
    agent's command line are the request's own checks (runner/launch/request.py)."""
    from runner.agents.preflight import preflight

    preflight(agent, model)


def check_requests(home: Path, requests: Sequence[StartRequest], *, local: bool = True, prepare: bool = True,
                   agents: bool = True, unsealed_hint: str | None = None,
                   open_hint: str | None = None) -> list[str | None]:
    """What every start checks before it creates anything, for each request
    (runner/launch/request.py): its agent usable (:func:`ensure_agent`; ``agents`` False where the
    caller asked already: ``onegc study`` does before a local launch, each agent named by its
    label), its task's data prepared (``prepare``: a CPU task makes its own, as a person's start
    of the demo does; a study only checks, its sessions planned against prepared data). Where the
    sessions run here (``local``), also the sandbox for sealed sessions, a network namespace for
    each confined policy (runner/launch/network_choice.py) and the GPUs asked for
    (runner/launch/local.py); on Slurm the compute nodes have their own, and the agents' CLIs are
    theirs too. Returns the local GPU slots of the first request (``[]`` where not local)."""
    from runner.launch.local import gpu_slots
    from runner.launch.network_choice import ensure_network

    if local and agents:
        for agent, model in dict.fromkeys((r.agent, r.model) for r in requests):
            ensure_agent(agent, model)
    for spec in {req.task: req.spec for req in requests}.values():
        (ensure_prepared if prepare else check_prepared)(spec, home)
    if not local:
        return []
    ensure_sandbox(any(req.sealed for req in requests), unsealed_hint)
    for policy in dict.fromkeys(req.network for req in requests):
        ensure_network(policy, *([open_hint] if open_hint else []))
    slots = [gpu_slots(req.gpus) for req in requests]
    return slots[0] if slots else gpu_slots()


def create_sessions(home: Path, configs: Sequence[SessionConfig]) -> list[SessionPaths]:
    """Write each session's folder and ``session.json`` (the folders must not exist yet)."""
    from runner.launch.spawn import create_session

    return [create_session(config, home) for config in configs]


def start_sessions(home: Path, request: StartRequest, session_id: Callable[[int], str] | None = None,
                   first_repeat: int = 1) -> list[SessionPaths]:
    """Check, then create the request's sessions (``session_id(k)`` names repeat ``k``; default a
    fresh dated id); one starts at once, several go through the local GPU queue."""
    from runner.wire.defaults import new_session_id

    slots = check_requests(home, [request])
    name = session_id or (lambda k: new_session_id(request.spec.short, request.agent, k))
    queued = request.repeats > 1
    configs = [request.config(name(k), k, None if queued else slots[0])
               for k in range(first_repeat, first_repeat + request.repeats)]
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


def absolute_command(command: Sequence[str]) -> tuple[str, ...]:
    """A person's command line for the command agent, each file argument made absolute."""
    return tuple(absolute_if_file(a) for a in command)


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
