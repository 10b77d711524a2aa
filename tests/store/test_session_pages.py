"""The sessions as the monitor's table lists them, by page (onegc_tui/store/session_pages.py), on a
real SQLite file: each sort's order, each read from its index, a session's place, the filter."""

from __future__ import annotations

import random

import pytest

from onegc_tui.store import Store
from onegc_tui.store.session_pages import SORTS, UNINDEXED, SessionPages, live_rows, state_counts, widest
from onegc_tui.views.sessions_view import SORTS as COLUMN_SORTS
from onegc_tui.views.sessions_view import parse_filter

NOW = 10_000.0
COLUMNS = ("session_id", "folder", "study", "task", "agent", "model", "repeat", "state", "budget_s", "remaining_s",
           "remaining_ts", "active_s", "started_ts", "best_live", "score", "gpu_util", "cost_usd", "scripts_launched",
           "tokens_in", "tokens_out", "end_reason", "contract")


def put(store: Store, rows: list[dict]) -> None:
    with store.conn:
        store.conn.executemany(f"INSERT INTO sessions ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})",
                               [tuple(r.get(c, "/x" if c == "folder" else None) for c in COLUMNS) for r in rows])


def ids(pages: SessionPages, offset: int = 0, limit: int = 1_000) -> list[str]:
    return [r["session_id"] for r in pages.page(offset, limit, NOW)]


FEW = [
    {"session_id": "old-ended", "state": "ended", "started_ts": 1.0, "score": 0.9},
    {"session_id": "new-ended", "state": "ended", "started_ts": 5.0, "score": 0.5},
    {"session_id": "old-running", "state": "running", "started_ts": 2.0, "remaining_s": 50.0, "remaining_ts": NOW - 10},
    {"session_id": "new-running", "state": "running", "started_ts": 4.0, "remaining_s": 100.0, "remaining_ts": NOW},
    {"session_id": "failed", "state": "failed", "started_ts": 3.0},
    {"session_id": "paused", "state": "paused", "started_ts": 0.5, "remaining_s": 45.0},
]


def many(n: int = 400) -> list[dict]:
    """Rows of every kind a summary row takes, NULLs and ties included."""
    rng = random.Random(49)
    pick = rng.choice
    return [{"session_id": f"s{k:03d}-{pick('abc')}", "task": pick([None, "t1_shakespeare", "t0_demo", "weird"]),
             "agent": pick([None, "codex", "claude-code"]), "model": pick([None, "m1", "m2"]), "study": pick([None, "demo"]),
             "repeat": pick([None, 0, 1, 2]), "state": pick(["running", "paused", "queued", "ended", "failed"]),
             "budget_s": pick([None, 600.0, 3600.0]), "remaining_s": pick([None, 100.0, 300.0, 5.0]),
             "remaining_ts": pick([None, 9_000.0, 9_900.0]), "active_s": pick([None, 50.0, 500.0]),
             "started_ts": pick([None, 0.0, 10.0, 20.0]), "best_live": pick([None, 0.0, 0.5, 0.7]),
             "score": pick([None, 1.0, 2.0]), "gpu_util": pick([None, 10.0, 90.0]), "cost_usd": pick([None, 0.1, 1.0]),
             "scripts_launched": pick([None, 0, 3]), "tokens_in": pick([None, 5, 50]), "tokens_out": pick([None, 1, 10]),
             "end_reason": pick([None, "budget_exhausted", "agent_failed"])} for k in range(n)]


def test_every_column_sort_has_its_order(store):
    assert set(SORTS) == set(COLUMN_SORTS)


def test_the_default_order_puts_the_most_recent_running_session_first(store):
    put(store, FEW)
    pages = SessionPages(store)
    assert ids(pages) == ["new-running", "old-running", "paused", "new-ended", "failed", "old-ended"]
    pages.sort("official", False)
    assert ids(pages)[:2] == ["old-ended", "new-ended"]  # the largest first, no score last
    pages.sort("left", False)
    assert ids(pages) == ["old-running", "paused", "new-running",  # 40 s left at NOW, 45 s (paused), 100 s
                          "failed", "new-ended", "old-ended"]  # finished: after every countdown
    assert ids(pages, offset=2, limit=2) == ids(pages)[2:4]  # a page of the whole


@pytest.mark.parametrize("by", list(SORTS))
def test_each_order_is_total_its_reverse_is_the_reverse_and_a_place_is_counted(store, by):
    put(store, many())
    pages = SessionPages(store)
    orders = []
    for reverse in (False, True):
        pages.sort(by, reverse)
        listed = ids(pages)
        orders.append(listed)
        assert len(listed) == len(set(listed)) == 400
        assert [pages.position(sid, NOW) for sid in listed[::37]] == list(range(0, 400, 37))
        assert ids(pages, 123, 50) == listed[123:173]
    assert orders[1] == orders[0][::-1]


def test_each_order_by_its_terms(store):
    """The order is what each sort's words say, checked on the rows themselves."""
    rows = many()
    put(store, rows)
    by_id = {r["session_id"]: r for r in rows}
    pages = SessionPages(store)

    def values(by: str, key: str) -> list:
        pages.sort(by, False)
        return [by_id[sid][key] for sid in ids(pages)]

    started = [v for v in values("started", "started_ts") if v is not None]
    assert started == sorted(started, reverse=True) and values("started", "started_ts")[-1] is None
    for by, key in (("best", "best_live"), ("official", "score"), ("gpu", "gpu_util"), ("cost", "cost_usd")):
        got = values(by, key)
        known = [v for v in got if v is not None]
        assert known == sorted(known, reverse=True) and got[len(known):] == [None] * (len(got) - len(known)), by
    agents = values("agent", "agent")
    assert [a for a in agents if a] == sorted(a for a in agents if a) and agents[-1] is None
    states = values("state", "state")
    rank = {"running": 0, "paused": 1, "queued": 2, "ended": 3, "failed": 3}
    assert [rank[s] for s in states] == sorted(rank[s] for s in states)


def test_each_order_reads_its_index(store):
    """A page walks the sort's index (its migration in schema.py), a place is ranges of it: no sort of the whole
    table, whatever the home's size (``left``'s countdowns, a few, are the one part read whole)."""
    put(store, many(50))
    pages = SessionPages(store)
    for by in SORTS:
        for reverse in (False, True):
            pages.sort(by, reverse)
            for k, (cond, terms) in enumerate(pages._parts()):
                order = ", ".join(t + (" DESC" if reverse else "") for t in terms)
                plan = store.conn.execute(f"EXPLAIN QUERY PLAN SELECT * FROM sessions WHERE {cond} ORDER BY {order}"
                                          " LIMIT 5", {"now": NOW}).fetchall()
                sorted_whole = any("TEMP B-TREE" in step[3] for step in plan)
                counting = by in UNINDEXED and "remaining_s IS NOT NULL" in cond and not cond.startswith("NOT")
                assert sorted_whole == counting, (by, reverse, k, plan)
                assert any("USING INDEX" in step[3] for step in plan), (by, plan)


def test_the_filter_keeps_the_sessions_whose_fields_hold_its_words(store):
    put(store, [{"session_id": "demo--quick--t0--r1", "state": "ended", "end_reason": "budget_exhausted",
                 "agent": "scripted", "task": "t0_demo", "study": "demo"},
                {"session_id": "other", "state": "running", "agent": "codex", "task": "t1_shakespeare"}])
    pages = SessionPages(store)

    def kept(query: str) -> list[str]:
        pages.set_filter(parse_filter(query))
        return sorted(ids(pages))

    assert kept("state:ended agent:script") == ["demo--quick--t0--r1"]
    assert kept("task:t0 quick") == ["demo--quick--t0--r1"]
    assert kept("exhausted") == ["demo--quick--t0--r1"]  # the end reason counts as the state
    assert kept("task:T1") == ["other"]  # a task's short name
    assert kept("state:running") == ["other"] and kept("agent:codex") == ["other"]
    assert kept("") == ["demo--quick--t0--r1", "other"] and not parse_filter("")  # empty: keeps everything
    assert kept("nofield:x") == [] and parse_filter("nofield:x").words == ("nofield:x",)  # unknown fields are words
    pages.set_filter(parse_filter("state:running"))
    assert pages.count() == 1 and pages.position("other", NOW) == 0 and pages.position("demo--quick--t0--r1", NOW) is None
    with store.conn:  # the other session ends: looked at again, the filter drops it
        store.conn.execute("UPDATE sessions SET state = 'ended' WHERE session_id = 'other'")
    pages.refilter(pages.rows(["other"]).values())
    assert pages.count() == 0


def test_the_filter_of_a_read_only_store_is_its_connections_own(store, home):
    put(store, FEW)
    store.close()
    reader = Store(home / "onegc.db", read_only=True)  # in place, immutable where no one writes
    try:
        pages = SessionPages(reader)
        pages.set_filter(parse_filter("running"))
        assert sorted(ids(pages)) == ["new-running", "old-running"]
    finally:
        reader.close()


def test_the_whole_home_in_a_few_rows(store):
    put(store, [*FEW, {"session_id": "a-longer-session-id", "state": "queued", "repeat": 1234,
                       "contract": '{"scored_split": {"mode": "sealed"}}'}])
    assert sorted(r["session_id"] for r in live_rows(store)) == ["a-longer-session-id", "new-running", "old-running", "paused"]
    assert state_counts(store) == {"": 7, "running": 2, "paused": 1}
    assert widest(store) == (len("a-longer-session-id"), 1234)
    plan = store.conn.execute(f"EXPLAIN QUERY PLAN SELECT MAX({SORTS['rep'][0]}) FROM sessions").fetchall()
    assert any("sessions_by_rep" in step[3] for step in plan), plan
