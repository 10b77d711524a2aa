"""``onegc reindex`` (a new store built from the session folders: ``events.jsonl`` is the source of
truth) and a catch-up from scratch (a store that has never seen these sessions: ``onegc sessions``
on a new machine), on two cores where the machine has them.

One process reads, validates and inserts, and the two halves of that work cannot overlap on
threads: pydantic-core validates a batch without releasing the GIL, and SQLite takes it back for
every row. So where there are two cores and enough to do, a second process builds a store of its
own from part of the session folders (as many bytes of ``events.jsonl`` as this one), and this one
copies its rows in at the end, SQLite to SQLite, before it builds the search index over them all.
Both parts run the same ingest (``Ingester``, into ``Store.bulk`` for a reindex; this one's part of a
catch-up in a ``Store.transaction`` committed every ``CATCH_UP_COMMIT_ROWS`` events, indexed for
search at each commit rather than a commit and an index statement per batch: its part went 2.7 ->
1.9 s for 100 000 events); the rows are the
same as one process's (tests/store/test_fast_ingest.py compares every table). A catch-up that meets
rows another ingester wrote meanwhile (a monitor started beside it) keeps none of the part's, and
reads those sessions itself.

Run as ``python -m onegc_tui.store.reindex HOME PART_DB IDS`` it is that second process: the session ids
in the file IDS, one per line; it prints how many events it stored.
"""

from __future__ import annotations

import sys
from pathlib import Path

from onegc_tui.store import Store
from onegc_tui.store.ingest import Ingester
from onegc_tui.store.parallel import _in_two, split, store_sizes


def rebuild(home: Path, db: Path) -> tuple[int, int]:
    """Build a new store at ``db`` (not there yet) from ``home/runs``; returns (sessions, events)."""
    mine, theirs = split(store_sizes(home / "runs"))
    store = Store(db)
    try:
        with store.bulk():
            if theirs:
                here, merged = _in_two(home, db, store, mine, theirs, Ingester(home, store))
                events = here + merged
            else:
                events = Ingester(home, store).ingest_all()
        return len(store.sessions()), events
    finally:
        store.close()


def _part_main(home: Path, part: Path, id_file: Path) -> None:
    """The second process: the sessions named in ``id_file`` into a store of their own at ``part``."""
    ids = {line.strip() for line in id_file.read_text().splitlines() if line.strip()}
    store = Store(part)
    try:
        with store.bulk(search_index=False):  # built once, over both parts, by the first process
            events = Ingester(home, store).ingest_all(only=ids)
    finally:
        store.close()
    print(events)


if __name__ == "__main__":
    _part_main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
