"""Reading session folders on two processes: the ids cut in two by bytes, the second half read by
``python -m onegc_tui.store.reindex`` into a part store, copied in at the end (the why and the
figures: onegc_tui/store/reindex.py). Used by a reindex and by a catch-up from scratch
(:func:`catch_up` on a store that has no session yet). It drives an ``Ingester``
(onegc_tui/store/ingest.py), which knows nothing of it: the calls go one way."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from contextlib import nullcontext
from pathlib import Path

from onegc_tui.store import Store
from onegc_tui.store.ingest import Ingester
from runner.errors import OnegcError
from runner.wire.paths import is_session_folder

PARALLEL_MIN_BYTES = 16 << 20  # less than this in all: one process
# a catch-up's own part commits this often: ~4 s of holding the store here, under the 10 s another
# writer waits (store.BUSY_TIMEOUT_MS); each commit costs (at 50 000: ~10 % of the catch-up). The
# copy of the second part is one transaction, all or nothing, and holds it for longer on a big store.
CATCH_UP_COMMIT_ROWS = 200_000


class ReindexFailed(OnegcError):
    """The second process of a reindex did not finish; the store in place is left as it was."""


def store_sizes(runs: Path) -> dict[str, int]:
    """Each session folder's bytes of events, by session id."""
    out = {}
    for folder in sorted(runs.iterdir()) if runs.is_dir() else []:
        if is_session_folder(folder):
            try:
                out[folder.name] = (folder / "events.jsonl").stat().st_size
            except OSError:
                out[folder.name] = 0
    return out


def split(sizes: dict[str, int]) -> tuple[list[str], list[str]]:
    """Two lists of session ids with about as many bytes of events each: the ids in order, cut
    where the first half of the bytes ends, so every id of the second sorts after every id of the
    first. Its rows, copied in, then go on at the end of each table and index (all begin with the
    session id) instead of between this process's rows all over the file: over 10 M events the
    copy went 18.6 -> 13.1 s here, of a reindex of 72 s. Both empty where one process is the way
    (one core, one session, or less than ``PARALLEL_MIN_BYTES`` to read: a second process costs
    ~0.4 s to start)."""
    total = sum(sizes.values())
    if (os.cpu_count() or 1) < 2 or len(sizes) < 2 or total < PARALLEL_MIN_BYTES:
        return [], []
    ids = sorted(sizes)
    cut, read = 1, sizes[ids[0]]
    while cut < len(ids) - 1 and read + sizes[ids[cut]] / 2 <= total / 2:  # its middle in the first half
        read += sizes[ids[cut]]
        cut += 1
    return ids[:cut], ids[cut:]


def catch_up(ingester: Ingester) -> int:
    """Everything new in every session folder, then the liveness check (``Ingester.catch_up``): the
    one-shot view of the commands that read. A store that has no session yet is filled on two
    processes where there are two cores and enough to read. Returns the events stored."""
    events = from_scratch_in_two(ingester)
    if events is None:
        return ingester.catch_up()
    ingester.check_liveness()
    return events


def from_scratch_in_two(ingester: Ingester) -> int | None:
    """``Ingester.ingest_all`` for a store that has no session yet, on two processes where there
    are two cores and enough to read; None where one process is the way (nothing read)."""
    store = ingester.store
    if ingester.on_events is not None or store.conn.in_transaction or \
            store.conn.execute("SELECT 1 FROM sessions LIMIT 1").fetchone():
        return None
    mine, theirs = split(store_sizes(ingester.runs))
    if not theirs:
        return None
    here, merged = _in_two(ingester.home, store.path, store, mine, theirs, ingester, keep_going=True)
    # theirs, now in the store (their offsets with them) or, where the part was not kept (it failed,
    # or met another ingester's rows), read here from where the store has them
    return here + merged + sum(ingester.ingest_session(sid) for sid in ingester.discover())


def _in_two(home: Path, db: Path, store: Store, mine: list[str], theirs: list[str],
            ingester: Ingester, keep_going: bool = False) -> tuple[int, int]:
    """``mine`` read here, ``theirs`` by a second process into a part store, copied in at the end:
    (events stored here, events copied in). ``keep_going``: a part that failed or could not be
    copied in is 0 events copied in, not an error."""
    part = db.with_name(f"{db.name}.part-{os.getpid()}")  # two catch-ups at once each have their own
    ids, log = part.with_name(part.name + ".ids"), part.with_name(part.name + ".log")
    _remove(part)
    ids.write_text("".join(f"{sid}\n" for sid in theirs))
    with open(log, "w+") as err:
        worker = subprocess.Popen([sys.executable, "-m", "onegc_tui.store.reindex", str(home), str(part), str(ids)],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, text=True)
        try:
            alone = store._outer is None  # a catch-up (a reindex is inside bulk(), which has both)
            # few transactions, each indexed for search once, at its end, with the page cache for them
            with store.big_cache(), store.transaction(commit_rows=CATCH_UP_COMMIT_ROWS) if alone else nullcontext():
                events = ingester.ingest_all(only=set(mine))
            out = worker.stdout.read() if worker.stdout else ""
            if worker.wait() != 0:
                if keep_going:
                    return events, 0
                err.seek(0)
                last = (err.read().strip().splitlines() or ["no message"])[-1]
                raise ReindexFailed(f"reindex: the second process failed ({last[:300]}); the store was left as it was")
            try:
                with store.big_cache():
                    store.merge_part(part)
            except sqlite3.IntegrityError:
                if not keep_going:
                    raise
                return events, 0
            return events, int(out.split()[0])
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
            if worker.stdout:
                worker.stdout.close()
            _remove(part)
            ids.unlink(missing_ok=True)
            log.unlink(missing_ok=True)


def _remove(db: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(str(db) + suffix).unlink(missing_ok=True)


