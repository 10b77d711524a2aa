"""Browsing a home this user cannot write: a results folder shared read-only, a copy on a mount
that is read-only, another user's home.

The commands that only read (``onegc tasks``, ``sessions``, ``history``, ``study status``) take
the home with :func:`browsable_home` and their store with :func:`caught_up_store`. Where the home
can be written, that is the store in ``onegc.db``, caught up with the session folders as before.
Where it cannot, the store is a copy in memory: ``onegc.db`` read as it is on disk (opened
``immutable``: SQLite then makes no ``-wal``/``-shm`` beside it, which a read-only folder would
refuse), then caught up with the session folders, which are the source of truth, so the view is
as complete as with a writable home. Nothing is written: not the store, not the liveness marks (a
session whose runner died shows its last recorded state). The commands that write (run, pause,
abort, prepare, reindex, the monitor, which keeps the store up to date) still refuse such a home
in one line naming what can be done (runner/wire/paths.py ``usable_home``).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

from onegc_tui.store import DB_NAME, Store, StoreUnusable, _holds, unusable
from onegc_tui.store.schema import SchemaTooNew, migrate
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


class MemoryCopy(Store):
    """A store in memory, copied from ``onegc.db`` read-only (or empty, where there is none)."""

    def __init__(self, db: Path):
        self.path = db
        conn = sqlite3.connect(":memory:", check_same_thread=True)
        try:
            if db.exists():
                source = sqlite3.connect(f"file:{quote(str(db))}?mode=ro&immutable=1", uri=True)
                try:
                    source.backup(conn)
                finally:
                    source.close()
            conn.create_function("holds", 2, _holds, deterministic=True)
            migrate(conn)
        except (sqlite3.Error, SchemaTooNew) as exc:
            conn.close()
            if isinstance(exc, SchemaTooNew):
                raise
            raise StoreUnusable(unusable(db, exc)) from None
        self.conn = conn


def caught_up_store(home: Path) -> Store:
    """The store of ``home`` with everything in its session folders (close it when done)."""
    from onegc_tui.store.ingest import Ingester

    if writable(home):
        store = Store.open(home)
        try:
            Ingester(home, store).catch_up()
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
