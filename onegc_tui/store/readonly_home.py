"""Browsing a home this user cannot write: a results folder shared read-only, a copy on a mount
that is read-only, another user's home.

The commands that only read (``onegc tasks``, ``sessions``, ``history``, ``study status``) take
the home with :func:`browsable_home` and their store with :func:`caught_up_store`. Where the home
can be written, that is the store in ``onegc.db``, caught up with the session folders as before.
Where it cannot, the store is a copy in memory: ``onegc.db`` read as it is on disk (opened
``immutable``: SQLite then makes no ``-wal``/``-shm`` beside it, which a read-only folder would
refuse), then caught up with the session folders, which are the source of truth, so the view is
as complete as with a writable home. Nothing is written: not the store, not the liveness marks (a
session whose runner died shows its last recorded state).

``onegc monitor`` (and each ``--web`` tab's) browses such a home live, through
:func:`private_store`: the same copy, made in a private temporary file instead of in memory, so
that its several connections, its WAL and the ``data_version`` the dashboard follows work as on
the home's own store; its live ingest reads the session folders into the copy as the sessions
write them, and the copy is removed when the monitor ends. The monitor shows that it is a
read-only view, and its keys that would write (pause, resume, abort, new session, export) say why
not in one line. The commands that write (run, pause, abort, prepare, reindex) still refuse such
a home in one line naming what can be done (runner/wire/paths.py ``usable_home``).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from onegc_tui.store import DB_NAME, Store, StoreUnusable, redirect, unusable
from onegc_tui.store.search import holds
from onegc_tui.store.schema import migrate
from runner.wire.paths import onegc_home, usable_home


def writable(home: Path) -> bool:
    """This user can write the home (and its store, where there is one)."""
    db = home / DB_NAME
    return os.access(home, os.W_OK | os.X_OK) and (not db.exists() or os.access(db, os.W_OK))


def browsable_home() -> Path:
    """The home for a command that only reads it: as :func:`usable_home` gives it, or, where it
    exists and can be read but not written, as it is."""
    home = onegc_home()
    if home.is_dir() and os.access(home, os.R_OK | os.X_OK) and not writable(home):
        return home
    return usable_home()


def copy_store(db: Path, conn: sqlite3.Connection) -> None:
    """``db`` as it is on disk into ``conn``, read-only (nothing where there is none). Opened
    ``immutable``: SQLite makes no ``-wal``/``-shm`` beside it, which a read-only folder would
    refuse; a StoreUnusable naming the file where SQLite cannot read it."""
    if not db.exists():
        return
    try:
        source = sqlite3.connect(f"file:{quote(str(db))}?mode=ro&immutable=1", uri=True)
        try:
            source.backup(conn)
        finally:
            source.close()
    except sqlite3.Error as exc:
        raise StoreUnusable(unusable(db, exc)) from None


class MemoryCopy(Store):
    """A store in memory, copied from ``onegc.db`` read-only (or empty, where there is none)."""

    def __init__(self, db: Path):
        self.path = db
        conn = sqlite3.connect(":memory:", check_same_thread=True)
        try:
            copy_store(db, conn)
            conn.create_function("holds", 2, holds, deterministic=True)
            migrate(conn)
        except sqlite3.Error as exc:
            conn.close()
            raise StoreUnusable(unusable(db, exc)) from None
        except BaseException:  # SchemaTooNew, or the copy's own StoreUnusable: as they are
            conn.close()
            raise
        self.conn = conn


@contextmanager
def private_store(home: Path) -> Iterator[bool]:
    """Where ``home`` cannot be written, its store for this process is a private copy for as long
    as this lasts: ``onegc.db`` copied read-only (:func:`copy_store`) into a file in a temporary
    folder only this user can read (0700), which every :meth:`Store.open` of ``home`` opens
    instead (:func:`onegc_tui.store.redirect`), removed at the end. Yields whether it is so:
    True for a read-only view. Where the home can be written, nothing changes (False)."""
    if writable(home):
        yield False
        return
    folder = Path(tempfile.mkdtemp(prefix="onegc-monitor-"))
    try:
        copy = folder / DB_NAME
        conn = sqlite3.connect(copy)
        try:
            copy_store(home / DB_NAME, conn)
        finally:
            conn.close()
        redirect(home, copy)
        try:
            yield True
        finally:
            redirect(home, None)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def caught_up_store(home: Path) -> Store:
    """The store of ``home`` with everything in its session folders (close it when done)."""
    from onegc_tui.store.ingest import Ingester
    from onegc_tui.store.parallel import catch_up

    if writable(home):
        store = Store.open(home)
        try:
            catch_up(Ingester(home, store))
        except BaseException:
            store.close()
            raise
        return store
    store = MemoryCopy(home / DB_NAME)
    try:
        ingester = Ingester(home, store)
        ingester.discover()  # known sessions: the one-process catch-up (the two-process one writes a part file)
        ingester.ingest_all()
    except BaseException:
        store.close()
        raise
    return store
