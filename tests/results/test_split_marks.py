"""Every row says how its scored split was held (issue 47, "every view and export says 'sealed' or
'paper' beside each number"): ``[sealed split]`` or ``[paper split]`` where the task leaves the
choice (t0, T1-T3, T7), no mark on T4-T6 (their scored split is never in the workspace). Real
session folders, ingested into a real SQLite store, read back through history's stored cells,
``onegc history`` and ``onegc sessions``."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from click.testing import CliRunner

from onegc_tui.cli.main import main
from onegc_tui.results.history_cells import history
from onegc_tui.results.matrix import build_matrix, shown_rows, split_demo
from onegc_tui.store import Store
from onegc_tui.store import history as history_sql
from onegc_tui.store.ingest import Ingester
from onegc_tui.store.schema import SCHEMA_VERSION
from onegc_tui.views import monitor_data
from onegc_tui.views.outcomes import SessionOutcome
from runner.launch.spawn import create_session
from runner.wire.defaults import PAPER_SPLIT_MARK, SEALED_SPLIT_MARK
from runner.wire.jsonl import EventWriter
from runner.wire.session_config import SessionConfig
from tasks import all_tasks
from tests.homes import Clock

T0 = 1_790_000_000.0
SEALED = {"mode": "sealed", "split": "val", "withheld": ["val_y.npy"], "answers_cap": 200}


def session(home: Path, sid: str, task: str, score: float, *, sealed: bool, agent: str = "scripted",
            model: str | None = None, repeat: int = 1) -> None:
    """An ended session; its contract as the runner writes it: ``scored_split`` only when sealed."""
    contract: dict = {"task_hash": f"h-{task}", "network": "none"}
    if sealed:
        contract["scored_split"] = SEALED
    create_session(SessionConfig(session_id=sid, task="t0", agent=agent, model=model, budget_s=600, repeat=repeat,
                                 created=T0), home)
    w = EventWriter(home / "runs" / sid / "events.jsonl", sid, clock=Clock(T0 + repeat))
    w.emit("session_started", task=task, agent=agent, model=model, repeat=repeat, budget_s=600, grace_s=30,
           contract=contract)
    w.emit("session_ended", reason="completed", detail="", active_s=100.0, wall_s=101, paused_s=0, score=score)
    w.close()


def ingested(home: Path) -> Store:
    store = Store.open(home)
    Ingester(home, store).ingest_all()
    return store


def test_the_marks_follow_the_tasks_one_owner():
    """Sealable: t0, T1-T3, T7 (TaskSpec.sealable, which sealed_split.check and default_mode read)."""
    assert sorted(s.short for s in all_tasks().values() if s.sealable) == ["t0", "t1", "t2", "t3", "t7"]
    assert (SEALED_SPLIT_MARK, PAPER_SPLIT_MARK) == ("[sealed split]", "[paper split]")


def test_a_sealed_and_a_paper_session_of_one_agent_on_t0_are_two_rows_each_marked_never_pooled(home):
    session(home, "sealed-1", "t0_demo", 0.42, sealed=True)
    session(home, "paper-1", "t0_demo", 0.93, sealed=False)
    session(home, "paper-2", "t0_demo", 0.91, sealed=False, repeat=2)  # as a session from before the choice
    store = ingested(home)
    try:
        got = history(store, include_demo=True).other  # the stored cells
        assert got is not None
        bench, other = split_demo(monitor_data.outcomes(store, None, include_demo=True))
        assert bench == [] and got == build_matrix(other, study="ours (demo tasks)")  # as from every session
        assert sorted(r.label for r in got.rows) == ["scripted [paper split]", "scripted [sealed split]"]
        sealed, paper = got.row("scripted [sealed split]").cell("t0"), got.row("scripted [paper split]").cell("t0")
        assert sealed is not None and paper is not None
        assert (sealed.session_ids, sealed.mean) == (("sealed-1",), 0.42)
        assert (paper.session_ids, paper.n_success) == (("paper-1", "paper-2"), 2)
    finally:
        store.close()
    shown = CliRunner().invoke(main, ["history", "--demo", "--no-paper"], catch_exceptions=False).output
    rows = [line for line in shown.splitlines() if line.startswith("ours (demo tasks)  ")]
    assert len(rows) == 2, shown
    assert any("scripted [sealed split]" in r and "0.4200" in r for r in rows), shown
    assert any("scripted [paper split]" in r and "0.9200" in r for r in rows), shown
    listed = CliRunner().invoke(main, ["sessions"], catch_exceptions=False).output
    for sid, mark, cell in (("sealed-1", "[sealed split]", "0.4200 val sealed"), ("paper-1", "[paper split]",
                                                                                   "0.9300 val paper")):
        line = next(line for line in listed.splitlines() if line.startswith(sid))
        assert f"scripted {mark}" in line and cell in line, listed


def test_a_t5_and_a_t6_row_carries_no_mark(home):
    session(home, "t6-1", "t6_etth1", 0.39, sealed=False, agent="claude-code", model="sonnet")
    session(home, "t5-1", "t5_covtype", 0.81, sealed=False, agent="claude-code", model="sonnet")
    store = ingested(home)
    try:
        (row,) = history(store).bench.rows
        assert row.label == "claude-code (sonnet)" and set(row.cells) == {"t5", "t6"}
    finally:
        store.close()
    listed = CliRunner().invoke(main, ["sessions"], catch_exceptions=False).output
    for sid in ("t6-1", "t5-1"):
        line = next(line for line in listed.splitlines() if line.startswith(sid))
        assert "claude-code" in line and "split]" not in line, listed


def outcome(sid: str, task: str, scored_split: str | None) -> SessionOutcome:
    return SessionOutcome(sid, None, "codex", "gpt", task, 1, 0.5, "completed", "h", 2400.0,
                          scored_split=scored_split)


def test_t4_to_t6_sessions_join_their_configurations_one_marked_row_and_only_one():
    """The paper's protocol on T1 and T6 is one row, its Agg over both; with a sealed and a paper row
    the T6 sessions belong to neither more than the other: a row of their own, unmarked."""
    paper = [outcome("p1", "t1", None), outcome("p6", "t6", None)]
    (row,) = build_matrix(paper).rows
    assert row.label == "codex [paper split] (gpt)" and set(row.cells) == {"t1", "t6"} and row.agg.n_tasks == 2
    both = build_matrix([*paper, outcome("s1", "t1", "sealed")])
    assert sorted(r.label for r in both.rows) == ["codex (gpt)", "codex [paper split] (gpt)", "codex [sealed split] (gpt)"]
    assert set(both.row("codex (gpt)").cells) == {"t6"} and set(both.row("codex [sealed split] (gpt)").cells) == {"t1"}
    keys = [(None, None, "codex [sealed split]", "gpt"), (None, None, "codex", "gpt")]
    assert shown_rows(keys) == {keys[0]: keys[0], keys[1]: keys[0]}


def test_a_home_stored_before_the_paper_mark_has_its_cells_keyed_again(home):
    """Migration 18: the cells an older onegc stored name paper rows bare; every session is marked
    for the next reader to key again."""
    session(home, "paper-1", "t0_demo", 0.93, sealed=False)
    store = ingested(home)
    history(store, include_demo=True)  # settles: nothing left marked
    assert history_sql.marked(store) == []
    store.close()
    conn = sqlite3.connect(home / "onegc.db")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")
    conn.commit()
    conn.close()
    store = Store.open(home)
    try:
        assert history_sql.marked(store) == ["paper-1"]
        other = history(store, include_demo=True).other
        assert other is not None and [r.label for r in other.rows] == ["scripted [paper split]"]
    finally:
        store.close()


def test_a_label_cut_to_fit_keeps_its_split_mark():
    """The history screen's Agent column at 80 columns (20 cells): a sealed row and a paper row of
    one long configuration stay apart, each with its mark in its short form."""
    from onegc_tui.views.sessions_view import label_cut

    sealed = label_cut("claude-code [sealed split] (claude-sonnet-4-6)", 20)
    paper = label_cut("claude-code [paper split] (claude-sonnet-4-6)", 20)
    assert sealed.endswith(" [sealed]") and paper.endswith(" [paper]") and len(sealed) == len(paper) == 20
    assert label_cut("claude-code (claude-sonnet-4-6)", 20) == "claude-…-sonnet-4-6)"  # T4-T6: unmarked
    assert label_cut("scripted [paper split]", 22) == "scripted [paper split]"  # fits: whole
