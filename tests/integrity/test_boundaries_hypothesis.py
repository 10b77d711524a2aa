"""R1/R2 (issue 38), property-based: every boundary function where agent-made data enters the
harness (docs/boundaries.md) is fed hostile bytes and wrong types. Each either returns a typed,
bounded value that can be recorded (encodes as UTF-8, validates as its event) or refuses the one
item with its own exception; none raises anything else."""

from __future__ import annotations

import io
import json
import math
import socket
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onegc_tui.cli.plain import row
from runner.agents import ADAPTERS, get_adapter
from runner.sandbox.execlog import RECORD_LIMIT, UCRED, _launch
from runner.wire import answer_check
from runner.wire.control import ControlRequest, read_request
from runner.wire.end_reasons import harness_failure
from runner.wire.events import parse_event
from runner.wire.jsonl import EventWriter
from runner.wire.lines import bounded_lines
from runner.wire.untrusted import (
    NAME_LIMIT,
    Untrusted,
    clean,
    file_name,
    optional_number,
    optional_text,
    text_list,
    text_of_bytes,
)

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
# strings with what a hostile agent puts in them: lone surrogates (both the surrogateescape kind
# and others), controls, wide characters
hostile_text = st.text(alphabet=st.one_of(st.characters(codec=None, categories=None),
                                          st.sampled_from(["\ud800", "\udcff", "\udfff", "\x1b", "\n", "\r", "漢", "\ufe0f"])),
                       max_size=200)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**80), max_value=2**80) | st.floats() | hostile_text,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(hostile_text, inner, max_size=5), max_leaves=20)


def recordable(s: str) -> bool:
    s.encode("utf-8")  # raises on a lone surrogate
    return True


@SETTINGS
@given(st.binary(max_size=2000), st.integers(min_value=1, max_value=500))
def test_bytes_decode_to_bounded_text(data, limit):
    out = text_of_bytes(data, limit)
    assert recordable(out) and len(out) <= limit


@SETTINGS
@given(hostile_text, st.integers(min_value=0, max_value=300))
def test_clean_leaves_no_surrogate(text, limit):
    out = clean(text, limit)
    assert recordable(out) and len(out) <= limit


@SETTINGS
@given(st.one_of(st.binary(min_size=1, max_size=300), hostile_text.filter(bool)))
def test_file_names_are_text_or_refused(name):
    try:
        out = file_name(name)
    except Untrusted as exc:
        assert recordable(str(exc))
        return
    assert recordable(out) and len(out.encode()) <= NAME_LIMIT


@SETTINGS
@given(json_values)
def test_json_fields_are_typed_or_refused(value):
    for check in (lambda v: optional_text(v, "f", 50), lambda v: optional_number(v, "f"),
                  lambda v: text_list(v, "f", 50, 5)):
        try:
            out = check(value)
        except Untrusted as exc:
            assert recordable(str(exc))
            continue
        if isinstance(out, str):
            assert recordable(out) and len(out) <= 50
        elif isinstance(out, float):
            assert math.isfinite(out)
        elif isinstance(out, tuple):
            assert all(recordable(v) and len(v) <= 50 for v in out) and len(out) <= 5
        else:
            assert out is None


def _cred(pid: int) -> list:
    return [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS, UCRED.pack(pid, 0, 0))]


@SETTINGS
@given(st.one_of(st.binary(max_size=RECORD_LIMIT),
                 json_values.map(lambda v: json.dumps({"argv": v, "cwd": v, "ts": 1.0}).encode()),
                 st.lists(hostile_text, max_size=6).map(lambda a: json.dumps({"argv": a, "cwd": "/w", "ts": 1}).encode())))
def test_a_launch_datagram_is_a_recordable_launch_or_ignored(data):
    launch = _launch(data, _cred(42))
    if launch is None:
        return
    assert launch.pid == 42 and all(recordable(a) for a in launch.argv) and recordable(launch.cwd)
    assert recordable(launch.cmdline) and math.isfinite(launch.ts)


@SETTINGS
@given(json_values, st.integers(min_value=0, max_value=2**40))
def test_a_scorer_answer_is_a_header_or_invalid(message, payload_len):
    for m in (message, {"ok": False, "error": message, "flags": message, "stdout": message, "observed": message},
              {"ok": True, "parts": message, "bytes": message}):
        try:
            answer_check.payload_size(m, 1 << 20)
            header = answer_check.read_header(m, ["val"], payload_len)
        except answer_check.InvalidAnswer as exc:
            assert recordable(str(exc))
            continue
        assert recordable(header.error or "") and recordable(header.stdout)
        assert all(recordable(f) for f in header.self_reported + header.observed)


@SETTINGS
@given(st.one_of(hostile_text, json_values))
def test_error_texts_are_recordable_one_liners(value):
    out = answer_check.text(value, 100)
    assert recordable(out) and len(out) <= 100 and "\n" not in out


@SETTINGS
@given(st.binary(max_size=4000))
def test_an_npy_part_is_an_array_or_invalid(blob):
    try:
        array = answer_check.npy_array(blob)
    except answer_check.InvalidAnswer as exc:
        assert recordable(str(exc))
        return
    assert array.dtype.kind in answer_check.NUMERIC_KINDS and not array.flags.writeable


@SETTINGS
@given(st.lists(st.binary(max_size=300), max_size=20), st.integers(min_value=1, max_value=64))
def test_lines_are_cut_at_the_bound_and_every_byte_reaches_the_raw_file(chunks, limit):
    data = b"".join(chunks)
    raw = bytearray()
    total = 0
    for head, cut in bounded_lines(io.BufferedReader(io.BytesIO(data)), lambda piece, _more: raw.extend(piece), limit):
        assert len(head) <= limit
        total += len(head) + cut
    assert bytes(raw) == data and total == len(data)


@pytest.fixture(scope="module")
def writer(tmp_path_factory):
    folder = tmp_path_factory.mktemp("events")
    w = EventWriter(folder / "events.jsonl", "hx")
    yield w, folder / "events.jsonl"
    w.close()


@SETTINGS
@given(name=st.sampled_from(sorted(ADAPTERS)),
       line=st.one_of(hostile_text, json_values.map(json.dumps),
                      json_values.map(lambda v: json.dumps({"type": "assistant", "message": {"content": v}})),
                      json_values.map(lambda v: json.dumps({"type": "item.completed", "item": v})),
                      json_values.map(lambda v: json.dumps({"type": "text", "part": v}))))
def test_stdout_lines_become_recordable_transcript_events(writer, name, line):
    w, path = writer
    adapter = get_adapter(name)
    try:
        items = adapter.parse(line) + adapter.finish()
    except Exception:  # noqa: BLE001 - the runner turns an adapter's failure into a raw line
        items = []
    for item in items:
        event = w.emit("transcript", raw_line=1, **item.bounded())
        assert event is not None
    last = path.read_bytes().splitlines()[-1] if path.stat().st_size else b""
    if last:
        parse_event(last)


@SETTINGS
@given(json_values)
def test_the_event_writer_never_fails_on_a_surrogate_a_boundary_missed(writer, value):
    w, path = writer
    text = json.dumps(value, ensure_ascii=False)[:300] + "\ud800"
    w.emit("warning", code="x", message=text)
    assert "\ufffd" in parse_event(path.read_bytes().splitlines()[-1]).message


@SETTINGS
@given(st.one_of(json_values, st.fixed_dictionaries({"id": json_values, "action": json_values, "ts": json_values})))
def test_a_control_record_is_a_request_or_one_line_why_not(record):
    req = read_request(record)
    assert isinstance(req, ControlRequest) or (isinstance(req, str) and recordable(req) and "\n" not in req)
    assert read_request({"id": "a1", "action": "pause", "ts": 1.0, "source": "cli@h"}) == \
        ControlRequest(id="a1", action="pause", ts=1.0, source="cli@h")


@SETTINGS
@given(st.one_of(st.none(), st.dictionaries(st.sampled_from(["reason", "detail"]), json_values)), st.booleans())
def test_the_reroll_rule_answers_for_any_end(ended, has_result):
    why = harness_failure(ended, has_result)
    assert why is None or isinstance(why, str)
    if ended is None or not has_result or ended.get("reason") == "harness_error":
        assert why is not None


@SETTINGS
@given(hostile_text, st.integers(min_value=1, max_value=300))
def test_a_plain_row_fits_its_terminal(text, width):
    out = row(f"[00:00:00] s: checkpoint c: ERROR {text}", width)
    assert "\n" not in out and "\x1b" not in out
    assert sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in out) <= width


def test_a_checkpoints_fields_are_typed(tmp_path):
    """The fields runner/scoring/checkpoints.py reads from the agent's own checkpoint file."""
    import torch

    from runner.scoring.checkpoints import _peek

    for script, score, want in (("run.py", 0.5, ("run.py", 0.5)), (12345, "0.9", (None, None)),
                                ("a\udcffb.py", float("nan"), ("a\ufffdb.py", None)), (["x"], 10**400, (None, None)),
                                (None, True, (None, None))):
        path = tmp_path / "c.pt"
        torch.save({"script": script, "score": score, "state_dict": {}, "config": {}}, path)
        assert _peek(path) == want
    torch.save([1, 2], tmp_path / "c.pt")
    assert _peek(tmp_path / "c.pt") == (None, None)
    (tmp_path / "c.pt").write_bytes(b"not torch")
    assert _peek(tmp_path / "c.pt") == (None, None)
