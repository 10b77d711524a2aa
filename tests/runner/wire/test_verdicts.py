"""Typed verdicts (runner/wire/verdicts.py): one shape everywhere, decided by strength, never by wording."""

from __future__ import annotations

import json

import pytest

from runner.integrity.checks import CHECKS, verdict
from runner.wire import verdicts
from runner.wire.events import EVENT_TYPES, dump_event, parse_event


def test_a_verdict_round_trips_through_an_event_and_its_json_record():
    found = verdict("canaries", "disqualifies", "its 9 canaries fit better", "t0_demo", statistic=0.4, p=2e-5)
    assert found.power == dict(CHECKS["canaries"].power["t0_demo"]) and found.false_alarm == 0.0
    event = EVENT_TYPES["checkpoint_scored"](session_id="s", seq=1, ts=1.0, name="a-1", metric="m", split="val",
                                             budget_elapsed_s=1.0, verdicts=[found])
    line = dump_event(event)
    assert "flags" not in json.loads(line)  # new records carry verdicts only
    assert parse_event(line).verdicts == [found]
    assert verdicts.read(json.loads(line)["verdicts"]) == [found]
    assert verdicts.read_json(json.dumps(verdicts.records([found]))) == [found]


def test_the_strength_decides_and_the_wording_never_does():
    looks_like_a_verdict = verdict("child_report", "note", "the scored split is inside the model (disqualifies)")
    struck = verdict("evaluator_replaced", "disqualifies", "the code replaces prepare: judge")
    look = verdict("code_unscanned", "look", "run.py runs code from a string (exec)")
    assert verdicts.disqualifying([looks_like_a_verdict, look]) is None
    assert verdicts.disqualifying([looks_like_a_verdict, look, struck]) is struck
    assert verdicts.strongest([looks_like_a_verdict, look]) == "look" and verdicts.strongest([]) is None
    assert verdicts.flagged([looks_like_a_verdict, look, struck]) == [struck, look]
    assert dict(verdicts.counts([look, look, struck])) == {"disqualifies": 1, "look": 2, "note": 0}


def test_a_record_made_before_typed_verdicts_reads_as_looks_whatever_it_says():
    old = verdicts.read(None, ["code replaces prepare: judge", "wrote to stdout"])
    assert [(v.check, v.strength) for v in old] == [(verdicts.LEGACY, "look")] * 2
    assert verdicts.disqualifying(old) is None  # a legacy text is never a disqualification by itself
    assert verdicts.read_json(None, json.dumps(["x"]))[0].evidence == "x"
    assert verdicts.read_json("not json", "{") == []


@pytest.mark.parametrize("bad", [
    {"check": "canaries", "strength": "fatal", "evidence": "x"},  # no such strength
    {"check": "canaries", "strength": "look", "evidence": "x" * 10_000},  # unbounded evidence
    {"check": "canaries", "strength": "look", "evidence": "x", "p": "0.1"},  # a string where a number belongs
    {"check": "canaries", "strength": "look", "evidence": "x", "p": float("nan")},
    {"check": "canaries", "strength": "look", "evidence": "x", "power": {"a": True}},
    {"check": "", "strength": "look", "evidence": "x"},
    {"check": "canaries", "strength": "look", "evidence": "x", "extra": 1},  # no other key
    ["canaries", "look", "x"], 7,
])
def test_what_is_not_a_verdict_reads_as_a_legacy_look_never_as_nothing_or_an_exception(bad):
    (got,) = verdicts.read([bad])
    assert got.check == verdicts.LEGACY and got.strength == "look" and len(got.evidence) <= verdicts.EVIDENCE_CHARS


def test_an_event_refuses_a_verdict_with_a_field_it_does_not_know():
    line = dump_event(EVENT_TYPES["checkpoint_scored"](
        session_id="s", seq=1, ts=1.0, name="a", metric="m", split="val", budget_elapsed_s=1.0,
        verdicts=[verdict("after_budget", "disqualifies", "saved late")]))
    with pytest.raises(ValueError):
        parse_event(line.replace('"check"', '"hidden":1,"check"'))
