"""The record's caps (issue 38 part 3, INTEGRITY.md R2): past a session's caps the agent's output
is left out of events.jsonl and the raw copies, and counted in `truncated` events whose counts add
up to exactly what was left out; usage keeps its figures; the store sums them in the session row."""

from __future__ import annotations

from onegc_tui.store import Store
from onegc_tui.store.ingest import Ingester
from runner.launch.spawn import create_session
from runner.wire.jsonl import EventWriter, RawLog, read_all_events
from runner.wire.record_caps import HEADROOM, RecordCaps, RecordLimits
from runner.wire.session_config import SessionConfig
from tests.runner.wire.test_coalesce import Steps


def test_the_caps_scale_with_the_budget_from_the_measured_figures():
    short, hour = RecordCaps.for_budget(120), RecordCaps.for_budget(3600)
    assert short.events == HEADROOM * 22 and hour.events == HEADROOM * 660  # 11 events a minute × 100
    assert RecordCaps.for_budget(0).events == HEADROOM * 15  # the floor: one whole exchange × 100
    assert hour.event_bytes > short.event_bytes and hour.raw_bytes == int(HEADROOM * 11_221 * 60)


def test_the_checkpoint_cap_is_the_papers_most_scripts_times_two_times_100_or_the_sessions_own():
    assert RecordCaps.for_budget(40 * 60).checkpoints == HEADROOM * 2 * 25  # a best and a last per script
    assert RecordCaps.for_budget(60).checkpoints == 5_000 and RecordCaps.for_budget(80 * 60).checkpoints == 10_000
    assert RecordCaps.for_budget(60, checkpoints=5).checkpoints == 5
    assert RecordCaps.for_budget(60).contract()["checkpoints"] == 5_000


def test_an_agent_that_starts_scripts_without_end_meets_the_process_cap(home):
    """A loop of `python x.py` makes two ``process`` events a launch: past the cap (the paper's most
    scripts per run × 100) they are left out and counted, and the session's count stops there."""
    assert RecordCaps.for_budget(40 * 60).process_events == HEADROOM * 2 * 25
    caps = RecordCaps(events=50, event_bytes=1 << 20, raw_bytes=1 << 20, process_events=40)
    paths = create_session(SessionConfig(session_id="loop", task="t0", agent="command", budget_s=60), home)
    w = EventWriter(paths.events, "loop", clock=Steps(0.01), limits=RecordLimits(caps, summary_s=1.0))
    w.emit("session_started", task="t0", agent="command", budget_s=60, grace_s=30)
    for pid in range(1, 1_001):
        for action in ("started", "ended"):
            w.emit("process", action=action, pid=pid, script="x.py", cmdline="python x.py")
    w.emit("session_ended", reason="completed", active_s=1, wall_s=1, paused_s=0)
    w.close()
    found, bad = read_all_events(paths.events)
    assert not bad
    processes = [e for e in found if e.type == "process"]
    cut = [e for e in found if e.type == "truncated"]
    assert len(processes) == 40 and {e.stream for e in cut} == {"process"}
    assert sum(e.dropped for e in cut) == 2_000 - 40 and cut[-1].final  # every left-out event counted
    store = Store.open(home)
    try:
        Ingester(home, store).ingest_all()
        row = store.session("loop")
        assert row["scripts_launched"] == 20 and row["truncated"] == 2_000 - 40
    finally:
        store.close()


def flood(home, n: int, caps: RecordCaps, step: float = 0.01):
    paths = create_session(SessionConfig(session_id="flood", task="t0", agent="command", budget_s=60), home)
    limits = RecordLimits(caps, summary_s=1.0)
    w = EventWriter(paths.events, "flood", clock=Steps(step), limits=limits)
    w.emit("session_started", task="t0", agent="command", budget_s=60, grace_s=30)
    written = 0
    for i in range(n):
        usage = {"tokens_in": 10, "tokens_out": 1} if i % 100 == 99 else {}
        if w.emit("transcript", role="assistant", kind="text", text=f"line {i} " + "x" * 80, raw_line=i + 1, **usage):
            written += 1
    w.emit("session_ended", reason="completed", active_s=1, wall_s=1, paused_s=0)
    w.close()
    found, bad = read_all_events(paths.events)
    assert not bad
    return paths, found, written, limits


def test_a_transcript_flood_is_cut_at_the_cap_and_every_left_out_event_is_counted(home):
    caps = RecordCaps(events=50, event_bytes=1 << 20, raw_bytes=1 << 20)
    paths, found, written, limits = flood(home, 2_000, caps)
    transcript = [e for e in found if e.type == "transcript"]
    truncated = [e for e in found if e.type == "truncated"]
    plain = [e for e in transcript if not e.tokens_in]
    assert len(plain) <= 50 and len(transcript) == written
    assert sum(t.dropped for t in truncated) == 2_000 - written  # exact: nothing lost uncounted
    assert truncated[0].dropped == 1  # the first drop is reported at once
    assert truncated[-1].final and all(not t.final for t in truncated[:-1])
    assert len(truncated) < 30  # one per summary window (20 s of this clock), not one per line
    kept_usage = [e for e in transcript if e.tokens_in and e.seq > plain[-1].seq]
    assert kept_usage and all(e.text == "" for e in kept_usage)  # usage past the cap: figures, no text
    assert [e.seq for e in found] == list(range(1, len(found) + 1))  # no gaps where events were left out


def test_the_transcript_bytes_stay_within_the_stated_multiple_of_the_cap(home):
    caps = RecordCaps(events=10**9, event_bytes=20_000, raw_bytes=1 << 20)
    paths, found, written, limits = flood(home, 5_000, caps)
    body = sum(len(line) + 1 for line in paths.events.read_bytes().splitlines()
               if b'"type":"transcript"' in line)
    assert body <= 2 * caps.event_bytes  # EVENTS_FILE_MULTIPLE
    assert sum(e.dropped_bytes for e in found if e.type == "truncated") == limits.transcript.total_dropped_bytes > 0


def test_the_store_sums_what_was_left_out_into_the_session_row(home):
    caps = RecordCaps(events=20, event_bytes=1 << 20, raw_bytes=1 << 20)
    _, found, written, limits = flood(home, 500, caps)
    store = Store.open(home)
    try:
        Ingester(home, store).ingest_all()
        row = store.session("flood")
    finally:
        store.close()
    assert row is not None
    assert row["truncated"] == 500 - written == limits.transcript.total_dropped
    assert row["truncated_bytes"] == limits.transcript.total_dropped_bytes


def test_a_raw_copy_keeps_whole_lines_up_to_its_cap_and_counts_the_rest(tmp_path):
    caps = RecordCaps(events=10, event_bytes=10_000, raw_bytes=1_000)
    limits = RecordLimits(caps)
    log = RawLog(tmp_path / "agent.stdout.jsonl", cap=limits.raw["stdout"])
    for i in range(100):
        log.write(f"{i:04d} {'y' * 44}\n".encode())  # 50 bytes a line
    log.close()
    assert (tmp_path / "agent.stdout.jsonl").read_bytes().count(b"\n") == 20
    assert limits.drain() == [{"stream": "stdout", "dropped": 80, "dropped_bytes": 4_000, "limit_events": None,
                               "limit_bytes": 1_000, "final": True}]


def test_onegc_sessions_marks_a_cut_record_and_its_json_carries_the_counts(home):
    import json

    from click.testing import CliRunner

    from onegc_tui.cli.main import main

    caps = RecordCaps(events=20, event_bytes=1 << 20, raw_bytes=1 << 20)
    _, _, written, limits = flood(home, 300, caps)
    table = CliRunner().invoke(main, ["sessions"], catch_exceptions=False)
    assert table.exit_code == 0 and "completed ✂" in table.output and "✂: the record was cut" in table.output
    listed = CliRunner().invoke(main, ["sessions", "--json"], catch_exceptions=False)
    (row,) = json.loads(listed.output)
    assert row["truncated"] == 300 - written and row["truncated_bytes"] == limits.transcript.total_dropped_bytes
