"""R1 (issue 38): bytes and types the runner does not expect fail one item, never the runner. Each
test is a real session of ``hostile_bytes.py``: the honest checkpoint before the attack and the one
after it are scored, the session ends in order (``session_ended``, ``result.json``), and the
attack's own item carries the harness's reason."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOMY_BUDGET_S, events, start_session, wait_event
from tests.integrity import hostile_bytes

pytestmark = pytest.mark.slow

AGENT = Path(hostile_bytes.__file__)


def run_attack(home: Path, attack: str) -> tuple[object, dict, list[dict]]:
    paths = start_session(home, attack.replace("_", "-"), agent="command", budget_s=ROOMY_BUDGET_S,
                          command=[sys.executable, str(AGENT), attack])
    ended = wait_event(paths, "session_ended", timeout=240)
    record = events(paths)
    assert ended["reason"] == "completed", ended  # the agent's bytes are no harness error
    result = json.loads(paths.result.read_text())
    assert result["value"] == ended["score"] is not None
    scored = {e["name"]: e for e in record if e["type"] == "checkpoint_scored" and not e["official"]}
    assert scored["first-1"]["value"] is not None and scored["after-1"]["value"] is not None, scored
    return paths, ended, record


def test_a_checkpoint_named_with_invalid_utf8_is_skipped_with_a_reason(home):
    _, _, record = run_attack(home, "bad_name")
    warnings = [e["message"] for e in record if e["type"] == "warning"]
    assert any("not valid UTF-8" in m and "skipped" in m for m in warnings), warnings
    assert not any("bad" in e["name"] for e in record if e["type"] == "checkpoint_found")


def test_an_argument_that_is_not_utf8_is_recorded_with_replacement_characters(home):
    _, _, record = run_attack(home, "bad_argv")
    launched = [e for e in record if e["type"] == "process" and e["script"] == "run_argv.py"]
    assert launched and "\ufffd" in launched[0]["cmdline"], launched


def test_a_checkpoint_whose_script_is_an_integer_fails_that_checkpoint_only(home):
    _, _, record = run_attack(home, "int_script")
    found = next(e for e in record if e["type"] == "checkpoint_found" and e["name"] == "int_script-1")
    assert "script" not in found  # not text: left out, never str()'d into a name
    scored = next(e for e in record if e["type"] == "checkpoint_scored" and e["name"] == "int_script-1")
    assert scored.get("value") is None and scored["error"], scored


def test_a_lone_surrogate_in_the_scorer_childs_exception_is_replaced(home):
    _, _, record = run_attack(home, "surrogate_error")
    scored = next(e for e in record if e["type"] == "checkpoint_scored" and e["name"] == "surrogate-1")
    assert scored.get("value") is None and "model broke: \ufffd \ufffd end" in scored["error"], scored


def test_a_stdout_line_over_the_bound_is_cut_recorded_and_kept_whole(home):
    paths, _, record = run_attack(home, "long_line")
    cut = [e for e in record if e["type"] == "warning" and e["code"] == "line_cut"]
    assert len(cut) == 1 and f"{(12 << 20) + 29} bytes" in cut[0]["message"], cut
    raw = paths.agent_stdout.read_bytes()
    assert not raw or raw.endswith(b"\n")  # whole lines only
    if len(raw) < 12 << 20:  # past the raw file's cap (docs/floods.md): left out, and counted
        assert any(e["type"] == "truncated" and e["stream"] == "stdout" and e["dropped_bytes"] for e in record)
