"""A finished session whose event log's last line is torn keeps its result (issue 37 item 4):
``onegc reindex`` takes its end from result.json and says so; a catch-up does the same."""

from __future__ import annotations

import json

from click.testing import CliRunner

from onegc_tui.cli.main import main
from onegc_tui.store import Store
from onegc_tui.store.ingest import Ingester
from onegc_tui.store.torn_tail import result_end, torn_bytes
from runner.wire.paths import SessionPaths
from tests.homes import build_home

RESULT = {"end_reason": "completed", "end_detail": "the agent finished", "value": 0.93, "checkpoint": "run_1_epoch3-1",
          "val": 0.93, "split": "val"}


def tear(home, sid: str = "a-ended", cut: int = 30) -> SessionPaths:
    """result.json as the runner writes it at the end, and the log's last line cut ``cut`` bytes short."""
    paths = SessionPaths(home / "runs" / sid)
    paths.result.write_text(json.dumps(RESULT))
    data = paths.events.read_bytes()
    assert data.rstrip(b"\n").rsplit(b"\n", 1)[1].find(b'"session_ended"') > 0  # the end is the last line
    paths.events.write_bytes(data[:-cut])
    return paths


def test_reindex_keeps_the_result_of_a_session_whose_last_line_is_torn(home):
    build_home(home)
    paths = tear(home)
    assert torn_bytes(paths) > 0 and result_end(paths).score == 0.93
    r = CliRunner().invoke(main, ["reindex"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert (f"a-ended: its event log ends in a torn line ({torn_bytes(paths)} bytes): its end is taken from "
            "result.json: completed, official val accuracy 0.9300 (run_1_epoch3-1)") in r.output
    store = Store.open(home)
    try:
        row = store.session("a-ended")
    finally:
        store.close()
    assert row["state"] == "ended" and row["score"] == 0.93 and row["end_reason"] == "completed"
    assert "torn line" in row["end_detail"]


def test_a_catch_up_reads_a_torn_end_from_result_json_not_as_a_harness_error(home):
    build_home(home)
    (home / "onegc.db").unlink()
    tear(home)
    store = Store.open(home)
    try:
        Ingester(home, store).catch_up()
        row = store.session("a-ended")
    finally:
        store.close()
    assert (row["state"], row["end_reason"], row["score"]) == ("ended", "completed", 0.93)


def test_a_result_json_that_is_not_one_is_not_taken(home):
    build_home(home)
    paths = SessionPaths(home / "runs" / "a-ended")
    for text in ("{", "[]", json.dumps({**RESULT, "end_reason": "exploded"})):
        paths.result.write_text(text)
        assert result_end(paths) is None
    paths.result.write_text(json.dumps({**RESULT, "value": "0.9"}))
    assert result_end(paths).score is None  # a score that is no number is no score
