"""``onegc export`` (a study into the field's tools: a sqlite-utils database, an Inspect log) and
``onegc report`` (one static HTML page). The analysis modules are imported inside the commands
so that ``onegc --help`` stays quick."""

from __future__ import annotations

from pathlib import Path

import click

from runner.errors import OnegcError

EXPORT_FORMATS = ("sqlite", "eval")
_out = click.option("-o", "--output", "out", required=True, type=click.Path(dir_okay=False, path_type=Path),
                    help="the file to write (replaced if it exists)")
_study = click.option("--study", default=None, help="only this study's sessions (default: every session)")
_noise = click.option("--noise-from", "noise_from", multiple=True, metavar="CONFIG",
                      help="configurations whose reruns give the paired comparisons' noise floor (row labels, "
                           "repeatable; default: those of the scripted agent)")


def _load(study: str | None, noise_from: tuple[str, ...], rescored: bool = False):
    """The study's data, from the home's store caught up with its folders. Both commands only read
    the home: a read-only one (a results folder shared read-only) is read through a copy in memory
    (onegc_tui/store/readonly_home.py); only the output file is written."""
    from onegc_tui.results.study_data import load_study
    from onegc_tui.store.readonly_home import browsable_home, caught_up_store

    home = browsable_home()
    store = caught_up_store(home)
    data = load_study(store, study, include_demo=True, noise_from=noise_from or None, rescored=rescored)
    if not data.sessions:
        store.close()
        where = f" in study {study}" if study else ""
        raise OnegcError(f"nothing to export: no sessions{where} under {home / 'runs'} (run some, or check --study)")
    return store, data


def _writable(out: Path) -> None:
    if not out.parent.is_dir():
        raise OnegcError(f"{out.parent} is not a folder: make it first, or choose another -o")


@click.command("export")
@click.option("--format", "fmt", type=click.Choice(EXPORT_FORMATS), required=True,
              help="sqlite: a study database (sqlite-utils, the [export] extra); eval: an Inspect log ([inspect])")
@_out
@_study
@_noise
def export(fmt: str, out: Path, study: str | None, noise_from: tuple[str, ...]) -> None:
    """Write a study for the field's tools: a tidy SQLite database (Datasette, sqlite-utils) or
    a UK AISI Inspect log (inspect view)."""
    _writable(out)
    store, data = _load(study, noise_from)
    try:
        if fmt == "sqlite":
            from onegc_tui.results.export_sqlite import write_sqlite

            counts = write_sqlite(store, data, out)
            click.echo(f"wrote {out}: " + ", ".join(f"{n} {t}" for t, n in counts.items()), err=True)
        else:
            from onegc_tui.results.export_eval import write_eval

            n = write_eval(store, data, out)
            click.echo(f"wrote {out}: an Inspect log of {n} sessions (inspect view --log-dir {out.parent})", err=True)
    finally:
        store.close()


@click.command("report")
@_out
@_study
@_noise
@click.option("--rescored", is_flag=True,
              help="each session's re-score by a newer harness where it has one (onegc verify --rescore); the page says which")
def report(out: Path, study: str | None, noise_from: tuple[str, ...], rescored: bool) -> None:
    """Write one self-contained HTML page of a study: the matrix beside the paper, anytime curves,
    paired comparisons, integrity flags, time ledgers, costs and each session's timelines."""
    from onegc_tui.results.report import render_report

    _writable(out)
    store, data = _load(study, noise_from, rescored)
    try:
        page = render_report(data)
    finally:
        store.close()
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(out)
    click.echo(f"wrote {out} ({len(data.sessions)} sessions, {len(page) // 1024} KiB, opens offline)", err=True)
