"""The official phase under a flood (issue 46 part 6, INTEGRITY.md R2), each a real T6 session of
the command agent tests/integrity/hostile_flood.py on ETTh1:

- one better checkpoint (``run_best``) among 100 byte-identical copies of a worse one whose model
  sleeps 3 s on its first call, each copy claiming a far better score: before, run_best was never
  scored live nor re-evaluated, the official result was a copy, and the end outlived its bound;
- 12 distinct checkpoints whose model hangs, each claiming the best score: only the phase's
  time bound ends them;
- an honest agent that saves every step: its best checkpoint is not lost to the ten newer, worse ones.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from runner.sandbox.bwrap import status
from runner.scoring.live import LIVE_SCORE_DRAIN_S
from runner.scoring.official import phase_seconds
from runner.scoring.scorer import DEADLINE_MARGIN_S
from tests.helpers import events, slack, start_session, wait_event
from tests.integrity import causal_models, hostile_flood
from tests.tasks.conftest import SHARED_DATA

AGENT = str(Path(hostile_flood.__file__))
MODELS = str(Path(causal_models.__file__))
BUDGET_S = 120  # the session
EVERY_STEP_BUDGET_S = 600  # the agent ends on its own (24 steps with a val figure each: slow on a loaded CPU)
END_MARGIN_S = 30  # closing the scorer, the unofficial figure's bookkeeping, writing the record
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not status().ok, reason=f"no sandbox here: {status().detail}"),
              # the hanging flood waits out the live drain and the phase's bound (180 s) by design: past the
              # suite's 300 s on a loaded machine, within the session's own wait below
              pytest.mark.timeout(900 + EVERY_STEP_BUDGET_S)]


def flood_session(home: Path, attack: str, budget_s: float = BUDGET_S) -> tuple[list[dict], dict, list[dict]]:
    if not (SHARED_DATA / "etth1").is_dir():
        pytest.skip(f"offline dataset copies not found at {SHARED_DATA}")
    causal_models.prepare("t6_etth1", home / "data" / "t6_etth1", SHARED_DATA / "etth1")
    paths = start_session(home, attack, task="t6", agent="command", budget_s=budget_s, grace_s=10,
                          command=[sys.executable, AGENT, attack, MODELS])
    wait_event(paths, "session_ended", timeout=900 + budget_s)
    saved = [json.loads(line) for line in (paths.workspace / "flood.jsonl").read_text().splitlines() if line.strip()]
    return events(paths), json.loads(paths.result.read_text()), saved


def assert_within_the_bound(evs: list[dict], result: dict, budget_s: float = BUDGET_S) -> None:
    """The official phase took at most its stated bound (plus the margin a cut child's answer gets),
    and the session's end came at most the live drain and that bound after the agent's last act."""
    phase = result["official_phase"]
    assert phase["bound_s"] == phase_seconds(budget_s)
    assert phase["took_s"] <= phase["bound_s"] + DEADLINE_MARGIN_S + 5, phase
    agent_gone = max(e["ts"] for e in evs if e["type"] in ("checkpoint_found", "transcript", "process"))
    assert evs[-1]["ts"] - agent_gone <= (LIVE_SCORE_DRAIN_S + phase["bound_s"] + END_MARGIN_S) * slack(), phase


def test_byte_identical_copies_of_a_slow_model_do_not_push_out_the_best_checkpoint(home):
    evs, result, saved = flood_session(home, "copies")
    assert len(saved) == 102  # run_best, slow, and 100 copies of slow
    assert result["checkpoint"] == "run_best-1", result["checkpoint"]  # the official result is not a copy
    live = {e["name"]: e for e in evs if e["type"] == "checkpoint_scored" and not e.get("official")}
    assert live["run_best-1"].get("value") is not None  # scored live
    slow = [e for name, e in live.items() if name.startswith(("slow", "copy"))]
    (itself,) = [e for e in slow if not e.get("same_as")]  # one child for the 101 byte-identical snapshots
    assert len(slow) == 101 and all(e["same_as"] == itself["name"] for e in slow if e is not itself)
    official = [e for e in evs if e["type"] == "checkpoint_scored" and e.get("official")]
    assert len(official) <= 3, [e["name"] for e in official]  # run_best, one of the copies' content, not 18
    left = result["not_reevaluated"]
    assert left["by_bounds"] == 0 and left["count"] == 102 - len(official)
    assert sum(n for why, n in left["by_reason"].items() if "byte-identical" in why) >= 99
    ended = evs[-1]
    assert ended["type"] == "session_ended" and ended["not_reevaluated"] == 0
    assert_within_the_bound(evs, result)


def test_a_flood_of_hanging_models_ends_within_the_phase_bound_and_says_what_it_left(home):
    evs, result, saved = flood_session(home, "distinct")
    assert result["checkpoint"] == "run_best-1", result["checkpoint"]  # the live val-best was evaluated first
    assert result["value"] is not None
    assert_within_the_bound(evs, result)
    left = result["not_reevaluated"]
    assert left["by_bounds"] >= 1  # the hanging ones the bound cut or never started
    assert evs[-1]["not_reevaluated"] == left["by_bounds"]
    from onegc_tui.store import Store
    from onegc_tui.store.ingest import Ingester
    from onegc_tui.views.sessions_view import conditions_note, integrity_note

    store = Store.open(home)
    try:
        Ingester(home, store).ingest_all()
        row = store.session("distinct")
        assert row["not_reevaluated"] == left["by_bounds"]
        note = conditions_note(row) or ""
        assert f"{left['by_bounds']} checkpoint" in note and "not re-evaluated" in note
        assert integrity_note(row)  # the sessions table's ⚠ and the detail screen say it too
    finally:
        store.close()


def test_an_honest_agent_that_saves_every_step_keeps_its_best_checkpoint(home):
    evs, result, steps = flood_session(home, "every_step", budget_s=EVERY_STEP_BUDGET_S)
    assert len(steps) == 24
    best = min(steps, key=lambda s: s["val"])
    assert best["val"] < steps[-1]["val"]  # the newest is not the best: recency would lose it
    assert result["checkpoint"] == f"{best['name']}-1", (result["checkpoint"], best)
    assert result["val"] == pytest.approx(best["val"], rel=1e-5)  # the harness's own figure agrees
    assert_within_the_bound(evs, result, EVERY_STEP_BUDGET_S)
