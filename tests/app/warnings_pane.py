"""A pane added as docs/architecture.md says ("How to add a pane"): this one file, and one line in
``PANES`` (tests/app/test_pane_protocol.py adds it). It shows how many warnings the selected
session has had, and the latest, from the store's ``warnings`` rows."""

from __future__ import annotations

from typing import ClassVar

from textual.widgets import Static

from onegc_tui.app.widgets.pane import Reader, Slot
from onegc_tui.store import Store


class WarningsPane(Static):
    slot: ClassVar[Slot] = "side"  # stacked under the budget and GPU panes

    def __init__(self) -> None:
        super().__init__("", id="warnings-pane")
        self.count, self.latest, self.ticks = 0, "", 0

    def reader(self) -> Reader | None:
        return self.fetch

    @staticmethod
    def fetch(store: Store, sid: str, after: int) -> list[tuple[str, str]]:
        """(code, message) of the session's warnings after ``after``: typed rows, no event line."""
        return store.conn.execute("SELECT code, message FROM warnings WHERE session_id = ? AND seq > ? ORDER BY seq",
                                  (sid, after)).fetchall()

    def show(self, row: dict, data: list[tuple[str, str]]) -> None:
        self.count, self.latest = 0, ""
        self.extend(row, data)

    def extend(self, row: dict, data: list[tuple[str, str]]) -> None:
        self.count += len(data)
        if data:
            self.latest = f"{data[-1][0]}: {data[-1][1]}"
        self.update(f"{row['session_id']}: {self.count} warnings · {self.latest}")

    def tick(self) -> None:
        self.ticks += 1
