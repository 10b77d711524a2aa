"""Issue 29: every monitor shows the whole stream. A live scripted session, an ``onegc sessions``
loop (another process that ingests, as a browser tab's does) and two monitors, each with its own
live ingest: both monitors' transcript and checkpoints panes hold every line of the session, in
order, though the loop and the other monitor ingested much of it. Before, the panes were fed by
this process's own ingest only, and two viewers showed complementary halves."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from onegc_tui.app import make_app
from onegc_tui.app.widgets.panes import CheckpointsPane
from onegc_tui.app.widgets.transcript import TranscriptLog
from onegc_tui.store import Store
from onegc_tui.store.queries import event_data
from onegc_tui.views.transcript_view import event_line, event_matches
from runner.wire.events import EVENT_TYPES, parse_event
from tests.helpers import REPO, SHORT_DEMO, start_session

LOOP = """
import subprocess, sys, time
while True:
    subprocess.run([sys.executable, "-m", "onegc_tui.cli", "sessions"], stdout=subprocess.DEVNULL)
    time.sleep(0.05)
"""


@pytest.mark.slow
async def test_two_monitors_show_every_line_ingested_by_either_or_elsewhere_in_order(home):
    loop = subprocess.Popen([sys.executable, "-c", LOOP], cwd=REPO)  # ONEGC_HOME: the test's (monkeypatched)
    try:
        paths = start_session(home, "both", pace_s=0.3, agent_args=SHORT_DEMO)
        apps = [make_app(home, focus="both", show_clock=False) for _ in range(2)]  # each with its own live ingest
        async with apps[0].run_test(size=(160, 48)) as pilot, apps[1].run_test(size=(120, 40)) as pilot2:
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline:
                await pilot.pause(0.25)
                await pilot2.pause(0.25)
                if b'"session_ended"' in paths.events.read_bytes() and all(
                        (app.dashboard.table.row("both") or {}).get("state") in ("ended", "failed")
                        and app.dashboard.loaded_seq == _stored_max(home) for app in apps):
                    break
            else:
                raise AssertionError("the session did not end, or a monitor did not catch up, within 240 s")
            await pilot.pause(0.5)
            await pilot2.pause(0.5)
            drawn = [[ref[1] for ref in app.query_one(TranscriptLog).refs if ref is not None] for app in apps]
            shown_checkpoints = [set(app.query_one(CheckpointsPane).values) for app in apps]
    finally:
        loop.kill()
        loop.wait()
    store = Store.open(home)
    try:
        stored = [parse_event(d) for d in event_data(store, "both", list(EVENT_TYPES))]
    finally:
        store.close()
    # every event the panes show a line for, once each and in the order of the record, in both
    want = [e.seq for e in stored if event_matches(e, "all") and event_line(e)]
    assert drawn[0] == want and drawn[1] == want
    scored = {e.name for e in stored if e.type == "checkpoint_scored" and e.value is not None and not e.official}
    assert scored and all(scored <= shown for shown in shown_checkpoints), scored


def _stored_max(home) -> int:
    store = Store.open(home)
    try:
        return store.max_seq("both")
    finally:
        store.close()
