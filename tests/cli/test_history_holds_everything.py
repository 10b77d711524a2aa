"""History holds every session of the home or says how to see the rest; studies go by their
names; aborted sessions are left out of the cells and counted apart (issue 37 item 6)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from onegc_tui.app.screens.history import compute_history
from onegc_tui.cli.main import main
from onegc_tui.store import Store
from onegc_tui.store.ingest import Ingester
from tests.homes import _session, build_home


def test_aborted_sessions_are_counted_apart_and_studies_named(home):
    build_home(home, full=True)
    _session(home, "e-aborted", "scripted", "aborted", False, [0.2], repeat=4)
    _session(home, "s1--quick--t0--r1", "scripted", "completed", False, [0.9], study="s1")
    store = Store.open(home)
    Ingester(home, store).ingest_all()
    store.close()
    r = CliRunner().invoke(main, ["history", "--demo", "--no-paper", "--format", "json"])
    assert r.exit_code == 0, r.output
    assert "note: 1 aborted session left out of the cells (not a run of the protocol): 'onegc sessions' lists them, " \
           "'onegc rm' removes them" in r.stderr
    (demo,) = [s for s in json.loads(r.stdout)["studies"] if "demo" in s["study"]]
    assert demo["n_aborted"] == 1
    scripted = next(row for row in demo["rows"] if row["label"] == "scripted [paper split]")
    assert scripted["cells"]["t0"]["n_total"] == 3  # the aborted fourth repeat is not in n/N
    assert "studies here: s1 (--study NAME shows one)" in r.stderr  # the study goes by its name


def test_the_monitor_history_says_how_many_sessions_it_hides(home):
    build_home(home, full=True)
    loaded = compute_history(home, None, False, None)  # the paper's tasks only: the 4 demo-task sessions hidden
    assert loaded.n == 0 and loaded.hidden == 4
    r = CliRunner().invoke(main, ["history"])
    assert r.exit_code == 0 and "4 demo-task sessions left out (--demo includes them)" in r.stderr


def test_the_history_says_what_its_cells_are(home):
    build_home(home, full=True)
    r = CliRunner().invoke(main, ["history", "--demo"])
    assert r.exit_code == 0
    assert "note: cells are official scores, each on its task's scored split (val on T1-T3 and T7, test on T4-T6" \
           in r.stderr
