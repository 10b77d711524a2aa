"""Browsing a home this user cannot write: a results folder shared read-only, a copy on a mount
that is read-only, another user's home.

The commands that only read (``onegc tasks``, ``sessions``, ``history``, ``study status``) take
the home with :func:`browsable_home` and their store with :func:`caught_up_store`. Where the home
can be written, that is the store in ``onegc.db``, caught up with the session folders as before.
Where it cannot, ``onegc.db`` is read in place (:func:`onegc_tui.store.in_place_uri`: SQLite's
read-only, ``immutable`` where nobody has it open to write), with no copy, wherever it holds
everything the session folders hold (:func:`behind`: a finished study shared read-only, a home
whose owner's monitor keeps its store current). Where the folders hold more (a session the store
has not read to its end), the store is a copy in memory, caught up with the folders, which are the
source of truth, so the view is as complete as with a writable home. Nothing is written: not the
store, not the liveness marks (a session whose runner died shows its last recorded state).

``onegc monitor`` (and each ``--web`` tab's) browses such a home through :func:`private_store`:
in place, without its ingest, where the store holds the folders whole and no session runs
(``IN_PLACE``); else on a copy in a private temporary file (``ON_COPY``), so that its several
connections, its WAL and the ``data_version`` the dashboard follows work as on the home's own
store; its live ingest reads the session folders into the copy as the sessions write them, and
the copy is removed when the monitor ends. The monitor shows that it is a read-only view, and its
keys that would write (pause, resume, abort, new session, export) say why not in one line. The
commands that write (run, pause, abort, prepare, reindex) still refuse such a home in one line
naming what can be done (runner/wire/paths.py ``usable_home``).
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
from onegc_tui.store.schema import SchemaTooNew, migrate
from onegc_tui.store.search import holds
from runner.wire.paths import is_session_folder, onegc_home, usable_home

WRITABLE, IN_PLACE, ON_COPY = "", "in place", "on a copy"  # how the monitor reads a home (private_store)


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


def behind(home: Path, store: Store) -> bool:
    """Whether the session folders hold more than ``store``: a session it does not know, or an
    ``events.jsonl`` longer than the part it has read (a stat per session, no read)."""
    runs = home / "runs"
    if not runs.is_dir():
        return False
    known = {sid for (sid,) in store.conn.execute("SELECT session_id FROM sessions")}
    read = dict(store.conn.execute("SELECT session_id, MAX(offset) FROM ingest_offsets GROUP BY session_id"))
    for folder in runs.iterdir():
        if not is_session_folder(folder):
            continue
        if folder.name not in known:
            return True
        try:
            size = (folder / "events.jsonl").stat().st_size
        except OSError:
            size = 0
        if size > read.get(folder.name, 0):
            return True
    return False


def in_place(home: Path) -> Store | None:
    """The home's store read in place (:func:`onegc_tui.store.in_place_uri`), where it holds all the
    session folders do; None where it does not, or cannot be read so (not there; a schema older
    than this onegc's, which only a copy can be brought to)."""
    db = home / DB_NAME
    if not db.exists():
        return None
    try:
        store = Store(db, read_only=True)
    except SchemaTooNew:
        raise
    except StoreUnusable:
        return None
    if behind(home, store):
        store.close()
        return None
    return store


@contextmanager
def private_store(home: Path) -> Iterator[str]:
    """How the monitor reads ``home`` for as long as this lasts: ``WRITABLE`` (its own store, as
    ever); ``IN_PLACE``: read-only, in place, where the store holds the folders whole and no session
    is queued or running (every :meth:`Store.open` of ``home`` opens it so, :func:`redirect`);
    else ``ON_COPY``: ``onegc.db`` copied read-only (:func:`copy_store`) into a file in a temporary
    folder only this user can read (0700), which every :meth:`Store.open` of ``home`` opens instead,
    removed at the end. Either of the last two is a read-only view (truthy)."""
    if writable(home):
        yield WRITABLE
        return
    store = in_place(home)
    if store is not None:
        live = store.conn.execute("SELECT 1 FROM sessions WHERE state IN ('queued', 'running', 'paused') LIMIT 1").fetchone()
        store.close()
        if not live:
            redirect(home, home / DB_NAME, read_only=True)
            try:
                yield IN_PLACE
            finally:
                redirect(home, None)
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
            yield ON_COPY
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
    found = in_place(home)
    if found is not None:
        return found
    store = MemoryCopy(home / DB_NAME)
    try:
        ingester = Ingester(home, store)
        ingester.discover()  # known sessions: the one-process catch-up (the two-process one writes a part file)
        ingester.ingest_all()
    except BaseException:
        store.close()
        raise
    return store
