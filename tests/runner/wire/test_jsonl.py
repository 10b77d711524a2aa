"""The event wire format: writer stamps, reader takes whole lines, corrupt lines are reported."""

import json

from runner.wire.events import parse_event
from runner.wire.jsonl import EventWriter, JsonlTail, TailState, read_all_events


def test_writer_numbers_events_and_continues_after_reopen(tmp_path):
    path = tmp_path / "events.jsonl"
    w = EventWriter(path, "s", clock=lambda: 100.0)
    w.emit("warning", code="x", message="one")
    w.emit("heartbeat", remaining_s=5, active_s=1)
    w.close()
    w2 = EventWriter(path, "s", clock=lambda: 101.0)
    e = w2.emit("warning", code="x", message="three")
    w2.close()
    assert e.seq == 3
    lines = path.read_text().splitlines()
    assert [json.loads(line)["seq"] for line in lines] == [1, 2, 3]
    assert parse_event(lines[1]).remaining_s == 5


def test_reader_waits_for_a_partial_trailing_line(tmp_path):
    path = tmp_path / "events.jsonl"
    w = EventWriter(path, "s")
    w.emit("warning", code="a", message="whole")
    w.close()
    full = path.read_bytes()
    with open(path, "ab") as f:
        f.write(b'{"v":1,"session_id":"s","seq":2,"ts":1.0,"type":"warn')
    tail = JsonlTail(path)
    events, bad = tail.read_events()
    assert [e.seq for e in events] == [1] and not bad
    assert tail.state.offset == len(full)
    with open(path, "ab") as f:
        f.write(b'ing","code":"b","message":"rest"}\n')
    events, bad = tail.read_events()
    assert [e.seq for e in events] == [2] and events[0].message == "rest"


def test_corrupt_line_is_reported_with_file_and_line_and_reading_goes_on(tmp_path):
    path = tmp_path / "events.jsonl"
    w = EventWriter(path, "s")
    w.emit("warning", code="a", message="1")
    w.close()
    with open(path, "ab") as f:
        f.write(b"this is not json\n")
    w = EventWriter(path, "s")
    w.emit("warning", code="a", message="3")
    w.close()
    events, bad = read_all_events(path)
    assert [e.message for e in events] == ["1", "3"]
    assert len(bad) == 1 and bad[0].line_no == 2 and str(path) in str(bad[0])


def test_tail_resumes_from_a_saved_offset(tmp_path):
    path = tmp_path / "events.jsonl"
    w = EventWriter(path, "s")
    for i in range(5):
        w.emit("warning", code="a", message=str(i))
    w.close()
    first = JsonlTail(path)
    first.read_events()
    again = JsonlTail(path, TailState(first.state.offset, first.state.line_no))
    assert again.read_events() == ([], [])


def test_a_line_longer_than_a_read_is_skipped_and_reported_not_waited_for(tmp_path):
    path = tmp_path / "events.jsonl"
    w = EventWriter(path, "s1")
    w.emit("heartbeat", remaining_s=10.0, active_s=0.0, procs=0)
    with open(path, "ab") as f:
        f.write(b"x" * (3 << 20))  # no newline yet: longer than a read, still being written
    tail = JsonlTail(path)
    events, bad = tail.read_events(max_bytes=1 << 20)
    assert [e.seq for e in events] == [1] and bad == [] and not tail.at_end
    events, bad = tail.read_events(max_bytes=1 << 20)
    assert events == [] and len(bad) == 1 and "over 1024 KiB" in bad[0].error
    with open(path, "ab") as f:
        f.write(b"x" * 100 + b"\n")
    w2 = EventWriter(path, "s1")
    w2.emit("heartbeat", remaining_s=5.0, active_s=5.0, procs=0)
    events, bad = tail.read_events(max_bytes=1 << 20)
    assert [e.seq for e in events] == [2] and bad == []  # the long line ends; reading goes on after it
