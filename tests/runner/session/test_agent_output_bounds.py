"""The agent's output in bounded memory (issue 38 part 2): a stdout line longer than
``LINE_LIMIT`` is parsed from its head and recorded as cut; the raw file keeps every byte."""

from __future__ import annotations

import io
import json

from runner.agents import get_adapter
from runner.session.agent_output import STDERR_LINE_CHARS, AgentOutput
from runner.session.cost_limit import CostMeter
from runner.session.stall import StallWatch
from runner.wire.jsonl import EventWriter
from runner.wire.lines import LINE_LIMIT
from runner.wire.paths import SessionPaths


def output(tmp_path, agent="claude-code"):
    paths = SessionPaths(tmp_path / "s1")
    paths.root.mkdir()
    events = EventWriter(paths.events, "s1")
    return paths, events, AgentOutput(get_adapter(agent), paths, events, StallWatch(3600), CostMeter(None),
                                      lambda exc: None)


def test_a_line_over_the_bound_is_cut_recorded_and_kept_whole_on_disk(tmp_path):
    paths, events, out = output(tmp_path)
    huge = b'{"type": "assistant", "text": "' + b"\xff" * (LINE_LIMIT + 12345) + b'"}\n'
    ok = json.dumps({"type": "system", "subtype": "init", "model": "m"}).encode() + b"\n"
    out.pump_stdout(io.BufferedReader(io.BytesIO(ok + huge + ok)))
    events.close()
    assert paths.agent_stdout.read_bytes() == ok + huge + ok
    record = [json.loads(line) for line in paths.events.read_text().splitlines()]
    cut = [e for e in record if e["type"] == "warning" and e["code"] == "line_cut"]
    assert len(cut) == 1 and f"has {len(huge)} bytes" in cut[0]["message"] and "line 2 " in cut[0]["message"]
    raw = [e for e in record if e["type"] == "transcript" and e.get("raw_line") == 2]
    assert raw and all(len(e["text"]) <= 4100 for e in raw)  # clipped (runner.wire.events.clip)
    assert any(e.get("raw_line") == 3 for e in record if e["type"] == "transcript")  # the next line still read


def test_the_stderr_tail_is_bounded_per_line(tmp_path):
    paths, events, out = output(tmp_path, "command")
    data = b"e" * (3 * LINE_LIMIT) + b"\nlast \xff line\n"
    out.pump_stderr(io.BufferedReader(io.BytesIO(data)))
    events.close()
    first, last = out.stderr_tail
    assert len(first) <= STDERR_LINE_CHARS and first.startswith("e" * 1900) and "… [+" in first
    assert last == "last \ufffd line"
    assert paths.agent_stderr.read_bytes() == data


def test_a_cut_line_reaches_a_capped_raw_file_whole_or_closed(tmp_path):
    """The raw copy keeps whole lines: a long line's pieces go where its head went, and a cap reached
    inside a line closes it (runner/wire/jsonl.py RawLog, runner/wire/record_caps.py)."""
    from runner.wire.jsonl import RawLog
    from runner.wire.lines import bounded_lines
    from runner.wire.record_caps import StreamCap

    data = b"short\n" + b"x" * 5000 + b"\n" + b"y" * 3000 + b"\nlast\n"
    for cap_bytes, want in ((100, b"short\nlast\n"),  # the long lines left out whole
                            (2000, b"short\n" + b"x" * 1000 + b"\nlast\n"),  # the cap reached inside x: closed
                            (10_000, data)):  # room for all
        path = tmp_path / f"raw{cap_bytes}"
        log = RawLog(path, None, StreamCap("stdout", cap_bytes))
        heads = [head for head, _ in bounded_lines(io.BufferedReader(io.BytesIO(data)), log.write, 1000)]
        log.close()
        assert len(heads) == 4 and path.read_bytes() == want, cap_bytes
