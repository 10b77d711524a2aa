"""Sealed scoring (../shared/INTEGRITY.md S1-S5): a run script's import-time code attacks the scorer. Each
test is a real session of the command agent (``hostile_scoring.py``) and asserts that the
attacking checkpoint gets exactly the score its weights earn (computed here with a clean copy of
its script), that the honest checkpoint after it is untouched, that the record is the runner's,
and that the attack is flagged."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from runner.sandbox.bwrap import status
from tests.conftest import REPO, events, start_session, wait_event
from tests.integrity import hostile_scoring

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not status().ok, reason=f"no sandbox here: {status().detail}")]

AGENT = Path(hostile_scoring.__file__)


def run_attack(home: Path, sid: str, attack: str, *extra: str):
    paths = start_session(home, sid, agent="command", budget_s=120,
                          command=[sys.executable, str(AGENT), attack, str(home / "runs" / sid), *extra])
    ended = wait_event(paths, "session_ended", timeout=200)
    live = {e["name"]: e for e in events(paths) if e["type"] == "checkpoint_scored" and not e["official"]}
    official = {e["name"]: e for e in events(paths) if e["type"] == "checkpoint_scored" and e["official"]}
    return paths, ended, live, official


def clean_score(paths, label: str, tmp_path: Path) -> float:
    """What the checkpoint's weights score with an honest copy of its script, in a fresh process."""
    snap = paths.snapshots / label
    code = tmp_path / f"clean-{label}"
    code.mkdir()
    name = label.rsplit("-", 1)[0]
    (code / f"run_{name}.py").write_text(hostile_scoring.HEAD + hostile_scoring.MAIN.format(seed=0, name=name))
    (code / "train.py").write_text((snap / "train.py").read_text())
    out = subprocess.run([sys.executable, str(REPO / "tasks/t0_demo/prepare.py"), "--eval", str(snap / "checkpoint.pt"),
                          "--code", str(code), "--data-dir", str(paths.root.parent.parent / "data/t0_demo"),
                          "--device", "cpu"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["value"]


def assert_scored_as_its_weights(paths, live, official, label, tmp_path):
    want = clean_score(paths, label, tmp_path)
    assert live[label]["value"] == pytest.approx(want, abs=1e-9), live[label]
    if label in official:
        assert official[label]["value"] == pytest.approx(want, abs=1e-9), official[label]
    return want


def test_s1_replacing_the_evaluator_at_import_changes_nothing_and_is_flagged(home, tmp_path):
    paths, ended, live, official = run_attack(home, "s1", "monkeypatch")
    value = assert_scored_as_its_weights(paths, live, official, "monkeypatch-1", tmp_path)
    assert value < 0.9  # an untrained net on three spirals, not the forged 1.0
    assert any(f.startswith("changed prepare: ") and "judge" in f for f in live["monkeypatch-1"]["flags"])
    assert any(f.startswith("changed onegc_kit: ") for f in live["monkeypatch-1"]["flags"])
    assert_scored_as_its_weights(paths, live, official, "honest-1", tmp_path)
    assert live["honest-1"]["flags"] == []
    assert json.loads(paths.result.read_text())["value"] == ended["score"] != 1.0


def test_s2_fake_result_lines_on_stdout_and_from_atexit_are_ignored_and_flagged(home, tmp_path):
    paths, ended, live, official = run_attack(home, "s2", "fake_lines")
    assert_scored_as_its_weights(paths, live, official, "fake_lines-1", tmp_path)
    flags = live["fake_lines-1"]["flags"]
    assert "registered atexit handlers" in flags and "wrote to stdout" in flags, flags
    assert_scored_as_its_weights(paths, live, official, "honest-1", tmp_path)


def test_s3_a_poisoned_checkpoint_cannot_reach_the_next_one(home, tmp_path):
    paths, ended, live, official = run_attack(home, "s3", "poison")
    assert live["poison-1"]["value"] is not None  # its own predict() was replaced: its own score spoilt
    assert any(f.startswith("changed prepare: predict") for f in live["poison-1"]["flags"])
    assert_scored_as_its_weights(paths, live, official, "honest-1", tmp_path)  # scored after it, clean
    assert live["honest-1"]["flags"] == []


def test_s4_a_process_forked_by_the_scorer_dies_with_it_and_never_touches_the_record(home, tmp_path):
    paths, ended, live, official = run_attack(home, "s4", "daemon")
    assert_scored_as_its_weights(paths, live, official, "daemon-1", tmp_path)
    assert any(f.startswith("started a process") for f in live["daemon-1"]["flags"])
    assert any(f.startswith("left ") and "processes running" in f for f in live["daemon-1"]["flags"])
    time.sleep(2)  # the daemon would write every 0.1 s
    assert not [p for p in psutil.process_iter(["cmdline"]) if "run_daemon" in " ".join(p.info["cmdline"] or [])]
    assert not paths.control.exists() or "evil" not in paths.control.read_text()
    assert not any(e["type"] == "budget" and e["state"] == "paused" for e in events(paths))
    result = json.loads(paths.result.read_text())
    assert result["value"] == ended["score"] and "1.0}" not in paths.result.read_text().replace(" ", "")[-8:]


def test_s5_killing_the_scorer_fails_only_that_checkpoint(home, tmp_path):
    paths, ended, live, official = run_attack(home, "s5", "kill_scorer")
    assert ended["reason"] == "completed"  # not a harness error a study would retry
    # as PID 1 of its own namespace it cannot even kill itself; nothing outside is in reach
    assert_scored_as_its_weights(paths, live, official, "kill_scorer-1", tmp_path)
    assert any(f.startswith("sent a signal") for f in live["kill_scorer-1"]["flags"])
    assert_scored_as_its_weights(paths, live, official, "honest-1", tmp_path)


def test_an_honest_print_at_the_top_of_a_script_still_scores(home, tmp_path):
    paths, ended, live, official = run_attack(home, "p1", "print")
    assert_scored_as_its_weights(paths, live, official, "print-1", tmp_path)
    assert live["print-1"]["flags"] == ["wrote to stdout"]  # noted, not held against it


def test_an_official_checkpoint_whose_code_replaced_the_evaluator_is_disqualified(home, tmp_path):
    from onegc_tui.store import Store
    from onegc_tui.store.ingest import Ingester

    paths, ended, live, official = run_attack(home, "dq", "monkeypatch", "--alone")
    assert_scored_as_its_weights(paths, live, official, "monkeypatch-1", tmp_path)  # the score is still its own
    result = json.loads(paths.result.read_text())
    assert result["checkpoint"] == "monkeypatch-1"
    assert "replaced the evaluation (prepare.evaluate, judge)" in result["disqualified"]
    store = Store.open(home)
    Ingester(home, store).ingest_all()
    assert store.session("dq")["disqualified"].startswith("the official checkpoint's code replaced the evaluation")
    store.close()
