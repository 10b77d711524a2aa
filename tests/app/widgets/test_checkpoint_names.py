"""Checkpoint names are cut in the middle, so their distinguishing tail stays, and the official
checkpoint is pinned on the first row once the session has ended (issue 29: every row read
``run_1_epoch…`` at 80 and 120 columns, and the official best was below the pane's last line)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable

from onegc_tui.app import make_app
from onegc_tui.store import Store
from onegc_tui.store.ingest import Ingester
from onegc_tui.views.checkpoint_names import fit_checkpoint_label
from runner.launch.spawn import create_session
from runner.wire.jsonl import EventWriter
from runner.wire.session_config import SessionConfig
from tests.homes import T0, Clock, settled

NAME = "run_1_resnet_wide_lr3e-4_epoch_{}"
OFFICIAL = 12


def long_names_home(home: Path) -> Path:
    sid = "long-names"
    create_session(SessionConfig(session_id=sid, task="t0", agent="scripted", budget_s=600, created=T0), home)
    w = EventWriter(home / "runs" / sid / "events.jsonl", sid, clock=Clock(T0))
    w.emit("session_started", task="t0_demo", agent="scripted", model=None, repeat=1, study=None, budget_s=600,
           grace_s=30, contract={"task_hash": "h"})
    for i in range(1, 19):
        w.emit("checkpoint_found", name=NAME.format(i), path="p", snapshot="s", script="run_1.py",
               self_reported=None, budget_elapsed_s=20.0 * i)
        w.emit("checkpoint_scored", name=NAME.format(i), value=0.5 + 0.01 * i, metric="val_acc", split="val",
               budget_elapsed_s=20.0 * i)
    w.emit("checkpoint_scored", name=NAME.format(OFFICIAL), value=0.61, metric="val_acc", split="test",
           official=True, budget_elapsed_s=400.0)
    w.emit("session_ended", reason="completed", detail="done", active_s=420, wall_s=421, paused_s=0, score=0.61,
           best_checkpoint=NAME.format(OFFICIAL))
    w.close()
    store = Store.open(home)  # the monitor under test does not ingest (live=False)
    Ingester(home, store).catch_up()
    store.close()
    return home


def test_a_name_keeps_its_head_and_its_tail():
    assert fit_checkpoint_label("run_1_epoch_12", 14) == "run_1_epoch_12"
    assert fit_checkpoint_label("run_1_resnet_epoch_12", 12) == "run_…poch_12"
    assert len({fit_checkpoint_label(NAME.format(i), 8) for i in range(10, 19)}) == 9  # still tell apart


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (160, 44)])
async def test_the_pane_cuts_names_in_the_middle_and_pins_the_official_one(tmp_path, size):
    home = long_names_home(tmp_path / "home")
    app = make_app(home, live=False, show_clock=False, now=lambda: T0 + 1000)
    async with app.run_test(size=size) as pilot:
        await settled(pilot)
        table = app.query_one("#ckpt-table", DataTable)
        names = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
        notes = [str(table.get_row_at(i)[-1]) for i in range(table.row_count)]
        assert table.row_count == 19
        roles = [str(table.get_row_at(i)[2]) for i in range(table.row_count)]
        assert "12" in names[0] and notes[0].startswith("★"), (names[0], notes[0])  # the official one, first
        # t0 is scored on val: its official row is the official val one, marked as such at every width
        assert roles[0] in ("official val", "val★", "v★") and set(roles[1:]) <= {"live val", "val", "v"}, roles
        assert table.cursor_row == 0 and table.scroll_y == 0  # and in view
        live = names[1:]
        assert len(set(live)) == len(live), live  # each row still tells its checkpoint from the next
        assert all(n.endswith(NAME.format(i)[-(len(n) - n.index("…") - 1):]) for i, n in enumerate(live, 1) if "…" in n)
        assert any("…" in n for n in live)  # these are cut, in the middle
        assert not any(n.endswith("…") for n in names)
