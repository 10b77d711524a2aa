"""The monitor's guard (onegc_tui/app/guard.py): an error people can act on, raised inside the
running app (a store damaged past what the start-up check reads), ends it with one line, not
Textual's traceback and exit 0; a bug keeps its traceback and exits 1."""

from __future__ import annotations

import sqlite3

import pytest
from textual.app import App

from onegc_tui.app.guard import MonitorFailed, run_monitor
from onegc_tui.cli.base import describe


class Fails(App):
    def __init__(self, error: Exception):
        super().__init__()
        self.error = error

    def on_mount(self) -> None:
        self.call_after_refresh(self.boom)

    def boom(self) -> None:
        raise self.error


def test_a_damaged_store_met_while_running_is_one_line():
    with pytest.raises(MonitorFailed) as caught:
        run_monitor(Fails(sqlite3.DatabaseError("database disk image is malformed")), "; session s goes on",
                    headless=True, describe=describe)
    line = str(caught.value)
    assert "\n" not in line and "database disk image is malformed" in line and "onegc reindex" in line
    assert line.endswith("; session s goes on")


def test_a_bug_keeps_its_traceback_and_exit_1(capsys):
    with pytest.raises(SystemExit) as caught:
        run_monitor(Fails(ZeroDivisionError("a bug")), headless=True, describe=describe)
    assert caught.value.code == 1
