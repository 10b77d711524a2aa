"""The sessions as the monitor's table lists them, read by page: each sort order as SQL over the
summary rows, served by an index of its own (its migration in schema.py), so that a page, a count and the place
of one session cost the rows they read, not the size of the home.

A sort is a tuple of terms, SQL expressions that are never NULL, in ascending order, the last
the session id (every order is total: a row has one place). Its natural direction puts what a
person looks for first (running sessions, the best score, the newest start); ``reverse`` flips
every term. Each sort but ``left`` is served by the index built on the same expressions
(tests/store/test_session_pages.py checks every query plan); ``left`` counts the budget down to
the clock (``:now``), which no index can hold: it reads every row (docs/benchmarks.md).

A filter keeps the sessions of which every word is found in the fields it names (any case): the
sessions it keeps are listed once, when it is set, in a table of this connection's own (``TEMP``),
and each changed row is looked at again (:meth:`SessionPages.refilter`). A page then walks the
sort's index and keeps the listed ones, as without a filter.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from onegc_tui.store import Store

_RANK = ("CASE state WHEN 'running' THEN 0 WHEN 'paused' THEN 1 WHEN 'queued' THEN 2 WHEN 'failed' THEN 3"
         " WHEN 'ended' THEN 3 ELSE 9 END")  # finished sessions: by recency alone
_NEWEST = "-COALESCE(started_ts, 0)"
_ENDED = "state IN ('ended', 'failed')"
LIVE_RANK = 3  # _RANK below this: running, paused or queued
# the budget left at :now (onegc_tui/views/countdown.py ``Countdown.remaining_now``, in SQL)
_LEFT = (f"COALESCE(CASE WHEN {_ENDED} AND budget_s IS NOT NULL THEN MAX(0.0, budget_s - COALESCE(active_s, 0.0))"
         " WHEN remaining_s IS NULL THEN NULL WHEN state != 'running' OR remaining_ts IS NULL THEN remaining_s"
         " ELSE MAX(0.0, remaining_s - (:now - remaining_ts)) END, 0.0)")


def _largest_first(column: str) -> tuple[str, ...]:
    return (f"{column} IS NULL", f"-COALESCE({column}, 0)", "session_id")


def _by_name(column: str) -> tuple[str, ...]:
    return (f"{column} IS NULL", f"COALESCE({column}, '')", "COALESCE(repeat, 0)", _NEWEST, "session_id")


# Each sort of the sessions table (onegc_tui/views/sessions_view.py ``SORTS``), as its terms. The
# index of each (but ``left``) is built on these very expressions in its migration in schema.py: change one, and
# add a migration that builds its index again.
SORTS: dict[str, tuple[str, ...]] = {
    "state": (_RANK, _NEWEST, "session_id"),  # running, paused, queued, then the rest; the newest first in each
    "left": (f"({_ENDED} OR remaining_s IS NULL)", _LEFT, "session_id"),  # the least budget left first
    "best": _largest_first("best_live"),
    "official": _largest_first("score"),
    "session": ("session_id",),
    "task": _by_name("task"),
    "agent": _by_name("agent"),
    "gpu": _largest_first("gpu_util"),
    "model": _by_name("model"),
    "started": ("started_ts IS NULL", _NEWEST, "session_id"),
    "rep": ("COALESCE(NULLIF(repeat, 0), 1)", _NEWEST, "session_id"),
    "tokens": ("-(COALESCE(tokens_in, 0) + COALESCE(tokens_out, 0))", "session_id"),
    "cost": _largest_first("cost_usd"),
    "scripts": _largest_first("scripts_launched"),
}
# ``left`` in two parts: the sessions whose countdown runs (by the budget left at :now, read whole:
# a few), then the rest (a finished session's unused budget, in the index of its migration in schema.py)
_COUNTING = f"({_RANK} < {LIVE_RANK} AND remaining_s IS NOT NULL)"
_LEFT_PARTS = (
    (_COUNTING, (_LEFT, "session_id")),
    (f"NOT {_COUNTING}", (_COUNTING, f"COALESCE(CASE WHEN {_ENDED} AND budget_s IS NOT NULL"
                                      " THEN MAX(0.0, budget_s - COALESCE(active_s, 0.0)) ELSE remaining_s END, 0.0)",
                          "session_id")),
)
UNINDEXED = frozenset({"left"})  # its first part is read whole: its order moves with the clock

# what a filter's field matches, by name (onegc_tui/views/sessions_view.py ``FILTER_FIELDS``): the
# end reason counts as the state ("exhausted"), a task's short name as the task ("t1")
_FIELDS = {
    "state": "state || ' ' || REPLACE(COALESCE(end_reason, ''), '_', ' ')",
    "agent": "COALESCE(agent, '')",
    "task": "COALESCE(task, '') || ' ' || {short}",
    "model": "COALESCE(model, '')",
    "study": "COALESCE(study, '')",
    "id": "session_id",
}


@dataclass(frozen=True)
class Filter:
    """What a filter keeps: ``terms`` (field, text) each found in its field, ``words`` each found in
    some field (lower case); ``shorts``: each known task's short name ("T1"), which its task field holds."""

    terms: tuple[tuple[str, str], ...] = ()
    words: tuple[str, ...] = ()
    shorts: tuple[tuple[str, str], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.terms or self.words)

    def where(self) -> tuple[str, list[Any]]:
        """The filter as an SQL condition on a summary row, and its arguments."""
        short_args: list[Any] = []
        short = "COALESCE(task, '?')"
        if self.shorts:
            short = "CASE task " + " ".join("WHEN ? THEN ?" for _ in self.shorts) + " ELSE COALESCE(task, '?') END"
            short_args = [x for pair in self.shorts for x in pair]

        def field(name: str) -> tuple[str, list[Any]]:
            sql = _FIELDS[name]
            return (f"LOWER({sql.format(short=short)})", short_args if "{short}" in sql else [])

        conds: list[str] = []
        args: list[Any] = []
        for name, text in self.terms:
            sql, more = field(name)
            conds.append(f"INSTR({sql}, ?) > 0")
            args += [*more, text]
        if self.words:
            parts = [field(name) for name in _FIELDS]
            anywhere = " || ' ' || ".join(sql for sql, _ in parts)
            for word in self.words:
                conds.append(f"INSTR({anywhere}, ?) > 0")
                args += [*(a for _, more in parts for a in more), word]
        return " AND ".join(conds) or "1", args


def _names(cur) -> list[str]:
    return [d[0] for d in cur.description]


def _dicts(cur) -> list[dict]:
    names = _names(cur)
    return [dict(zip(names, row, strict=True)) for row in cur]


_tables = itertools.count(1)


class SessionPages:
    """The summary rows of one store's sessions in one sort order and filter, read by page on the
    store's connection (its thread's)."""

    def __init__(self, store: Store, by: str = "state", reverse: bool = False) -> None:
        self.store = store
        self.by, self.reverse = by, reverse
        self.filter = Filter()
        self._kept = f"temp.kept_{next(_tables)}"  # the sessions the filter keeps (while there is one)

    # ------------------------------------------------------------------ the order and the filter
    def sort(self, by: str, reverse: bool) -> None:
        if by not in SORTS:
            raise ValueError(f"no sort {by!r}: one of {', '.join(SORTS)}")
        self.by, self.reverse = by, reverse

    def set_filter(self, kept: Filter) -> None:
        """List the sessions ``kept`` keeps (every row read once); an empty filter keeps them all."""
        conn = self.store.conn
        with conn:  # committed at once: an open transaction would keep this connection on an old snapshot
            conn.execute(f"DROP TABLE IF EXISTS {self._kept}")
            self.filter = kept
            if kept:
                where, args = kept.where()
                conn.execute(f"CREATE TABLE {self._kept} (session_id TEXT PRIMARY KEY) WITHOUT ROWID")
                conn.execute(f"INSERT INTO {self._kept} SELECT session_id FROM sessions WHERE {where}", args)

    def refilter(self, rows: Iterable[dict]) -> None:
        """Rows that changed (or came) since: kept or dropped by the filter as they are now."""
        if not self.filter:
            return
        ids = [r["session_id"] for r in rows]
        if not ids:
            return
        where, args = self.filter.where()
        marks = ",".join("?" * len(ids))
        conn = self.store.conn
        with conn:
            conn.execute(f"DELETE FROM {self._kept} WHERE session_id IN ({marks})", ids)
            conn.execute(f"INSERT INTO {self._kept} SELECT session_id FROM sessions WHERE session_id IN ({marks})"
                         f" AND {where}", [*ids, *args])

    def _where(self) -> str:
        # unary +: SQLite walks the sort's index and looks each id up in the list, rather than the
        # list and then sorting what it found
        return f"+session_id IN {self._kept}" if self.filter else "1"

    def _parts(self) -> list[tuple[str, tuple[str, ...]]]:
        """The order as parts, each a condition and its terms, listed one after the other: one
        for every sort but ``left``, whose live sessions (few, counted down to the clock, read
        whole) come before the rest (in its index)."""
        if self.by != "left":
            return [("1", SORTS[self.by])]
        live, rest = _LEFT_PARTS
        return [live, rest][::-1] if self.reverse else [live, rest]

    # ------------------------------------------------------------------ reads
    def count(self) -> int:
        """How many sessions the filter keeps (all of them without one)."""
        return self.store.conn.execute(f"SELECT COUNT(*) FROM sessions WHERE {self._where()}").fetchone()[0]

    def _count(self, cond: str) -> int:
        return self.store.conn.execute(f"SELECT COUNT(*) FROM sessions WHERE {cond} AND {self._where()}").fetchone()[0]

    def page(self, offset: int, limit: int, now: float) -> list[dict]:
        """The summary rows from place ``offset`` (0: the first), at most ``limit``."""
        flip = " DESC" if self.reverse else ""
        out: list[dict] = []
        offset = max(0, offset)
        parts = self._parts()
        for i, (cond, terms) in enumerate(parts):
            if len(out) >= limit:
                break
            order = ", ".join(term + flip for term in terms)
            cur = self.store.conn.execute(f"SELECT * FROM sessions WHERE {cond} AND {self._where()} ORDER BY {order}"
                                          " LIMIT :limit OFFSET :offset",
                                          {"limit": limit - len(out), "offset": offset, "now": now})
            out += _dicts(cur)
            if i + 1 < len(parts):  # the next part starts where this one ended
                offset = max(0, offset - self._count(cond)) if not out else 0
        return out

    def position(self, sid: str, now: float) -> int | None:
        """The place of ``sid`` in the order (None: not listed): the rows before it, counted one
        term at a time (each count a range of the sort's index)."""
        conn = self.store.conn
        before = ">" if self.reverse else "<"
        place = 0
        for cond, terms in self._parts():
            key = conn.execute(f"SELECT {', '.join(terms)} FROM sessions WHERE session_id = :sid AND {cond}"
                               f" AND {self._where()}", {"sid": sid, "now": now}).fetchone()
            if key is None:
                place += self._count(cond)
                continue
            counts = []
            for i, term in enumerate(terms):
                same = [f"({terms[j]}) = :k{j}" for j in range(i)]  # (IS binds looser than = and <)
                counts.append(f"(SELECT COUNT(*) FROM sessions WHERE {cond} AND "
                              f"{' AND '.join([*same, f'({term}) {before} :k{i}'])} AND {self._where()})")
            args = {f"k{i}": value for i, value in enumerate(key)}
            return place + conn.execute("SELECT " + " + ".join(counts), {**args, "now": now}).fetchone()[0]
        return None

    def rows(self, ids: Sequence[str]) -> dict[str, dict]:
        """The summary rows of ``ids``, by id (whether the filter keeps them or not)."""
        if not ids:
            return {}
        cur = self.store.conn.execute(f"SELECT * FROM sessions WHERE session_id IN ({','.join('?' * len(ids))})", ids)
        return {row["session_id"]: row for row in _dicts(cur)}


# ----------------------------------------------------------------------------- the whole home, in a few rows


def live_rows(store: Store) -> list[dict]:
    """The summary rows of the sessions running, paused or queued (a range of the state's index)."""
    return _dicts(store.conn.execute(f"SELECT * FROM sessions WHERE {_RANK} < {LIVE_RANK}"))


def state_counts(store: Store) -> dict[str, int]:
    """How many sessions there are (``""``), and how many run and are paused."""
    conn = store.conn
    found = dict(conn.execute(f"SELECT {_RANK}, COUNT(*) FROM sessions WHERE {_RANK} < 2 GROUP BY 1").fetchall())
    return {"": conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0],
            "running": found.get(0, 0), "paused": found.get(1, 0)}


def widest(store: Store) -> tuple[int, int]:
    """The longest session id and the highest repeat number (one look at the end of the ``rep``
    sort's index)."""
    conn = store.conn
    longest = conn.execute("SELECT COALESCE(MAX(LENGTH(session_id)), 0) FROM sessions").fetchone()[0]
    repeats = conn.execute(f"SELECT COALESCE(MAX({SORTS['rep'][0]}), 1) FROM sessions").fetchone()[0]
    return longest, repeats


def high_marks(store: Store) -> tuple[int, int]:
    """The newest summary-row revision and the newest row: a reader that has looked at the live
    sessions reads on from these (what changed after, what came after)."""
    conn = store.conn  # (one MAX a query: each is then a look at one end of an index)
    return (conn.execute("SELECT COALESCE(MAX(rev), 0) FROM sessions").fetchone()[0],
            conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM sessions").fetchone()[0])


def changed_since(store: Store, rev: int) -> list[tuple[int, dict]]:
    """Summary rows written after revision ``rev``, in order, each with its ``rowid`` (the newer the
    row, the larger: one above :func:`high_marks`' came after that look)."""
    cur = store.conn.execute("SELECT rowid, * FROM sessions WHERE rev > ? ORDER BY rev", (rev,))
    names = _names(cur)[1:]
    return [(row[0], dict(zip(names, row[1:], strict=True))) for row in cur]


__all__ = ["SORTS", "UNINDEXED", "Filter", "SessionPages", "changed_since", "high_marks", "live_rows", "state_counts",
           "widest"]
