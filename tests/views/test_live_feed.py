"""The live feed (onegc_tui/views/live_feed.py): what the sessions did since the last look, read from
the store, UI-free; the monitor and ``onegc run --plain`` both read it."""

from __future__ import annotations

import io

from onegc_tui.cli.plain import FEED_ALERTS, _StoreCopy
from onegc_tui.store import Store
from onegc_tui.views.live_feed import LiveFeed
from runner.wire.events import CheckpointScored, SessionEnded
from tests.homes import T0, _session, add_events, build_home


def test_the_first_look_reads_the_live_rows_only_and_raises_no_alert_on_the_past(tmp_path):
    home = build_home(tmp_path / "home")
    store = Store.open(home)
    try:
        feed = LiveFeed()
        look = feed.read(store)
        assert set(look.changed) == {"b-paused"} == set(feed.rows)  # a-ended is over: never held
        assert look.alerts == [] and not look.sessions_moved  # their past is no news
        again = feed.read(store)
        assert again.changed == {} and again.alerts == []  # nothing committed: nothing read
    finally:
        store.close()


def test_the_feed_holds_what_moves_while_it_watches_not_the_home(tmp_path):
    """Over a home of finished sessions the feed holds nothing; a session that starts while it
    watches is held while it runs and let go once the clock has seen its end; one over at the first
    look that changes later (a disqualification) is no news, and not held."""
    home = build_home(tmp_path / "home")
    store = Store.open(home)
    try:
        feed = LiveFeed()
        feed.read(store)
        _session(home, "new", "scripted", None, False, [0.4])  # starts while the feed watches
        add_events(home, "new", [])
        look = feed.read(store)
        assert set(look.changed) == {"new"} and look.sessions_moved and "new" in feed.rows
        assert "new_best" in {a.kind for a in look.alerts}  # a session new to the feed: its scores are news
        add_events(home, "new", [SessionEnded(session_id="new", seq=900, ts=T0 + 900, reason="completed", detail="done",
                                              active_s=100, wall_s=101, paused_s=0, score=0.4)])
        assert {a.kind for a in feed.read(store).alerts} == {"ended"}
        feed.due(T0 + 1_000)
        assert "new" not in feed.rows and "b-paused" in feed.rows  # the ended one let go, the paused one held
        other = Store.open(home)  # another connection (its own commits do not move a connection's data_version)
        other.set_disqualified("a-ended", "a person struck it out")
        other.close()
        look = feed.read(store)
        assert list(look.changed) == ["a-ended"] and look.alerts == [] and look.sessions_moved
        feed.due(T0 + 1_001)
        assert set(feed.rows) == {"b-paused"}
    finally:
        store.close()


def test_new_events_of_a_known_session_become_alerts_and_a_session_ending_moves_the_matrix(tmp_path):
    home = build_home(tmp_path / "home")
    store = Store.open(home)
    try:
        feed = LiveFeed()
        feed.read(store)
        add_events(home, "b-paused", [
            CheckpointScored(session_id="b-paused", seq=900, ts=T0 + 500, name="run_2-1", value=0.99, metric="val_acc",
                             split="val", budget_elapsed_s=90.0),
            SessionEnded(session_id="b-paused", seq=901, ts=T0 + 501, reason="completed", detail="done", active_s=100,
                         wall_s=101, paused_s=0, score=0.99, best_checkpoint="run_2-1"),
        ])
        look = feed.read(store)
        assert list(look.changed) == ["b-paused"] and look.sessions_moved
        assert {a.kind for a in look.alerts} == {"new_best", "ended"}
        assert feed.rows["b-paused"]["state"] == "ended" and "b-paused" not in feed.running
        feed.due(T0 + 600)
        assert feed.rows == {}  # over, and seen by the clock: let go
    finally:
        store.close()


def test_the_clock_alerts_of_a_running_session_come_once(tmp_path):
    home = tmp_path / "home"
    _session(home, "live", "scripted", None, False, [0.5])  # 120 s budget, 70 s left at its last heartbeat
    store = Store.open(home)
    try:
        from onegc_tui.store.ingest import Ingester

        Ingester(home, store).ingest_all()
        feed = LiveFeed()
        assert "live" in feed.read(store).changed and feed.running == {"live"}
        late = T0 + 10_000.0  # the budget long spent by the wall clock
        kinds = {a.kind for a in feed.due(late)}
        assert kinds == {"low_budget"}
        assert feed.due(late + 1) == []  # each once
    finally:
        store.close()


def test_plain_prints_a_feed_alert_on_its_own_line(tmp_path, monkeypatch):
    import onegc_tui.cli.plain as plain

    home = tmp_path / "home"
    _session(home, "live", "scripted", None, False, [0.5])
    copy = _StoreCopy(home, io.StringIO().write)
    try:
        feed = LiveFeed()
        monkeypatch.setattr(plain.time, "time", lambda: T0 + 10_000.0)
        assert copy.alerts(feed, ["live"]) == []  # not ingested yet: the feed's first look finds nothing
        copy.update()  # ingested on the copy's own connection: the feed, on another, sees it
        said = copy.alerts(feed, ["live", "other"])
        assert {sid for sid, _ in said} == {"live"}
        assert [words.split(" (")[0] for _, words in said] == ["10% of the budget left"]  # without the id again
        assert copy.alerts(feed, ["live"]) == []  # each once
        assert set(FEED_ALERTS) == {"low_budget"}  # a stall is the runner's warning, an event line of its own
    finally:
        copy.close()
