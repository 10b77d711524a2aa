"""``onegc study``: run, resume, survey and abort a study file (agents × tasks × repeats).

    onegc study FILE [--wait] [--gpus 0,1] [--launcher slurm] [--dry-run]   # = onegc study run FILE
    onegc study status FILE [--json]
    onegc study abort FILE

``cli.py`` adds the group with ``main.add_command(study)``. No textual here: this runs on login
nodes and in CI.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import click

from onegc_tui.cli.base import OnegcGroup
from runner.wire.paths import SessionPaths, runs_dir, usable_home
from runner.wire.textsafe import safe_text

if TYPE_CHECKING:
    from runner.launch.study import StudySpec
# runner.launch.study is imported by each command as it runs: its models would cost every other onegc
# command its start-up


class _RunByDefault(OnegcGroup):
    """``onegc study FILE`` means ``onegc study run FILE``; named subcommands still work."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = ["run", *args]
        return super().parse_args(ctx, args)


def _load(file: str) -> StudySpec:
    from runner.launch.study import load_study

    return load_study(Path(file))  # a StudyError is an OnegcError: one line, exit 2


@click.group("study", cls=_RunByDefault, context_settings={"help_option_names": ["-h", "--help"]})
def study() -> None:
    """Run a study file: every agent × task × repeat, resumable (see docs/studies.md)."""


@study.command("run")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--gpus", default=None, help="local launcher: GPU indices to use, e.g. 0,1 (default: the study file's, else all)")
@click.option("--launcher", "kind", type=click.Choice(["local", "slurm"]), default=None,
              help="override the study file's launcher.kind")
@click.option("--wait", "wait_", is_flag=True, help="stay until every session has ended, retrying harness failures")
@click.option("--dry-run", is_flag=True, help="say what would be created, retried and skipped; change nothing")
def run_cmd(file: str, gpus: str | None, kind: str | None, wait_: bool, dry_run: bool) -> None:
    """Create and launch the study's sessions; skip finished ones, retry harness failures."""
    from runner.launch.study import check_agents, launch, plan, status_report, survey, wait

    spec = _load(file)
    home = usable_home()
    if dry_run:
        states = survey(spec, home)
        counts = Counter(s.state for s in states)
        click.echo(f"study {spec.name}: {len(states)} sessions ({len(spec.agents)} agents × {len(spec.tasks)} tasks × "
                   f"{spec.repeats} repeats) — " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
        for st in states:
            if st.state in ("new", "retry", "unlaunched"):
                c = st.planned.config
                click.echo(f"  would {'create' if st.state == 'new' else 'retry' if st.state == 'retry' else 'launch'} "
                           f"{st.planned.session_id}: {c.agent}{' ' + c.model if c.model else ''}, "
                           f"{c.budget_s / 60:g} min")
        return
    if (kind or spec.launcher.kind) == "local":
        check_agents(spec)
    report = launch(spec, home, gpus=gpus, kind=kind)
    total = len(plan(spec))
    click.echo(f"study {spec.name}: {total} sessions — {report.skipped_done} done, {len(report.created)} new, "
               f"{len(report.retried)} retried, {report.active} already queued or running, {len(report.failed)} failed")
    if report.launched:
        click.echo(f"launched {len(report.launched)} on the {report.where}")
    if report.updated:
        click.echo(f"{len(report.updated)} queued sessions took the study file's current settings")
    for st in report.failed:
        click.echo(f"  {st.planned.session_id}: {st.reason}")
    if not wait_:
        click.echo(f"follow with 'onegc study status {file}' or 'onegc monitor'")
        return

    def progress(counts: Counter) -> None:
        click.echo(f"{time.strftime('%H:%M:%S')} {spec.name}: {counts['done']} done, {counts['running']} running, "
                   f"{counts['queued'] + counts['new'] + counts['unlaunched']} queued, "
                   f"{counts['failed'] + counts['retry'] + counts['cancelled']} failed")

    states = wait(spec, home, gpus=gpus, kind=kind, on_progress=progress)
    click.echo(status_report(spec, home))
    if any(s.state in ("failed", "cancelled") for s in states):
        sys.exit(1)


@study.command("status")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="every session and cell as one JSON object")
def status_cmd(file: str, as_json: bool) -> None:
    """Progress per agent × task (done/running/queued/failed) and contract mismatches."""
    from onegc_tui.store.readonly_home import browsable_home
    from runner.launch.study import status_json, status_report

    spec = _load(file)
    home = browsable_home()  # only reads the session folders
    if as_json:
        click.echo(json.dumps(status_json(spec, home), indent=1, default=str))
    else:
        click.echo(safe_text(status_report(spec, home)))  # its details can hold an agent's text


@study.command("abort")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--yes", is_flag=True, help="do not ask for confirmation")
def abort_cmd(file: str, yes: bool) -> None:
    """Take the study's queued sessions off the queue and ask its running ones to stop."""
    from runner.launch.abort import abort_session
    from runner.launch.study import survey

    spec = _load(file)
    home = usable_home()
    live = [s for s in survey(spec, home) if s.state in ("queued", "running")]
    if not live:
        click.echo(f"study {spec.name}: nothing queued or running")
        return
    if not yes:
        click.confirm(f"abort {len(live)} sessions of study {spec.name}?", abort=True)
    for st in live:
        paths = SessionPaths(runs_dir(home) / st.planned.session_id)
        click.echo(abort_session(paths, escalate=False))
