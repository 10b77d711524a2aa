"""The command line: one-line errors with exit 2, and the commands a new user types first."""

from __future__ import annotations

import csv
import io
import json

import pytest
from click.testing import CliRunner

from onegc_tui.cli.main import main


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_unknown_task_and_unprepared_data_are_one_line_errors(home):
    r = run("run", "t9", "--agent", "scripted")
    assert r.exit_code == 2 and r.output.strip().splitlines() == [
        "error: unknown task 't9': choose one of t0, t1, t2, t3, t4, t5, t6, t7 (see 'onegc tasks')"]
    r = run("run", "t6", "--agent", "scripted", "--detach")
    assert r.exit_code == 2 and "data for t6 not prepared: run 'onegc prepare t6'" in r.output
    assert not (home / "runs").exists() or not any((home / "runs").iterdir())  # nothing half-made
    r = run("run", "t0", "--agent", "nope", "--detach")
    assert r.exit_code == 2 and "unknown agent 'nope'" in r.output
    r = run("pause", "missing-session")
    assert r.exit_code == 2 and "no session 'missing-session'" in r.output


def test_tasks_lists_all_eight_with_their_data_state(home):
    r = run("tasks")
    assert r.exit_code == 0
    assert "t0 " in r.output and "prepared" in r.output and "not prepared" in r.output
    tasks_table = r.output.split("\n\n")[0]  # then the threat rows each task meets (tests/views/test_checks_view.py)
    assert len([line for line in tasks_table.splitlines() if line[:2] in {f"t{i}" for i in range(8)}]) == 8


def test_sessions_history_and_export(home, built_home):
    r = run("sessions", "--json")
    rows = json.loads(r.output)  # one JSON document: a list (was JSON Lines)
    assert isinstance(rows, list) and {r["session_id"] for r in rows} == {"a-ended", "b-paused"}
    r = run("history", "--demo", "--format", "csv", "--no-paper")
    assert r.exit_code == 0, r.output
    rows = list(csv.DictReader(io.StringIO(r.output)))  # none of the paper's rows; t0's paper split says so
    assert {row["study"] for row in rows} == {"ours (demo tasks)"}
    assert {row["agent"] for row in rows} == {"scripted [paper split]", "command [paper split]"}
    r = run("history", "--format", "md")
    assert "Sonnet 4.6" in r.output and "+0.293" in r.output
    assert "note: only the paper's rows: 2 demo-task sessions left out (--demo includes them)" in r.stderr
    r = CliRunner().invoke(main, ["history", "--no-paper"])
    assert r.exit_code == 2 and r.output.strip().splitlines() == [
        "error: nothing to print: 2 demo-task sessions left out (--demo includes them)"]


def test_a_new_home_folder_is_an_empty_store_not_a_traceback(tmp_path, monkeypatch):
    monkeypatch.setenv("ONEGC_HOME", str(tmp_path / "not-yet"))
    r = run("history", "--format", "csv")
    assert r.exit_code == 0 and f"no sessions under {tmp_path / 'not-yet' / 'runs'}" in r.stderr
    r = run("sessions")
    assert r.exit_code == 0 and "no sessions under" in r.output


def test_resume_of_an_ended_session_is_refused(home, built_home):
    (home / "runs/a-ended/result.json").write_text("{}")
    r = run("resume", "a-ended")
    assert r.exit_code == 2 and "already ended" in r.output
    r = run("abort", "a-ended")  # as pause and resume: exit 2, one line
    assert r.exit_code == 2 and r.output.strip().splitlines() == [
        "error: session a-ended has already ended: nothing to abort"]


@pytest.mark.slow
def test_doctor_reports_containment_and_data(home):
    r = run("doctor")
    assert r.exit_code == 0 and "PID namespace" in r.output and "t0 prepared" in r.output


def test_malformed_session_config_is_a_one_line_error(home):
    from runner.errors import ConfigError
    from runner.wire.paths import SessionPaths

    folder = home / "runs" / "bad"
    folder.mkdir(parents=True)
    (folder / "session.json").write_text(json.dumps({"session_id": "bad", "task": "t0", "agent": "scripted",
                                                      "budget_s": -5, "colour": "blue"}))
    try:
        SessionPaths(folder).read_config()
    except ConfigError as exc:
        assert str(exc).startswith(f"{folder / 'session.json'}: field ")
    else:
        raise AssertionError("a negative budget was accepted")


@pytest.mark.slow
def test_without_a_sandbox_run_refuses_in_one_line_and_unsealed_is_recorded(home, monkeypatch):
    from runner.sandbox import bwrap as sandbox

    monkeypatch.setattr(sandbox, "find_bwrap", lambda: None)
    sandbox.status.cache_clear()
    try:
        r = run("run", "t0", "--agent", "scripted", "--detach")
        assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output
        assert "bubblewrap not found" in r.output and "--unsealed" in r.output
        assert not (home / "runs").exists() or not any((home / "runs").iterdir())  # nothing started
        r = CliRunner().invoke(main, ["run", "t0", "--agent", "scripted", "--detach", "--unsealed", "--budget", "10s"],
                               catch_exceptions=False)
        assert r.exit_code == 0 and "--unsealed" in r.output
        (config,) = [json.loads(p.read_text()) for p in (home / "runs").glob("*/session.json")]
        assert config["sealed"] is False
    finally:
        sandbox.status.cache_clear()


def test_history_keeps_a_studys_agent_configurations_apart_and_the_demo_on_its_own(home):
    """demo_study.toml's quick and steady agents (one adapter) were one row 'scripted 0.8258±0.1888'
    beside the paper's seven-task Agg (issue 15)."""
    from tests.homes import build_demo_study

    build_demo_study(home)
    r = run("history", "--demo")
    assert r.exit_code == 0, r.output
    paper, _, demo = r.output.partition("Demo tasks: not part of the benchmark")
    assert demo, r.output
    assert "Sonnet 4.6" in paper and "T0" not in paper  # the paper's table: the paper's tasks only
    assert "quick (scripted [paper split])" in demo and "0.9723" in demo  # the fixture's contracts: the paper's split
    assert "steady (scripted [paper split])" in demo and "0.6793" in demo
    assert "0.8258" not in r.output and "Sonnet" not in demo
    r = run("history", "--demo", "--format", "csv")
    lines = [line.split(",") for line in r.output.splitlines()]
    labels = {row[3] for row in lines[1:] if row[0] == "ours (demo tasks)"}
    assert labels == {"quick (scripted [paper split])", "steady (scripted [paper split])"}  # as the tables name the rows
    assert "studies here: demo (--study NAME shows one)" in r.stderr  # studies go by their names (issue 37)


def test_tasks_prints_every_title_and_metric_whole(home):
    from tasks import all_tasks

    r = run("tasks")
    for spec in all_tasks().values():
        assert spec.title in r.output and spec.metric_label in r.output  # e.g. "(official test file)"
    assert "…" not in r.output  # not a terminal: nothing is cut


def test_disqualify_strikes_a_result_from_the_mean_keeps_it_in_n_over_n_and_survives_reindex(home, built_home):
    from onegc_tui.results.matrix import build_matrix
    from onegc_tui.store import Store
    from onegc_tui.store.ingest import Ingester
    from onegc_tui.views.monitor_data import outcomes

    store = Store.open(home)
    Ingester(home, store).catch_up()
    rows = [r for r in store.sessions() if r["state"] == "ended" and r["score"] is not None]
    store.close()
    target = rows[0]["session_id"]
    r = run("disqualify", target)
    assert r.exit_code == 2 and "--reason" in r.output
    r = run("disqualify", target, "--reason", "read the test labels")
    assert r.exit_code == 0 and "disqualified: read the test labels" in r.output

    def cell_of(reindex: bool):
        if reindex:
            assert run("reindex").exit_code == 0
        s = Store.open(home)
        try:
            outs = outcomes(s, include_demo=True)
            row = s.session(target)
        finally:
            s.close()
        mine = next(o for o in outs if o.session_id == target)
        peers = [o for o in outs if (o.agent, o.model, o.task, o.label) == (mine.agent, mine.model, mine.task, mine.label)]
        cell = next(iter(build_matrix(peers).rows[0].cells.values()))
        return row, cell, peers

    for reindex in (False, True):
        row, cell, peers = cell_of(reindex)
        assert row["disqualified"].startswith("read the test labels")
        assert cell.n_disqualified == 1 and cell.n_total == len(peers) and cell.n_success == len(peers) - 1
    assert run("disqualify", target, "--clear").exit_code == 0
    row, cell, _ = cell_of(True)
    assert row["disqualified"] is None and cell.n_disqualified == 0


def test_history_paired_and_the_study_exports_from_the_command_line(home, tmp_path):
    """Issue 30: the paired comparison in `onegc history`, the report and the exports' errors."""
    from tests.homes import build_demo_study

    build_demo_study(home)
    r = run("history", "--demo", "--no-paper", "--paired")
    assert r.exit_code == 0, r.output
    table = r.output.split("Paired comparisons")[1]
    assert "quick (scripted [paper split])  steady (scripted [paper split])" in table
    assert "SD (sample, ddof=1)" in table and "SEM =" in table
    assert "0.2930" in table  # (0.97-0.70 + 0.9746-0.6586) / 2
    r = run("history", "--demo", "--no-paper", "--paired", "--format", "json")
    doc = json.loads(r.stdout)["paired"]  # one document: the comparisons are a key of it
    (c,) = doc["comparisons"]
    assert c["n_pairs"] == 2 and c["mean_diff"] == pytest.approx(0.293) and c["noise_from"]
    report = tmp_path / "r.html"
    r = run("report", "-o", str(report))
    assert r.exit_code == 0 and "Paired comparisons" in report.read_text()
    r = run("report", "-o", str(tmp_path / "missing" / "r.html"))
    assert r.exit_code == 2 and "is not a folder" in r.output
    r = run("export", "--format", "sqlite", "-o", str(tmp_path / "x.db"), "--study", "nope")
    assert r.exit_code == 2 and "no sessions in study nope" in r.output
    r = run("export", "--format", "xlsx", "-o", str(tmp_path / "x.db"))
    assert r.exit_code == 2 and "'xlsx' is not one of 'sqlite', 'eval'" in r.output


def test_a_cost_limit_must_be_a_positive_number_of_dollars(home):
    r = run("run", "t0", "--agent", "scripted", "--detach", "--cost-limit", "0")
    assert r.exit_code == 2 and "--cost-limit" in r.output and "not in the range x>0" in r.output
    assert not (home / "runs").exists() or not any((home / "runs").iterdir())


def test_history_at_budget_says_what_a_shorter_budget_would_have_scored(home):
    from tests.homes import build_demo_study

    build_demo_study(home)
    r = run("history", "--demo", "--no-paper", "--at-budget", "90s")
    assert r.exit_code == 0, r.output
    part = r.output.split("What a 1.5-minute budget would have scored\n")[1].splitlines()
    assert part[0].split() == ["task", "configuration", "ran", "(min)", "scored", "by", "then", "mean", "at", "1.5", "min"]
    rows = {" ".join(line.split()[1:5]): line.split()[-2:] for line in part[1:3]}
    assert rows == {"quick (scripted [paper split])": ["2/2", "0.9723"], "steady (scripted [paper split])": ["2/2", "0.6793"]}
    # 10 s, the shortest budget onegc takes (runner/duration.py): the fixture's first checkpoints,
    # lower than what the sessions reached
    early = run("history", "--demo", "--no-paper", "--at-budget", "10s").output
    assert "a truncation of the sessions as they ran, not a rerun" in early
    part = early.split("What a 0.1667-minute budget would have scored\n")[1].splitlines()
    at_10s = {" ".join(line.split()[1:5]): float(line.split()[-1]) for line in part[1:3]}
    assert at_10s["quick (scripted [paper split])"] < 0.9723 and at_10s["steady (scripted [paper split])"] < 0.6793
