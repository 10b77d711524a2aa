"""The sessions table is virtual (onegc_tui/app/widgets/sessions.py): over a real SQLite store it
holds a page of rows around what it shows, never the list, draws each place as the store orders it,
and keeps its cursor on its session while rows change underneath."""

from __future__ import annotations

import re
from pathlib import Path

from textual.app import App, ComposeResult

from onegc_tui.app.widgets.sessions import WINDOW_MIN, SessionsTable
from onegc_tui.store import Store

NOW = 1_800_000_000.0
N = 5_000  # sessions: many pages of a 12-line table


def fill(store: Store, n: int) -> None:
    """``n`` finished sessions, the newest the last, one running (``s0``), written straight into SQLite."""
    rows = [(f"s{k}", f"/x/s{k}", "t0_demo", "scripted", "running" if k == 0 else "ended", 3600.0, 1000.0 + k, 0.5 + k / n)
            for k in range(n)]
    with store.conn:
        store.conn.executemany("INSERT INTO sessions (session_id, folder, task, agent, state, budget_s, started_ts, score)"
                               " VALUES (?,?,?,?,?,?,?,?)", rows)


class One(App):
    """A sessions table on its own, over the app's store (what ``host.store_of`` reads)."""

    def __init__(self, home: Path) -> None:
        super().__init__()
        self.store = Store.open(home)

    def compose(self) -> ComposeResult:
        yield SessionsTable(now=lambda: NOW)

    def on_mount(self) -> None:
        self.query_one(SessionsTable).open()

    def on_unmount(self) -> None:
        self.store.close()


def shown_ids(table: SessionsTable) -> list[str]:
    """The session ids on the table's lines, as drawn."""
    lines = [table.render_line(y).text for y in range(1, table.scrollable_content_region.height)]
    return [m.group(0) for line in lines if (m := re.search(r"\b(s|new)\d+\b", line))]


def ordered(home: Path, sql: str) -> list[str]:
    store = Store.open(home)
    try:
        return [r[0] for r in store.conn.execute(f"SELECT session_id FROM sessions ORDER BY {sql}")]
    finally:
        store.close()


async def test_the_table_holds_a_page_and_draws_each_place_as_the_store_orders_it(tmp_path):
    store = Store.open(tmp_path)
    fill(store, N)
    store.close()
    newest_first = ordered(tmp_path, "state != 'running', started_ts DESC")  # running first, then the newest
    app = One(tmp_path)
    async with app.run_test(size=(120, 14)) as pilot:
        await pilot.pause()
        table = app.query_one(SessionsTable)
        table.focus()
        assert table.total == N and len(table._rows) <= WINDOW_MIN  # a page, not the list
        shown = shown_ids(table)
        assert shown == newest_first[:len(shown)] and len(shown) >= 10
        await pilot.press("end")
        await pilot.pause()
        assert table.current() == newest_first[-1] and table.cursor_row == N - 1
        assert shown_ids(table)[-1] == newest_first[-1] and len(table._rows) <= WINDOW_MIN
        await pilot.press("pageup", "up")
        await pilot.pause()
        place = table.cursor_row
        assert table.current() == newest_first[place] and shown_ids(table) == newest_first[
            int(table.scroll_y):int(table.scroll_y) + len(shown_ids(table))]
        await pilot.press("home")
        await pilot.pause()
        assert table.current() == "s0"


async def test_the_cursor_stays_on_its_session_as_rows_change_underneath(tmp_path):
    store = Store.open(tmp_path)
    fill(store, 200)
    store.close()
    app = One(tmp_path)
    async with app.run_test(size=(120, 14)) as pilot:
        await pilot.pause()
        table = app.query_one(SessionsTable)
        assert table.go_to("s150")
        before = table.cursor_row
        other = Store.open(tmp_path)  # another process starts three sessions: running, they come first
        with other.conn:
            other.conn.executemany("INSERT INTO sessions (session_id, folder, state, started_ts) VALUES (?,?,?,?)",
                                   [(f"new{k}", "/x", "running", 5000.0 + k) for k in range(3)])
        changed = {r["session_id"]: r for r in other.sessions("session_id LIKE 'new%'")}
        other.close()
        table.take(changed, [])
        await pilot.pause()
        assert table.current() == "s150" and table.cursor_row == before + 3
        assert table.total == 203 and "new2" in shown_ids(table)[:1] + table.listed(3)


async def test_a_changed_row_draws_as_a_table_opened_afresh(tmp_path):
    store = Store.open(tmp_path)
    fill(store, 30)
    store.close()
    app = One(tmp_path)
    async with app.run_test(size=(160, 14)) as pilot:
        await pilot.pause()
        table = app.query_one(SessionsTable)
        before = [table.render_line(y).text for y in range(12)]
        other = Store.open(tmp_path)
        with other.conn:
            other.conn.execute("UPDATE sessions SET tokens_in = 7000, gpu_util = 55 WHERE session_id = 's25'")
        changed = {"s25": other.session("s25")}
        other.close()
        table.take(changed, [])
        await pilot.pause()
        after = [table.render_line(y).text for y in range(12)]
        assert after != before and any("7k" in line and "55%" in line for line in after)
    fresh = One(tmp_path)
    async with fresh.run_test(size=(160, 14)) as pilot:
        await pilot.pause()
        table = fresh.query_one(SessionsTable)
        assert [table.render_line(y).text for y in range(12)] == after
