"""``onegc verify`` (re-derive stored sessions and compare them with their record) and ``onegc
bundle`` (a study as one file for a reviewer). docs/verify.md; exit codes in docs/exit-codes.md."""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import click

from onegc_tui.cli.base import session_paths
from runner.errors import OnegcError
from runner.wire.paths import SessionPaths, data_root, runs_dir, usable_home

PROGRESS_EVERY_S = 1.0  # a progress line at most this often where stderr is not a terminal


class Progress:
    """One status line on stderr: rewritten in place on a terminal, else a line a second at most."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.last = 0.0
        self.prefix = ""

    def __call__(self, message: str) -> None:
        line = f"{self.prefix}{message}"
        if self.tty:
            click.echo(f"\r\x1b[2K{line[:200]}", err=True, nl=False)
        elif time.monotonic() - self.last >= PROGRESS_EVERY_S:
            self.last = time.monotonic()
            click.echo(line, err=True)

    def done(self) -> None:
        if self.tty:
            click.echo("\r\x1b[2K", err=True, nl=False)


@click.command("verify")
@click.argument("targets", nargs=-1)
@click.option("--study", "study_file", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="every session of this study file")
@click.option("--rescore", is_flag=True,
              help="score with this harness and keep the new figures beside the original result (rescore.json)")
@click.option("--keep", "keep", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="a bundle: unpack it into this folder and keep it (default: a temporary folder)")
def verify(targets: tuple[str, ...], study_file: Path | None, rescore: bool, keep: Path | None) -> None:
    """Score stored sessions again from their snapshots and compare with their record:
    onegc verify [SESSION… | --study FILE | BUNDLE]. One line per session: reproduced, or what
    differs; a tampered record is named where it differs first. No SESSION: every ended session."""
    from onegc_tui.results import verify as verifying

    bundles = [Path(t) for t in targets if t.endswith(".onegc") or Path(t).is_file()]
    if bundles:
        if len(targets) != 1 or study_file is not None:
            raise click.UsageError("a bundle is verified on its own: onegc verify FILE.onegc")
        from onegc_tui.results.bundle import verify_bundle

        progress = Progress()

        def said(found: verifying.SessionVerify) -> None:
            progress.done()
            click.echo(found.line())

        found, matrix = verify_bundle(bundles[0], data_root(usable_home()), keep, rescore=rescore, progress=progress,
                                      on_session=said)
        progress.done()
        click.echo(matrix)
        click.get_current_context().exit(verifying.exit_code(found))
    home = usable_home()
    sessions = _sessions(home, targets, study_file)
    found = verify_home(home, sessions, rescore)
    click.get_current_context().exit(verifying.exit_code(found))


def verify_home(home: Path, sessions: list[SessionPaths], rescore: bool) -> list:
    """Verify sessions of this home, one line each, and keep what was found in its store."""
    from onegc_tui.results.verify import verify_session
    from onegc_tui.store import record_status
    from onegc_tui.store.readonly_home import caught_up_store
    from runner.scoring import seal

    home_id = seal.home_id(home)
    found = []
    progress = Progress()
    store = caught_up_store(home)  # every session in it, so that what verify finds is kept
    try:
        with tempfile.TemporaryDirectory(prefix="onegc-verify-") as tmp:
            for i, paths in enumerate(sessions, 1):
                progress.prefix = f"verify {i}/{len(sessions)} {paths.session_id}: "
                progress("the record")
                result = verify_session(paths, home_id, data_root(home), Path(tmp) / "scratch", rescore=rescore,
                                        progress=progress)
                progress.done()
                click.echo(result.line())
                for line in result.tolerated[:3]:
                    click.echo(f"  within tolerance: {line}")
                if store.session(paths.session_id) is not None:
                    record_status.apply(store, paths.session_id, paths, home_id)
                found.append(result)
    finally:
        store.close()
    return found


def _sessions(home: Path, targets: tuple[str, ...], study_file: Path | None) -> list[SessionPaths]:
    """The sessions to verify: those named, a study's, or every ended one of the home."""
    if study_file is not None:
        if targets:
            raise click.UsageError("name sessions or --study FILE, not both")
        from runner.launch.study import load_study, plan

        study = load_study(study_file)
        ids = [p.session_id for p in plan(study)]
        paths = [SessionPaths(runs_dir(home) / sid) for sid in ids]
        there = [p for p in paths if p.result.exists()]
        if not there:
            raise OnegcError(f"no ended session of study {study.name} under {runs_dir(home)}: run it first "
                             f"('onegc study {study_file}')")
        return there
    if targets:
        return [session_paths(home, t) for t in targets]
    runs = runs_dir(home)
    folders = sorted(p for p in runs.iterdir() if (p / "result.json").is_file()) if runs.is_dir() else []
    every = [SessionPaths(p) for p in folders if ".attempt-" not in p.name]
    if not every:
        raise OnegcError(f"no ended session under {runs}: nothing to verify")
    return every


@click.command("bundle")
@click.argument("sessions", nargs=-1)
@click.option("--study", "study_file", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="every ended session of this study file")
@click.option("-o", "--output", "out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="the bundle to write (FILE.onegc; replaced if it exists)")
def bundle(sessions: tuple[str, ...], study_file: Path | None, out: Path) -> None:
    """Write sessions as one file a reviewer verifies elsewhere: onegc bundle --study FILE -o study.onegc.
    It holds their records, seals and snapshots (each content once), the harness's version and
    packages, and each task's data checksums (not the data)."""
    from onegc_tui.results.bundle import write_bundle

    home = usable_home()
    paths = _sessions(home, sessions, study_file)
    if not out.parent.is_dir():
        raise OnegcError(f"{out.parent} is not a folder: make it first, or choose another -o")
    study = None
    if study_file is not None:
        from runner.launch.study import load_study

        study = (load_study(study_file).name, study_file.read_text())
    written = write_bundle(home, paths, out, study)
    click.echo(f"{out}: {len(paths)} sessions, {written.objects} snapshot objects stored once "
               f"({written.deduplicated} shared), {written.bytes / 2**20:.1f} MiB")
