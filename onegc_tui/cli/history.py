"""``onegc history``: the agent × task matrix without the TUI, with the paper's Table 4 beside it."""

from __future__ import annotations

import json
from pathlib import Path

import click

from onegc_tui.cli.base import DURATION
from runner.errors import OnegcError

# the formats of onegc_tui.results.export (tests/cli checks they agree): named here so that `onegc --help`
# and every other command start without the analysis modules (lazy imports keep start-up short)
FORMATS = ("table", "csv", "md", "latex", "json")


@click.command("history")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option("--study", default=None, help="only this study's sessions (default: every session)")
@click.option("--no-paper", is_flag=True, help="leave out the paper's reference rows")
@click.option("--demo", is_flag=True, help="also the demo-task (t0) sessions, in a table of their own")
@click.option("--sessions-csv", "sessions_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="also write one CSV line per session to this file")
@click.option("--paired", is_flag=True,
              help="also the paired comparisons: every two configurations per task, by repeat (SD, SEM, bootstrap CI)")
@click.option("--noise-from", "noise_from", multiple=True, metavar="CONFIG",
              help="with --paired: configurations whose reruns give the noise floor (default: the scripted agent's)")
@click.option("--at-budget", "at_minutes", type=DURATION, default=None, metavar="MINUTES",
              help="also what a budget this long (40, 90s, 20m, 1h) would have scored, from the stored checkpoint "
                   "times (the official rule on the checkpoints by then: a truncation, not a rerun)")
@click.option("--rescored", is_flag=True,
              help="cells from each session's re-score by a newer harness where it has one (onegc verify --rescore)")
def history(fmt: str, study: str | None, no_paper: bool, demo: bool, sessions_path: Path | None, paired: bool,
            noise_from: tuple[str, ...], at_minutes: float | None, rescored: bool) -> None:
    """Print the agent × task matrix: mean ± std over successful repeats, n/N, best of N, Agg."""
    from onegc_tui.results.export import history_studies, json_doc, json_text, render_history, sessions_csv
    from onegc_tui.results.history_cells import history as stored_history
    from onegc_tui.results.matrix import split_demo
    from onegc_tui.results.usage_table import session_usage
    from onegc_tui.store.readonly_home import browsable_home, caught_up_store
    from onegc_tui.views import monitor_data
    from onegc_tui.views.format import count

    home = browsable_home()  # only reads: a read-only home is read into memory (onegc_tui/store/readonly_home.py)
    store = caught_up_store(home)
    try:
        measured = monitor_data.measured_baselines(store)
        # the matrices from the cells the store keeps (only those whose sessions changed are computed)
        found = stored_history(store, study, include_demo=demo, measured={t: m.mean for t, m in measured.items()},
                               rescored=rescored)
        studies = monitor_data.studies(store) if study is None else []
        # history holds every session of the home, or says how to see the rest (issue 37)
        left_out = 0 if demo else monitor_data.demo_sessions(store, study)
        # each session, where something beside the matrix reads them
        wanted = fmt == "table" or paired or sessions_path is not None or rescored
        outcomes = monitor_data.outcomes(store, study, include_demo=demo, rescored=rescored) if wanted else []
        usage = session_usage(store, [o.session_id for o in outcomes]) if fmt == "table" else {}
    finally:
        store.close()
    bench, demo_outcomes = split_demo(outcomes)
    matrix, demo_matrix = found.bench, found.other
    where = f" in study {study}" if study else ""
    if not matrix.rows and demo_matrix is None:
        why = (f"{count(left_out, 'demo-task session')}{where} left out (--demo includes them)"
               if left_out else f"no sessions{where} under {home / 'runs'}")
        if no_paper:
            raise OnegcError(f"nothing to print: {why}")
        click.echo(f"note: only the paper's rows: {why}", err=True)
    aborted = matrix.n_aborted + (demo_matrix.n_aborted if demo_matrix is not None else 0)
    if aborted:
        click.echo(f"note: {count(aborted, 'aborted session')}{where} left out of the cells (not a run of the protocol): "
                   "'onegc sessions' lists them, 'onegc rm' removes them", err=True)
    if fmt in ("table", "md"):  # what the cells are (the data formats carry it in their fields)
        click.echo("note: cells are official scores, each on its task's scored split (val on T1-T3 and T7, test on "
                   "T4-T6; docs/numbers.md)", err=True)
    if rescored or any(o.rescore_by for o in outcomes):  # which scores the cells are, always said
        from onegc_tui.views.outcomes import scores_note

        click.echo(f"note: {scores_note(outcomes, rescored)}", err=True)
    if studies:  # every session is pooled here; each study has its own history
        click.echo(f"note: studies here: {', '.join(studies)} (--study NAME shows one)", err=True)
    if left_out and (matrix.rows or demo_matrix is not None):
        click.echo(f"note: {count(left_out, 'demo-task session')}{where} left out: --demo shows them", err=True)
    if fmt == "json":  # one JSON document, whatever else is asked for: its parts are keys of it
        doc = json_doc(history_studies(matrix, demo_matrix), include_paper=not no_paper)
        if paired:
            doc["paired"] = json.loads(_paired(outcomes, noise_from, "json"))
        if at_minutes is not None:
            doc["at_budget"] = _at_budget_doc(home, study, demo, at_minutes / 60)
        click.echo(json_text(doc))
    else:
        rendered = render_history(matrix, demo_matrix, fmt, include_paper=not no_paper)
        _text_history(rendered, fmt, measured, outcomes, noise_from if paired else None, bench, demo_outcomes, usage,
                      study)
        if at_minutes is not None:
            click.echo("\n" + _at_budget(home, study, demo, at_minutes / 60), nl=False)
    if sessions_path is not None:
        sessions_path.write_text(sessions_csv(outcomes))
        click.echo(f"\nwrote {len(outcomes)} sessions to {sessions_path}", err=True)


def _text_history(rendered: str, fmt: str, measured: dict, outcomes: list, noise_from: tuple[str, ...] | None,
                  bench: list, demo_outcomes: list, usage: dict, study: str | None) -> None:
    """The history in a text format (table, md, latex, csv): its sections one after another."""
    from onegc_tui.results.usage_table import usage_rows, usage_table

    click.echo(rendered, nl=False)
    if measured and fmt in ("table", "md"):
        click.echo("\nbaselines measured here (onegc baseline): " + "; ".join(
            f"{t.upper()} {m.mean:.4f}" + (f" ± {m.std:.4f}" if m.std is not None else "") + f" (n={m.n})"
            for t, m in sorted(measured.items())))
    if noise_from is not None:
        click.echo("\n" + _paired(outcomes, noise_from, "csv" if fmt == "csv" else "table"), nl=False)
    if fmt == "table":  # what each row spent (the data formats keep their columns as they are)
        for sessions, title in ((bench, study or "ours"), (demo_outcomes, f"{study or 'ours'} (demo tasks)")):
            lines = usage_table(usage_rows(sessions, usage), title)
            if lines:
                click.echo("\n" + "\n".join(lines))


def _paired(outcomes: list, noise_from: tuple[str, ...], fmt: str) -> str:
    """``--paired``: every two configurations per task, by repeat."""
    from onegc_tui.results.paired import study_comparisons
    from onegc_tui.results.paired_table import render_paired

    return render_paired(study_comparisons(outcomes, noise_from or None), fmt)


AT_BUDGET_NOTE = ("the official rule (val-best, its scored-split score) on the checkpoints that had appeared by then: "
                  "a truncation of the sessions as they ran, not a rerun")


def _at_budget_cells(home: Path, study: str | None, demo: bool, minutes: float) -> list:
    from onegc_tui.results.study_data import at_budget_cells, load_study
    from onegc_tui.store.readonly_home import caught_up_store

    store = caught_up_store(home)  # only reads: a read-only home too
    try:
        return at_budget_cells(load_study(store, study, include_demo=demo), minutes=minutes)
    finally:
        store.close()


def _at_budget_doc(home: Path, study: str | None, demo: bool, minutes: float) -> dict:
    """``--at-budget`` in the JSON document."""
    cells = _at_budget_cells(home, study, demo, minutes)
    return {"minutes": minutes, "note": AT_BUDGET_NOTE, "cells": [
        {"task": c.task, "configuration": c.label, "ran_minutes": c.budget_minutes, "n_scored": c.n_scored, "n": c.n,
         "mean_official": c.mean} for c in cells]}


def _at_budget(home: Path, study: str | None, demo: bool, minutes: float) -> str:
    """``--at-budget``: per configuration × task, the mean score a ``minutes`` budget would have given."""
    from onegc_tui.views.text_table import text_table

    cells = _at_budget_cells(home, study, demo, minutes)
    rows = [[c.task, c.label, f"{c.budget_minutes:g}", f"{c.n_scored}/{c.n}", "-" if c.mean is None else f"{c.mean:.4f}"]
            for c in cells]
    head = ["task", "configuration", "ran (min)", "scored by then", f"mean at {minutes:.4g} min"]
    note = AT_BUDGET_NOTE
    title = f"What a {minutes:.4g}-minute budget would have scored"
    return "\n".join([title, *text_table(head, rows, right=frozenset({2, 3, 4})), note]) + "\n"
