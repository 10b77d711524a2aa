"""The events' hash chain (runner/wire/chain.py): the one writer links every line to the one before,
and a scan names the first line that does not follow."""

import json

from runner.wire import chain
from runner.wire.jsonl import EventWriter


def _log(path, n=5, session="s"):
    w = EventWriter(path, session, clock=lambda: 100.0)
    for i in range(n):
        w.emit("warning", code="x", message=f"line {i}")
    w.close()
    return w


def test_every_line_carries_the_link_of_the_line_before(tmp_path):
    path = tmp_path / "events.jsonl"
    w = _log(path)
    lines = path.read_bytes().splitlines()
    assert json.loads(lines[0])["prev"] == chain.genesis("s")
    for before, line in zip(lines, lines[1:], strict=False):
        assert json.loads(line)["prev"] == chain.link(before)
    scan = chain.scan(path, "s")
    assert (scan.lines, scan.chained, scan.first_break, scan.head) == (5, True, None, chain.link(lines[-1]))
    assert (w.written_lines, w.written_head) == (5, scan.head)


def test_a_writer_reopened_continues_the_chain(tmp_path):
    path = tmp_path / "events.jsonl"
    _log(path, 2)
    w = _log(path, 2)
    assert chain.scan(path, "s").first_break is None and w.written_lines == 4


def test_an_edited_dropped_swapped_or_inserted_line_breaks_the_chain_where_it_happens(tmp_path):
    path = tmp_path / "events.jsonl"
    _log(path)
    good = path.read_bytes().splitlines()

    def broken(lines):
        path.write_bytes(b"\n".join(lines) + b"\n")
        return chain.scan(path, "s").first_break

    assert broken([good[0], good[1].replace(b"line 1", b"line 9"), *good[2:]]) == 3
    assert broken([good[0], good[2], *good[3:]]) == 2
    assert broken([good[0], good[2], good[1], *good[3:]]) == 2
    assert broken([good[0], b'{"v":1,"session_id":"s","seq":9,"ts":1,"type":"heartbeat"}', *good[1:]]) == 2
    assert broken(good) is None


def test_a_log_of_another_session_breaks_at_its_first_line(tmp_path):
    path = tmp_path / "events.jsonl"
    _log(path, session="other")
    scan = chain.scan(path, "s")
    assert scan.first_break == 1 and "another session" in scan.why


def test_a_record_from_before_the_chain_reads_as_unchained(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_text('{"v":1,"session_id":"s","seq":1,"ts":1.0,"type":"heartbeat","remaining_s":1,"active_s":0}\n')
    scan = chain.scan(path, "s")
    assert not scan.chained and scan.first_break is None and scan.lines == 1
