"""``onegc rm SESSION…``: remove sessions from the home, their folder and their rows in the store.

A 5-second mistake (a typo'd run, an aborted try) should not sit in history for ever. A session
is removed whole: its folder leaves ``runs/`` first, in one rename (so no ingester can read half
of it), then its rows leave ``onegc.db`` in one transaction, then the folder is deleted. Only a
session that has ended (or whose runner is gone) can be removed: a running or queued one is
aborted first. A session of a study is created again by the next ``onegc study run`` of that
study (it is then missing from it). Removing is for good: ``--yes`` says so where no terminal
asks.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import click

from runner.errors import OnegcError
from runner.wire.paths import SessionPaths


def removable(paths: SessionPaths) -> None:
    """Nothing still runs this session, or a one-line error saying what to do first."""
    from runner.launch.reconcile import reconcile
    from runner.launch.records import session_ended

    if paths.result.exists() or session_ended(paths) is not None or reconcile(paths) is not None:
        return
    raise OnegcError(f"session {paths.session_id} has not ended (it runs, or waits in a queue): "
                     f"'onegc abort {paths.session_id}' first")


def remove_session(home: Path, paths: SessionPaths) -> None:
    """Take the session out of ``runs/`` (one rename), out of the store, then off the disk."""
    from onegc_tui.store import DB_NAME, Store

    parked = home / f".removing-{paths.session_id}-{os.getpid()}"
    os.replace(paths.root, parked)
    if (home / DB_NAME).exists():
        store = Store.open(home)
        try:
            store.forget_session(paths.session_id)
        finally:
            store.close()
    shutil.rmtree(parked, ignore_errors=True)


def _size(folder: Path) -> int:
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


@click.command("rm")
@click.argument("session_ids", nargs=-1, required=True)
@click.option("--yes", "-y", is_flag=True, help="do not ask (for scripts): removing is for good")
def rm(session_ids: tuple[str, ...], yes: bool) -> None:
    """Remove ended sessions: their folder under runs/ and their rows in onegc.db (history follows)."""
    import sys

    from onegc_tui.cli.base import session_paths
    from runner.wire.paths import usable_home

    home = usable_home()
    found = [session_paths(home, sid) for sid in session_ids]  # every id checked before anything goes
    for paths in found:
        removable(paths)
    size = sum(_size(p.root) for p in found)
    what = ", ".join(p.session_id for p in found)
    if not yes:
        if not sys.stdin.isatty():
            raise OnegcError(f"removing {what} ({size / 2**20:.1f} MiB) is for good: add --yes")
        click.confirm(f"remove {what} ({size / 2**20:.1f} MiB) for good?", abort=True, err=True)
    for paths in found:
        remove_session(home, paths)
        click.echo(f"removed {paths.session_id}")
