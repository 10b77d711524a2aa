"""Real sessions of a hostile command agent (tests/integrity/hostile_causal.py) against the rules
V3 and V5 (INTEGRITY.md): a T1 model that reads the next character of its input, a checkpoint saved
in the grace period by an agent that ignores SIGINT and SIGTERM. Neither is the official result;
each is recorded with its trusted flag in result.json, the events and ``onegc sessions``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from runner.sandbox.bwrap import status
from tests.helpers import checks_of, evidence_of, start_session, wait_event
from tests.integrity import causal_models, hostile_causal

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not status().ok, reason=f"no sandbox here: {status().detail}")]

AGENT = Path(hostile_causal.__file__)
MODELS = str(Path(causal_models.__file__))
from tests.tasks.conftest import SHARED_DATA  # noqa: E402  (one place finds the offline copies)


def sessions_json(home: Path) -> list[dict]:
    from onegc_tui.cli.main import main

    out = CliRunner().invoke(main, ["sessions", "--json"], env={"ONEGC_HOME": str(home)})
    assert out.exit_code == 0, out.output
    return json.loads(out.output)


def test_a_t1_model_that_reads_ahead_is_never_official_and_every_view_says_why(home):
    if not (SHARED_DATA / "tinyshakespeare").is_dir():
        pytest.skip(f"offline dataset copies not found at {SHARED_DATA}")
    causal_models.prepare("t1_shakespeare", home / "data" / "t1_shakespeare", SHARED_DATA / "tinyshakespeare")
    paths = start_session(home, "ahead", task="t1", agent="command", budget_s=300,
                          command=[sys.executable, str(AGENT), "reads_ahead", MODELS])
    wait_event(paths, "session_ended", timeout=600)
    result = json.loads(paths.result.read_text())
    assert result["checkpoint"].startswith("honest") and result["value"] > 4, result
    rows = {r["checkpoint"].split("-")[0]: r for r in result["evaluated"]}
    assert rows["next"]["official"] is None and rows["next"]["error"].startswith("reads ahead: ")
    assert ("reads_ahead", "disqualifies") in checks_of(rows["next"])
    assert rows["next"]["error"] == "reads ahead: " + evidence_of(rows["next"], "reads_ahead")[0]
    assert not {c for c, _ in checks_of(rows["honest"])} & {"reads_ahead", "causality_unchecked"}
    (row,) = [r for r in sessions_json(home) if r["session_id"] == "ahead"]
    assert row["flagged"] >= 1 and row["score"] == result["value"]
    assert row["best_live"] > 4  # its live score is probed too: the reader's 0.02 bpb is nowhere


def test_a_checkpoint_saved_in_the_grace_period_is_recorded_labelled_and_left_out(home):
    paths = start_session(home, "grace", agent="command", budget_s=20, grace_s=90,
                          command=[sys.executable, str(AGENT), "grace", MODELS])
    wait_event(paths, "session_ended", timeout=300)
    result = json.loads(paths.result.read_text())
    rows = {r["checkpoint"].split("-")[0]: r for r in result["evaluated"]}
    assert result["checkpoint"].startswith("in_budget"), result
    late = rows["in_grace"]
    assert late["official"] is None and late["error"].startswith("after the budget: saved")
    assert ("after_budget", "disqualifies") in checks_of(late) and late["budget_elapsed_s"] > 20
    (row,) = [r for r in sessions_json(home) if r["session_id"] == "grace"]
    assert row["flagged"] >= 1
