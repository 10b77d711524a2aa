"""``onegc doctor``: what this machine offers a session — agent CLIs, credentials (names only),
containment, GPUs, data and the store."""

from __future__ import annotations

import shutil
import sys

import click

from runner.wire.defaults import REAL_AGENTS
from runner.wire.paths import data_root, is_prepared, onegc_home


def _line(ok: bool | None, text: str) -> None:
    mark = {True: "ok  ", False: "MISS", None: "info"}[ok]
    click.echo(f"  [{mark}] {text}")


@click.command("doctor")
def doctor() -> None:
    """Check agent CLIs, credentials, containment, GPUs and prepared data."""
    from runner.agents.credentials import credential_report
    from runner.agents.locate import cli_status
    from runner.sandbox.proctree import Freezer, pidns_available
    from runner.session.gpu import gpu_count
    from tasks import all_tasks

    home = onegc_home()
    click.echo(f"onegc home: {home}")
    click.echo("agents:")
    _line(True, "scripted: built in (offline, deterministic)")
    for agent in REAL_AGENTS:
        status = cli_status(agent)
        _line(status.ok, status.message)
        cred = credential_report(agent)
        _line(cred.ok, cred.message)
    click.echo("containment:")
    from runner.sandbox.bwrap import status as sandbox_status

    sandbox = sandbox_status()
    _line(sandbox.ok, "sandbox: " + (sandbox.detail if sandbox.ok else f"NOT AVAILABLE: {sandbox.detail}"))
    pidns = pidns_available()
    _line(pidns or None, "--unsealed sessions: PID namespace (unshare --pid) " + (
          "available: the tree dies with the runner" if pidns else
          "not available: a child subreaper instead (run as root or allow user namespaces)"))
    probe = Freezer.create("doctor-probe")
    _line(probe is not None, "freezer cgroup: " + ("available: pause freezes the tree atomically" if probe else
          "not available: pause sends SIGSTOP to every process of the tree"))
    if probe:
        probe.remove()
    from runner.sandbox.network import namespaces_available

    net_ok, net_why = namespaces_available()
    _line(net_ok, "network policy api-only/none: " + ("available (network namespace + gate)" if net_ok else
          f"not available ({net_why}): use --network open"))
    sbatch = shutil.which("sbatch") is not None
    _line(sbatch, "slurm: " + ("sbatch found" if sbatch else "sbatch not found (local launcher only)"))
    click.echo("agent environment (what the sandboxed agent can import; requirements-agent.txt):")
    from runner.session.agent_env import check, fingerprint

    for c in check():
        _line(c.ok, f"{c.package} {c.version or ''}".rstrip() + ("" if c.ok else f": {c.detail}"))
    _line(None, f"fingerprint {fingerprint()} (in every session's contract)")
    click.echo("GPUs:")
    n = gpu_count()
    _line(n > 0 or None, f"{n} visible through NVML" if n else "none visible: sessions run on the CPU (fine for the demo)")
    click.echo("data:")
    for spec in all_tasks().values():
        ready = is_prepared(spec.id, data_root(home))
        _line(ready or None, f"{spec.short} {'prepared' if ready else 'not prepared: onegc prepare ' + spec.short}")
    click.echo(f"python: {sys.version.split()[0]} ({sys.executable})")
