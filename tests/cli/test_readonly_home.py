"""A read-only home can be browsed: tasks, sessions, history and study status work, and read it
whole (the store and whatever the session folders hold beyond it), writing nothing; the commands
that write say why not (issue 29: a read-only home was refused even for tasks, sessions, history)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from onegc_tui.cli.main import main
from onegc_tui.store import Store
from onegc_tui.store.ingest import Ingester
from tests.homes import _session, build_home

pytestmark = pytest.mark.slow  # mount


def run(*args):
    return CliRunner().invoke(main, list(args))


def snapshot(folder):
    return sorted((str(p.relative_to(folder)), p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*"))


@pytest.fixture
def readonly_home(tmp_path, small_tmpfs, demo_data, monkeypatch):
    """A home with sessions and a store that lags one session behind its folders, on a
    filesystem mounted read-only (root ignores permissions; a read-only mount it does not)."""
    src = tmp_path / "src"
    build_home(src, full=True)
    store = Store.open(src)
    Ingester(src, store).catch_up()
    store.close()
    _session(src, "e-late", "scripted", "completed", False, [0.5, 0.7])  # in the folders only
    shutil.copytree(demo_data, src / "data" / "t0_demo")
    home = small_tmpfs("64m")
    shutil.copytree(src, home, dirs_exist_ok=True)
    out = subprocess.run(["mount", "-o", "remount,ro", str(home)], capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip(f"cannot remount read-only: {out.stderr.strip()}")
    monkeypatch.setenv("ONEGC_HOME", str(home))
    return home


def test_a_read_only_home_is_browsed_whole_and_left_as_it_was(readonly_home):
    before = snapshot(readonly_home)
    r = run("tasks")
    assert r.exit_code == 0 and "t0 " in r.output and "prepared" in r.output, r.output
    r = run("sessions", "--json")
    assert r.exit_code == 0, r.output
    rows = {row["session_id"]: row for row in json.loads(r.output)}
    assert {"a-ended", "b-paused", "e-late"} <= set(rows)  # e-late: read from its folder, not in onegc.db
    assert rows["e-late"]["state"] == "ended" and rows["e-late"]["score"] == 0.7
    r = run("sessions")
    assert r.exit_code == 0 and "e-late" in r.output
    r = run("history", "--demo")
    assert r.exit_code == 0 and "scripted" in r.output and "tokens and cost of" in r.output, r.output
    assert snapshot(readonly_home) == before  # nothing written: no store, no -wal, no -shm


def test_report_and_export_read_a_read_only_home(readonly_home, tmp_path):
    before = snapshot(readonly_home)
    r = run("report", "-o", str(tmp_path / "r.html"))
    assert r.exit_code == 0, r.output
    assert "e-late" in (tmp_path / "r.html").read_text()  # read from its folder, not in onegc.db
    assert snapshot(readonly_home) == before  # only the output file was written
    pytest.importorskip("sqlite_utils", reason="sqlite-utils is not installed (the [export] extra)")
    r = run("export", "--format", "sqlite", "-o", str(tmp_path / "s.db"))
    assert r.exit_code == 0, r.output
    assert snapshot(readonly_home) == before  # only the output files were written


@pytest.mark.parametrize("argv", [["run", "t0", "--agent", "scripted", "--detach"], ["reindex"],
                                  ["pause", "b-paused"], ["disqualify", "a-ended", "-r", "x"]])
def test_commands_that_write_say_why_not(readonly_home, argv):
    r = run(*argv)
    assert r.exit_code == 2, r.output
    (line,) = r.output.strip().splitlines()
    assert f"ONEGC_HOME={readonly_home} is not writable by this user, and this command writes there" in line
    assert "'onegc tasks', 'sessions', 'history', 'study status', 'monitor', 'report' and 'export' only read it" in line


@pytest.fixture
def current_readonly_home(tmp_path, small_tmpfs, demo_data, monkeypatch):
    """A read-only home whose store holds everything its session folders hold (a finished study
    shared read-only): no ``-wal`` beside it, nobody writing it."""
    src = tmp_path / "src"
    build_home(src, full=True)
    shutil.copytree(demo_data, src / "data" / "t0_demo")
    home = small_tmpfs("64m")
    shutil.copytree(src, home, dirs_exist_ok=True)
    store = Store.open(home)  # caught up where it is read: its offsets name the home's own paths
    Ingester(home, store).catch_up()
    store.close()
    out = subprocess.run(["mount", "-o", "remount,ro", str(home)], capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip(f"cannot remount read-only: {out.stderr.strip()}")
    monkeypatch.setenv("ONEGC_HOME", str(home))
    return home


def test_a_read_only_home_whose_store_is_current_is_read_in_place(current_readonly_home):
    """No copy of the store (issue 49: one per command and per viewer was the whole store again):
    SQLite reads it where it is, immutable, and writes nothing beside it; the history's cells that
    nobody stored are computed for this view alone."""
    from onegc_tui.store import DB_NAME
    from onegc_tui.store.readonly_home import IN_PLACE, caught_up_store, private_store

    home = current_readonly_home
    before = snapshot(home)
    store = caught_up_store(home)
    try:
        assert store.read_only and store.path == home / DB_NAME
        assert {r["session_id"] for r in store.sessions()} == {"a-ended", "b-paused", "c-ended", "d-failed"}
    finally:
        store.close()
    rows = json.loads(run("sessions", "--json").output)
    assert len(rows) == 4
    r = run("history", "--demo", "--format", "json", "--no-paper")
    assert r.exit_code == 0, r.output
    rows = {row["label"]: row for row in json.loads(r.output)["studies"][0]["rows"]}
    cell = rows["scripted [paper split]"]["cells"]["t0"]  # t0, the paper's split
    command = rows["command [paper split]"]["cells"]["t0"]
    assert (cell["n_total"], cell["n_success"], command["running_ids"]) == (3, 2, ["b-paused"])
    with private_store(home) as view:
        assert view != IN_PLACE  # b-paused is not over: the monitor reads a copy and ingests what comes
    assert snapshot(home) == before  # no copy, no -wal, no -shm
