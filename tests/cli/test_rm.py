"""``onegc rm`` removes an ended session whole, its folder and its store rows, and history
follows (issue 37 item 6); a session still running is not removed."""

from __future__ import annotations

import json

from click.testing import CliRunner

from onegc_tui.cli.main import main
from onegc_tui.store import Store


def invoke(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_rm_removes_an_ended_session_and_history_follows(built_home):
    assert {r["session_id"] for r in json.loads(invoke("sessions", "--json").output)} == {"a-ended", "b-paused"}
    r = invoke("rm", "a-ended")  # no terminal to ask: --yes is needed
    assert r.exit_code == 2 and "is for good: add --yes" in r.output
    assert (built_home / "runs" / "a-ended").is_dir()
    r = invoke("rm", "a-ended", "--yes")
    assert r.exit_code == 0 and r.output.strip() == "removed a-ended", r.output
    assert not (built_home / "runs" / "a-ended").exists()
    assert not [p for p in built_home.iterdir() if p.name.startswith(".removing-")]
    store = Store.open(built_home)
    try:
        assert store.session("a-ended") is None and store.count_events("a-ended") == 0
    finally:
        store.close()
    assert {r["session_id"] for r in json.loads(invoke("sessions", "--json").output)} == {"b-paused"}
    r = invoke("history", "--demo", "--format", "json", "--no-paper")
    assert "a-ended" not in r.output


def test_rm_refuses_a_session_that_has_not_ended_and_names_nothing_outside_runs(built_home):
    (built_home / "runs" / "b-paused" / "runner.json").write_text(json.dumps({"pid": 1, "host": "elsewhere"}))
    r = invoke("rm", "b-paused", "--yes")
    assert r.exit_code == 2 and "has not ended" in r.output and "'onegc abort b-paused' first" in r.output
    assert (built_home / "runs" / "b-paused").is_dir()
    for bad in ("../runs", ".x", "a*"):
        r = invoke("rm", bad, "--yes")
        assert r.exit_code == 2 and "is not a session id" in r.output
