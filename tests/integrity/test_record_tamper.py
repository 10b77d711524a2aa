"""INTEGRITY.md R5, tried as a reviewer would: real demo sessions, sealed by their runner, verify as
reproduced; an edit of the record after the session is caught by ``onegc verify`` (which names the
first place that differs and exits 8) and then shown in every view: ``onegc sessions`` (and
``--json``), the monitor's sessions table and detail note, ``onegc history`` (a ``✗`` cell, its
CSV), the report's integrity section. One test per edit: a value in result.json, an event line
dropped, edited or moved, a replaced snapshot file, a folder copied from another study."""

from __future__ import annotations

import csv
import html
import io
import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from onegc_tui.cli.main import main
from tests.helpers import SHORT_DEMO, start_session, wait_for

pytestmark = pytest.mark.slow
OURS, THEIRS = "demo--quick--t0--r1", "other--quick--t0--r1"
NOT_FILES = shutil.ignore_patterns("*.sock")  # the runner's launch socket: not part of the record
SESSION_BUDGET_S = 30  # a few checkpoints of the scripted agent, then its end and seal


@pytest.fixture(scope="module")
def sealed_home(tmp_path_factory, demo_data) -> Path:
    """A home with two ended demo sessions of two studies, each sealed by its runner."""
    home = tmp_path_factory.mktemp("sealed") / "home"
    (home / "data").mkdir(parents=True)
    shutil.copytree(demo_data, home / "data" / "t0_demo")
    started = [start_session(home, sid, study=study, budget_s=SESSION_BUDGET_S, pace_s=0.0, agent_args=SHORT_DEMO)
               for sid, study in ((OURS, "demo"), (THEIRS, "other"))]
    for paths in started:
        wait_for(lambda p=paths: (p.root / "seal.json").exists(), 240, f"{paths.session_id}'s seal")
    return home


@pytest.fixture
def copy(sealed_home, tmp_path, monkeypatch) -> Path:
    """A copy of the sealed home to edit (the copy is the same home: its id comes along)."""
    home = tmp_path / "home"
    shutil.copytree(sealed_home, home, symlinks=True, ignore=NOT_FILES)
    monkeypatch.setenv("ONEGC_HOME", str(home))
    return home


def onegc(*args: str):
    return CliRunner().invoke(main, list(args))


def assert_every_view_shows_it_tampered(home: Path, sid: str, where: str) -> None:
    """After ``onegc verify``: every view names the session's record as tampered, and where."""
    r = onegc("sessions")
    assert r.exit_code == 0, r.output
    row = next(line for line in r.output.splitlines() if line.startswith(sid))
    assert " TAMPERED " in row, r.output
    assert f"{sid}: record tampered: {where}" in " ".join(r.output.split())  # its note, wrapped at the width
    doc = next(d for d in json.loads(onegc("sessions", "--json").stdout) if d["session_id"] == sid)
    assert "tampered" in (doc["record"], doc["verified"])
    from onegc_tui.store import Store
    from onegc_tui.views.sessions_view import integrity_note, session_cells

    store = Store.open(home)  # what the monitor's sessions table and detail pane draw from
    try:
        monitor_row = store.session(sid)
    finally:
        store.close()
    assert session_cells(monitor_row)["session"].startswith("⚠ ✗ ")
    assert f"record tampered: {where}" in (integrity_note(monitor_row) or "")
    history = onegc("history", "--demo")  # every study: a folder copied in names its own
    assert "✗1" in history.output, history.output
    table = csv.DictReader(io.StringIO(onegc("history", "--demo", "--format", "csv").stdout))
    cell = next(r for r in table if r["n_tampered"] == "1")
    assert int(cell["n_success"]) <= int(cell["n_total"]) - 1, cell  # never in the mean
    report = home / "report.html"
    assert onegc("report", "-o", str(report)).exit_code == 0
    page = report.read_text()
    assert "TAMPERED" in page and html.escape(where) in page


def verify(sid: str):
    r = onegc("verify", sid)
    return r.exit_code, r.output


def test_the_sealed_demo_sessions_verify_as_reproduced(copy):
    code, out = verify(OURS)
    assert code == 0 and f"{OURS}: reproduced (" in out and "record sealed" in out, out
    assert onegc("sessions").output.count("verified") == 1
    history = onegc("history", "--demo", "--study", "demo").output
    assert "✓" in history


def test_an_edited_value_in_result_json_is_caught(copy):
    result = copy / "runs" / OURS / "result.json"
    doc = json.loads(result.read_text())
    doc["value"] = round(doc["value"] + 0.01, 4)
    result.write_text(json.dumps(doc, indent=2))
    code, out = verify(OURS)
    assert code == 8 and f"{OURS}: TAMPERED: result.json: edited since the session sealed it" in out, out
    assert "result.json.value: recorded" in out  # and the re-derived number beside the edited one
    assert_every_view_shows_it_tampered(copy, OURS, "result.json: edited since the session sealed it")


@pytest.mark.parametrize("edit, where", [
    ("dropped", "events.jsonl line 5 does not follow the line before it"),
    ("edited", "events.jsonl line 6 does not follow the line before it"),
    ("reordered", "events.jsonl line 5 does not follow the line before it"),
])
def test_a_dropped_edited_or_reordered_event_line_is_caught(copy, edit, where):
    events = copy / "runs" / OURS / "events.jsonl"
    lines = events.read_bytes().splitlines(keepends=True)
    if edit == "dropped":
        del lines[4]
    elif edit == "edited":
        lines[4] = lines[4].replace(b'"ts":', b'"ts":1', 1)
    else:
        lines[4], lines[5] = lines[5], lines[4]
    events.write_bytes(b"".join(lines))
    code, out = verify(OURS)
    assert code == 8 and f"{OURS}: TAMPERED: {where}" in out, out
    assert_every_view_shows_it_tampered(copy, OURS, where)


def test_a_replaced_snapshot_file_is_caught(copy):
    found = [json.loads(line) for line in (copy / "runs" / OURS / "events.jsonl").read_text().splitlines()
             if '"type":"checkpoint_found"' in line]
    other = [json.loads(line) for line in (copy / "runs" / THEIRS / "events.jsonl").read_text().splitlines()
             if '"type":"checkpoint_found"' in line]
    target = copy / "runs" / OURS / found[-1]["path"]
    os.chmod(target, 0o644)
    target.unlink()
    shutil.copyfile(copy / "runs" / THEIRS / other[0]["path"], target)  # another real checkpoint of this task
    code, out = verify(OURS)
    where = f"{found[-1]['path']}: replaced (its bytes are not the snapshot's)"
    assert code == 8 and f"{OURS}: TAMPERED: {where}" in out, out
    assert_every_view_shows_it_tampered(copy, OURS, where)


def test_a_session_folder_copied_from_another_study_is_caught(copy):
    ours = copy / "runs" / OURS
    shutil.rmtree(ours)
    # a better run of another study, put in our place
    shutil.copytree(copy / "runs" / THEIRS, ours, symlinks=True, ignore=NOT_FILES)
    code, out = verify(OURS)
    where = f"events.jsonl line 1 does not start session {OURS}'s chain"
    assert code == 8 and f"{OURS}: TAMPERED: {where}" in out, out
    assert onegc("reindex").output.count("TAMPERED") == 1  # reindex names it too
    assert_every_view_shows_it_tampered(copy, OURS, where)
