"""The history matrix kept in the store (onegc_tui/results/history_cells.py) is the matrix of the
sessions as they are: after every change the ingest writes (a session starts, ends, is struck out,
is removed), for the whole home and for each study, with and without the demo task. A process
that opens a store whose sessions did not change computes no cell."""

from __future__ import annotations

from pathlib import Path

import pytest

from onegc_tui.results.history_cells import history, settle
from onegc_tui.results.matrix import build_matrix, split_demo
from onegc_tui.store import Store
from onegc_tui.store.ingest import Ingester
from onegc_tui.views import monitor_data
from runner.launch.spawn import create_session
from runner.wire.jsonl import EventWriter
from runner.wire.session_config import SessionConfig
from tests.homes import Clock, build_home

T0 = 1_790_000_000.0


def session(home: Path, sid: str, task: str, agent: str = "scripted", model: str | None = None, study: str | None = None,
            repeat: int = 1, end: str | None = "completed", score: float | None = 0.5) -> EventWriter:
    create_session(SessionConfig(session_id=sid, task="t0", agent=agent, model=model, budget_s=600, study=study,
                                 repeat=repeat, created=T0), home)
    w = EventWriter(home / "runs" / sid / "events.jsonl", sid, clock=Clock(T0 + repeat))
    w.emit("session_started", task=task, agent=agent, model=model, repeat=repeat, study=study, budget_s=600, grace_s=30,
           contract={"task_hash": f"h-{task}", "network": "none"})
    w.emit("process", action="started", pid=1, script="run_1.py", cmdline="python run_1.py")
    w.emit("checkpoint_found", name="c-1", path="p", snapshot="s", budget_elapsed_s=30.0 * repeat)
    if end:
        w.emit("session_ended", reason=end, detail="", active_s=100.0 * repeat, wall_s=101, paused_s=0, score=score)
    return w


def ingest(home: Path) -> None:
    store = Store.open(home)
    try:
        Ingester(home, store).ingest_all()
    finally:
        store.close()


@pytest.fixture
def home_of_studies(home):
    """Agents × paper tasks × repeats, by hand and in two studies (labelled configurations, and one
    session of a study run by hand), with a failure, an aborted session, a task no spec names, a
    running session and the demo task's."""
    for r in (1, 2, 3):
        session(home, f"cc-t6-r{r}", "t6_etth1", "claude-code", "sonnet", repeat=r, score=0.40 + 0.01 * r)
        session(home, f"cx-t6-r{r}", "t6_etth1", "codex", "gpt-5", repeat=r, score=None if r == 2 else 0.45 - 0.02 * r,
                end="agent_failed" if r == 2 else "completed")
        session(home, f"s1--quick--t4--r{r}", "t4_molhiv", study="s1", repeat=r, score=0.70 + 0.03 * r)
        session(home, f"s2--quick--t4--r{r}", "t4_molhiv", "codex", "gpt-5", study="s2", repeat=r, score=0.60 + r / 100)
    session(home, "s1-by-hand", "t6_etth1", "claude-code", "sonnet", study="s1", score=0.39)
    session(home, "aborted-1", "t6_etth1", "claude-code", "sonnet", end="aborted", score=None)
    session(home, "unknown-1", "t99_nothing", score=0.3)
    session(home, "running-1", "t4_molhiv", "codex", "gpt-5", end=None).close()
    build_home(home, full=True)  # the demo task's sessions
    ingest(home)
    return home


def expected(store: Store, study: str | None, demo: bool):
    """The matrices as build_matrix makes them from every session (what history did before)."""
    measured = {t: m.mean for t, m in monitor_data.measured_baselines(store).items()}
    bench, other = split_demo(monitor_data.outcomes(store, study, include_demo=demo))
    return (build_matrix(bench, study=study or "ours", measured=measured),
            build_matrix(other, study=f"{study or 'ours'} (demo tasks)") if other else None)


def check_every_view(home: Path) -> None:
    store = Store.open(home)
    try:
        for study in (None, "s1", "s2", "nobody"):
            for demo in (False, True):
                got = history(store, study, include_demo=demo)
                assert (got.bench, got.other) == expected(store, study, demo), (study, demo)
    finally:
        store.close()


def test_the_stored_cells_are_the_matrix_of_every_view(home_of_studies):
    check_every_view(home_of_studies)
    store = Store.open(home_of_studies)
    got = history(store)
    assert {r.label for r in got.bench.rows} == {"claude-code (sonnet)", "codex (gpt-5)", "s1/quick (scripted)",
                                                  "s2/quick (codex, gpt-5)"}
    cell = got.bench.row("codex (gpt-5)").cell("t6")
    assert (cell.n_success, cell.n_total) == (2, 3)
    assert got.bench.row("codex (gpt-5)").cell("t4").running_ids == ("running-1",)
    assert got.bench.n_aborted == 1 and got.other is not None and got.other.unknown_tasks == ("t99_nothing",)
    store.close()


def test_a_new_process_over_an_unchanged_home_computes_no_cell(home_of_studies):
    store = Store.open(home_of_studies)
    assert settle(store) > 0  # the first reader computes what the ingest marked
    store.close()
    store = Store.open(home_of_studies)  # another process: nothing marked since
    assert settle(store) == 0
    store.close()
    ingest(home_of_studies)  # a catch-up with nothing new marks nothing
    store = Store.open(home_of_studies)
    assert settle(store) == 0
    store.close()


def test_the_cells_follow_each_change_the_ingest_writes(home_of_studies):
    home = home_of_studies
    store = Store.open(home)
    settle(store)
    store.close()

    w = EventWriter(home / "runs/running-1/events.jsonl", "running-1", clock=Clock(T0 + 50))
    w.emit("heartbeat", remaining_s=300, active_s=300)  # a heartbeat of a running session: no cell moves
    w.close()
    ingest(home)
    store = Store.open(home)
    assert settle(store) == 0
    store.close()

    w = EventWriter(home / "runs/running-1/events.jsonl", "running-1", clock=Clock(T0 + 60))
    w.emit("session_ended", reason="completed", detail="", active_s=500, wall_s=501, paused_s=0, score=0.61)
    w.close()
    ingest(home)
    store = Store.open(home)
    assert settle(store) == 1  # its one cell (no study: the home's alone)
    store.set_disqualified("cc-t6-r1", "copied an earlier repeat")
    store.forget_session("s2--quick--t4--r3")  # a study retry starts it afresh
    store.close()
    session(home, "cc-t6-r4", "t6_etth1", "claude-code", "sonnet", repeat=4, score=0.43).close()
    ingest(home)
    check_every_view(home)
    store = Store.open(home)
    cell = history(store).bench.row("claude-code (sonnet)").cell("t6")
    assert cell.n_disqualified == 1 and "cc-t6-r4" in cell.session_ids
    store.close()


def test_the_cells_triggers_watch_every_column_an_outcome_reads():
    """What the matrix reads of a session (OUTCOME_COLUMNS) is what the trigger compares: a column
    added to the first and not to the second would leave cells stale."""
    from onegc_tui.store.queries import OUTCOME_COLUMNS
    from onegc_tui.store.schema import MIGRATIONS

    trigger = [m for m in MIGRATIONS if "history_dirty_update" in m][-1]  # the trigger as the last migration made it
    for column in OUTCOME_COLUMNS:
        name = column.split("(")[1].split(",")[0] if "(" in column else column
        assert name == "session_id" or f"OLD.{name} IS NOT NEW.{name}" in trigger, name
