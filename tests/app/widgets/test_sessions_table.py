"""The sessions table updates a row's changed cells in place (SessionsTable._update_row): what it
draws must be what the same table draws rebuilt from the same rows, the cursor's row and the
stripes included (a cell, row or line left in Textual's caches would show the old figure)."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.geometry import Region

from onegc_tui.app.widgets.sessions import RELAYOUT_S, SessionsTable

NOW = 1_800_000_000.0
WIDTH = 170  # wide enough for the tokens column


def summary(sid: str, k: int, **changes) -> dict:
    row = {"session_id": sid, "task": "t0_demo", "agent": "scripted", "model": None, "repeat": 1,
           "state": "running", "budget_s": 3600.0, "remaining_s": 3600.0 - 60 * k, "active_s": 60.0 * k,
           "last_ts": NOW - 1, "started_ts": NOW - 600 - k, "gpu_util": 10.0 * k, "scripts_launched": k,
           "tokens_in": 1000 * k, "tokens_out": 10 * k, "cost_usd": None, "best_live": None, "score": None}
    row.update(changes)
    return row


class One(App):
    def compose(self) -> ComposeResult:
        yield SessionsTable(now=lambda: NOW)


def drawn(table: SessionsTable) -> list[list[tuple[str, str]]]:
    """Every line of the table as (text, style) segments."""
    strips = table.render_lines(Region(0, 0, table.size.width, table.size.height))
    return [[(seg.text, str(seg.style)) for seg in strip] for strip in strips]


async def test_a_row_updated_in_place_draws_as_the_table_rebuilt():
    app = One()
    async with app.run_test(size=(WIDTH, 12)) as pilot:
        table = app.query_one(SessionsTable)
        rows = {f"s{k}": summary(f"s{k}", k) for k in range(6)}
        await pilot.pause(RELAYOUT_S * 2)  # the mount's own relayout (a timer) has run
        table.relayout(WIDTH, rows)
        for sid, row in rows.items():
            table.put(sid, row, NOW)
        await pilot.pause()
        drawn(table)  # every cache of the table filled
        table.move_cursor(row=2)
        await pilot.pause()
        drawn(table)  # ... the cursor's row too
        # a minute on: the GPU figure and countdown of every row, the tokens of the cursor's row
        # and of another (the order stays: a re-sort repaints everything anyway)
        for k, sid in enumerate(rows):
            rows[sid] = summary(sid, k, gpu_util=90.0 - k, remaining_s=3000.0 - k)
        rows["s2"] = summary("s2", 2, tokens_in=7_000, gpu_util=5.0)
        rows["s4"] = summary("s4", 4, tokens_in=99_000)
        for sid, row in rows.items():
            table.put(sid, row, NOW)
        await pilot.pause()
        got = drawn(table)
        text = ["".join(t for t, _ in line) for line in got]
        assert "7k" in text[3] and " 5%" in text[3] and "99k" in text[5], "\n".join(text)
        table.rebuild()
        await pilot.pause()
        assert table.current() == "s2"
        again = drawn(table)
        for y, (line, want) in enumerate(zip(got, again, strict=True)):
            assert line == want, f"line {y}:\n{line}\n{want}"
