"""``onegc baseline TASK``: run the task's baseline ``train.py`` as the agent, recorded as sessions of
the study ``baseline`` (runner/launch/baseline.py); history then shows Agg against it too."""

from __future__ import annotations

import click

from onegc_tui.cli.base import DURATION
from runner.errors import OnegcError
from runner.wire.paths import usable_home


def _constants(items: tuple[str, ...]) -> dict[str, object]:
    import ast

    out: dict[str, object] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        try:
            value = ast.literal_eval(raw) if sep else None
        except (ValueError, SyntaxError):
            value = None
        if not sep or value is None:
            raise OnegcError(f"--set {item!r}: write NAME=VALUE with a Python literal, e.g. --set EPOCHS=5")
        out[name] = value
    return out


@click.command("baseline")
@click.argument("task")
@click.option("--repeats", "-n", default=1, show_default=True, type=click.IntRange(1, 100))
@click.option("--budget", "budget_s", type=DURATION, default=None,
              help="minutes, or 90s, 2m, 1h (default: the task's budget; the baseline ends long before)")
@click.option("--gpus", default=None, help="GPU indices to use, e.g. 0,1 (default: all visible)")
@click.option("--set", "sets", multiple=True, metavar="NAME=VALUE",
              help="change a constant of train.py first (another recipe: give it its own --label)")
@click.option("--label", default="train", show_default=True, help="names the recipe in the session ids")
def baseline(task: str, repeats: int, budget_s: float | None, gpus: str | None, sets: tuple[str, ...], label: str) -> None:
    """Measure TASK's baseline under this harness: onegc baseline t6 -n 5 (then onegc history)."""
    from runner.launch.baseline import start_baseline_sessions
    from tasks import UnknownTask, get_task

    try:
        spec = get_task(task)
    except UnknownTask as exc:
        raise OnegcError(str(exc)) from None
    home = usable_home()
    sessions = start_baseline_sessions(home, spec, repeats, budget_s, gpus, _constants(sets), label)
    for p in sessions:
        click.echo(f"started {p.session_id} ({p.root})", err=True)
    click.echo("follow them with 'onegc' or 'onegc sessions'; 'onegc history' shows Agg_ours once they end", err=True)
