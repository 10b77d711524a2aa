"""``onegc doctor``: what this machine offers a session — agent CLIs, credentials (names only),
containment, GPUs, data and the store."""

from __future__ import annotations

import shutil
import sys

import click

from runner.wire.agents import AGENTS, REAL_AGENTS
from runner.wire.paths import data_root, is_prepared, onegc_home


def _line(ok: bool | None, text: str) -> None:
    mark = {True: "ok  ", False: "MISS", None: "info"}[ok]
    click.echo(f"  [{mark}] {text}")


@click.command("doctor")
def doctor() -> None:
    """Check agent CLIs, credentials, containment, GPUs and prepared data."""
    from concurrent.futures import ThreadPoolExecutor

    from runner.agents.credentials import credential_report
    from runner.agents.locate import cli_status
    from runner.sandbox.bwrap import status as sandbox_status
    from runner.sandbox.network import namespaces_available
    from runner.sandbox.proctree import pidns_available
    from runner.session.agent_env import check
    from runner.session.gpu import gpu_count

    # the slow checks each wait on a process of their own (an agent CLI's --version, a sandbox, an
    # interpreter importing torch): all started at once, then printed in order (issue 37: under 3 s)
    with ThreadPoolExecutor(max_workers=8) as pool:
        clis = {agent: pool.submit(cli_status, agent) for agent in REAL_AGENTS}
        sandbox = pool.submit(sandbox_status)
        pidns = pool.submit(pidns_available)
        network = pool.submit(namespaces_available)
        agent_env = pool.submit(check)
        gpus = pool.submit(gpu_count)
        _report(clis, credential_report, sandbox.result(), pidns.result(), network.result(), agent_env.result(),
                gpus.result())


def _report(clis, credential_report, sandbox, pidns, network, agent_env, gpus) -> None:
    from runner.sandbox.proctree import Freezer
    from runner.session.agent_env import fingerprint
    from tasks import all_tasks

    home = onegc_home()
    click.echo(f"onegc home: {home}")
    click.echo("agents:")  # one entry each (runner/wire/agents.py)
    for entry in AGENTS:
        if entry.name not in clis:
            _line(True, f"{entry.name}: {entry.summary}")
            continue
        status = clis[entry.name].result()
        _line(status.ok, status.message)
        cred = credential_report(entry.name)
        _line(cred.ok, cred.message)
        _line(None, f"{entry.name}: cost {entry.cost}")
    click.echo("containment:")
    _line(sandbox.ok, "sandbox: " + (sandbox.detail if sandbox.ok else f"NOT AVAILABLE: {sandbox.detail}"))
    _line(pidns or None, "--unsealed sessions: PID namespace (unshare --pid) " + (
          "available: the tree dies with the runner" if pidns else
          "not available: a child subreaper instead (run as root or allow user namespaces)"))
    probe = Freezer.create("doctor-probe")
    _line(probe is not None, "freezer cgroup: " + ("available: pause freezes the tree atomically" if probe else
          "not available: pause sends SIGSTOP to every process of the tree"))
    if probe:
        probe.remove()
    net_ok, net_why = network
    _line(net_ok, "network policy api-only/none: " + ("available (network namespace + gate)" if net_ok else
          f"not available ({net_why}): use --network open"))
    sbatch = shutil.which("sbatch") is not None
    _line(sbatch, "slurm: " + ("sbatch found" if sbatch else "sbatch not found (local launcher only)"))
    click.echo("agent environment (what the sandboxed agent can import; requirements-agent.txt):")
    for c in agent_env:
        _line(c.ok, f"{c.package} {c.version or ''}".rstrip() + ("" if c.ok else f": {c.detail}"))
    _line(None, f"fingerprint {fingerprint()} (in every session's contract)")
    click.echo("GPUs:")
    _line(gpus > 0 or None, f"{gpus} visible through NVML" if gpus else
          "none visible: sessions run on the CPU (fine for the demo)")
    click.echo("data:")
    for spec in all_tasks().values():
        ready = is_prepared(spec.id, data_root(home))
        _line(ready or None, f"{spec.short} {'prepared' if ready else 'not prepared: onegc prepare ' + spec.short}")
    click.echo(f"python: {sys.version.split()[0]} ({sys.executable})")
