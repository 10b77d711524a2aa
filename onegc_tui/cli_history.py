"""``onegc history``: the agent × task matrix without the TUI, with the paper's Table 4 beside it."""

from __future__ import annotations

from pathlib import Path

import click

from onegc_tui import queries
from onegc_tui.analysis import build_matrix
from onegc_tui.export import FORMATS, render_matrix, sessions_csv
from onegc_tui.ingest import Ingester
from onegc_tui.store import Store
from onegc_tui.view import count
from runner.config import usable_home


@click.command("history")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option("--study", default=None, help="only this study's sessions (default: every session)")
@click.option("--no-paper", is_flag=True, help="leave out the paper's reference rows")
@click.option("--demo", is_flag=True, help="include demo-task (t0) sessions")
@click.option("--sessions-csv", "sessions_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="also write one CSV line per session to this file")
def history(fmt: str, study: str | None, no_paper: bool, demo: bool, sessions_path: Path | None) -> None:
    """Print the agent × task matrix: mean ± std over successful repeats, n/N, best of N, Agg."""
    home = usable_home()
    store = Store.open(home)
    try:
        Ingester(home, store).catch_up()
        outcomes = queries.outcomes(store, study, include_demo=demo)
        left_out = 0 if demo or outcomes else len(queries.outcomes(store, study, include_demo=True))
    finally:
        store.close()
    matrix = build_matrix(outcomes, study=study or "ours")
    if not matrix.rows:
        where = f" in study {study}" if study else ""
        why = (f"{count(left_out, 'demo-task session')}{where} left out (--demo includes them)"
               if left_out else f"no sessions{where} under {home / 'runs'}")
        if no_paper:
            raise click.ClickException(f"nothing to print: {why}")
        click.echo(f"note: only the paper's rows: {why}", err=True)
    click.echo(render_matrix(matrix, fmt, include_paper=not no_paper), nl=False)
    if sessions_path is not None:
        sessions_path.write_text(sessions_csv(outcomes))
        click.echo(f"\nwrote {len(outcomes)} sessions to {sessions_path}", err=True)
