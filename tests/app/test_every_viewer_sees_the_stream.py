"""Issue 29: every monitor shows the whole stream. A live scripted session, an ``onegc sessions``
loop (another process that ingests, as a second monitor or a browser tab's does) and a monitor: the
monitor's transcript and checkpoints panes hold every line of the session, in order, though the
loop ingested much of it. Before, the panes were fed by this process's own ingest only, and two
viewers showed complementary halves."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from onegc_tui.app import make_app
from onegc_tui.app.widgets.panes import CheckpointsPane
from onegc_tui.app.widgets.transcript import TranscriptLog
from onegc_tui.store import Store
from onegc_tui.transcript_view import event_line, event_matches
from runner.wire.events import parse_event
from tests.conftest import REPO, start_session

LOOP = """
import subprocess, sys, time
while True:
    subprocess.run([sys.executable, "-m", "onegc_tui.cli", "sessions"], stdout=subprocess.DEVNULL)
    time.sleep(0.05)
"""


@pytest.mark.slow
async def test_a_monitor_shows_every_line_ingested_elsewhere_in_order(home):
    loop = subprocess.Popen([sys.executable, "-c", LOOP], cwd=REPO)  # ONEGC_HOME: the test's (monkeypatched)
    try:
        paths = start_session(home, "both", pace_s=0.3)
        app = make_app(home, focus="both", show_clock=False)
        async with app.run_test(size=(160, 48)) as pilot:
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline:
                await pilot.pause(0.5)
                if b'"session_ended"' in paths.events.read_bytes() and app.rows.get("both", {}).get("state") in (
                        "ended", "failed") and app.loaded_seq == _stored_max(home):
                    break
            else:
                raise AssertionError("the session did not end, or the monitor did not catch up, within 240 s")
            await pilot.pause(0.5)
            log = app.query_one(TranscriptLog)
            drawn = [ref[1] for ref in log.refs if ref is not None]  # the event behind each line
            shown_checkpoints = set(app.query_one(CheckpointsPane).values)
    finally:
        loop.kill()
        loop.wait()
    store = Store.open(home)
    try:
        stored = [parse_event(d) for (d,) in store.conn.execute(
            "SELECT data FROM events WHERE session_id='both' ORDER BY seq").fetchall()]
    finally:
        store.close()
    # every event the pane shows a line for, once each and in the order of the record
    assert drawn == [e.seq for e in stored if event_matches(e, "all") and event_line(e)]
    scored = {e.name for e in stored if e.type == "checkpoint_scored" and e.value is not None and not e.official}
    assert scored and scored <= shown_checkpoints, scored - shown_checkpoints


def _stored_max(home) -> int:
    store = Store.open(home)
    try:
        return store.max_seq("both")
    finally:
        store.close()
