"""Sealed scoring (../shared/INTEGRITY.md S1-S7): a run script's import-time code attacks the scorer. Each
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
from tests.helpers import REPO, events, start_session, verdicts_of, wait_event, wait_for
from tests.integrity import hostile_scoring

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not status().ok, reason=f"no sandbox here: {status().detail}")]

AGENT = Path(hostile_scoring.__file__)


# each verdict as the scorer's flags read before they were typed: the child's word labelled, what the
# worker saw as it is, a replacement read from outside as "code replaces …", strengths asserted
_AS_TEXT = {"child_report": ("note", "self-reported: "), "scorer_observed": ("note", ""),
            "evaluator_replaced": ("disqualifies", ""), "code_unscanned": ("look", "unscanned: ")}


def said(event: dict) -> list[str]:
    out = []
    for v in verdicts_of(event):
        if v.check == "invalid_answer":
            out.append("invalid_answer")
            continue
        if v.check not in _AS_TEXT:  # another check's finding (the canaries on a NaN answer): by its name
            out.append(f"{v.check}: {v.evidence}")
            continue
        strength, prefix = _AS_TEXT[v.check]
        assert v.strength == strength, v
        out.append(prefix + v.evidence.removeprefix("the "))
    return out


def start_attack(home: Path, sid: str, attack: str, *extra: str, budget_s: float = 120):
    return start_session(home, sid, agent="command", budget_s=budget_s,
                         command=[sys.executable, str(AGENT), attack, str(home / "runs" / sid), *extra])


def run_attack(home: Path, sid: str, attack: str, *extra: str, budget_s: float = 120, wait_s: float = 200):
    return attack_outcome(start_attack(home, sid, attack, *extra, budget_s=budget_s), wait_s)


def attack_outcome(paths, wait_s: float = 200):
    ended = wait_event(paths, "session_ended", timeout=wait_s)
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
    assert any(f.startswith("self-reported: changed prepare: ") and "judge" in f for f in said(live["monkeypatch-1"]))
    assert any(f.startswith("self-reported: changed onegc_kit: ") for f in said(live["monkeypatch-1"]))
    assert "code replaces prepare: evaluate, judge" in said(live["monkeypatch-1"])  # read from outside
    assert_scored_as_its_weights(paths, live, official, "honest-1", tmp_path)
    assert said(live["honest-1"]) == []
    assert json.loads(paths.result.read_text())["value"] == ended["score"] != 1.0


def test_s2_fake_result_lines_on_stdout_and_from_atexit_are_ignored_and_flagged(home, tmp_path):
    paths, ended, live, official = run_attack(home, "s2", "fake_lines")
    assert_scored_as_its_weights(paths, live, official, "fake_lines-1", tmp_path)
    flags = said(live["fake_lines-1"])
    assert "self-reported: registered atexit handlers" in flags and "wrote to stdout" in flags, flags
    assert_scored_as_its_weights(paths, live, official, "honest-1", tmp_path)


def test_s3_a_poisoned_checkpoint_cannot_reach_the_next_one(home, tmp_path):
    paths, ended, live, official = run_attack(home, "s3", "poison")
    assert live["poison-1"]["value"] is not None  # its own predict() was replaced: its own score spoilt
    assert any(f.startswith("self-reported: changed prepare: predict") for f in said(live["poison-1"]))
    assert "code replaces prepare: predict" in said(live["poison-1"])
    assert_scored_as_its_weights(paths, live, official, "honest-1", tmp_path)  # scored after it, clean
    assert said(live["honest-1"]) == []


def test_s4_a_process_forked_by_the_scorer_dies_with_it_and_never_touches_the_record(home, tmp_path):
    paths = start_attack(home, "s4", "daemon")

    def daemons() -> list[psutil.Process]:  # this session's (its folder is on their command line), not another suite's
        return [p for p in psutil.process_iter(["cmdline"])
                if "run_daemon" in (line := " ".join(p.info["cmdline"] or [])) and str(paths.root) in line]
    wait_for(daemons, 120, "the agent's run to fork its daemon")  # the agent's own run forks one too
    paths, ended, live, official = attack_outcome(paths)
    assert_scored_as_its_weights(paths, live, official, "daemon-1", tmp_path)
    assert any(f.startswith("self-reported: started a process") for f in said(live["daemon-1"]))
    assert any(f.startswith("self-reported: left ") and "processes running" in f for f in said(live["daemon-1"]))
    time.sleep(2)  # the daemon would write every 0.1 s
    # SIGKILLed with the agent's tree before the official phase began; on a loaded machine a killed
    # process can take a moment to be gone
    wait_for(lambda: not daemons(), 60, "the agent's forked daemon to be gone")
    assert not paths.control.exists() or "evil" not in paths.control.read_text()
    assert not any(e["type"] == "budget" and e["state"] == "paused" for e in events(paths))
    result = json.loads(paths.result.read_text())
    assert result["value"] == ended["score"] and "1.0}" not in paths.result.read_text().replace(" ", "")[-8:]


def test_s5_killing_the_scorer_fails_only_that_checkpoint(home, tmp_path):
    paths, ended, live, official = run_attack(home, "s5", "kill_scorer")
    assert ended["reason"] == "completed"  # not a harness error a study would retry
    # as PID 1 of its own namespace it cannot even kill itself; nothing outside is in reach
    assert_scored_as_its_weights(paths, live, official, "kill_scorer-1", tmp_path)
    assert any(f.startswith("self-reported: sent a signal") for f in said(live["kill_scorer-1"]))
    assert_scored_as_its_weights(paths, live, official, "honest-1", tmp_path)


def test_an_honest_print_at_the_top_of_a_script_still_scores(home, tmp_path):
    paths, ended, live, official = run_attack(home, "p1", "print")
    assert_scored_as_its_weights(paths, live, official, "print-1", tmp_path)
    assert said(live["print-1"]) == ["wrote to stdout"]  # noted, not held against it


def test_an_official_checkpoint_whose_code_replaced_the_evaluator_is_disqualified(home, tmp_path):
    from onegc_tui.store import Store
    from onegc_tui.store.ingest import Ingester

    paths, ended, live, official = run_attack(home, "dq", "monkeypatch", "--alone")
    assert_scored_as_its_weights(paths, live, official, "monkeypatch-1", tmp_path)  # the score is still its own
    result = json.loads(paths.result.read_text())
    assert result["checkpoint"] == "monkeypatch-1"
    assert "the code replaces prepare: evaluate, judge" in result["disqualified"]
    assert any(v["check"] == "evaluator_replaced" and v["strength"] == "disqualifies" for v in result["verdicts"])
    store = Store.open(home)
    Ingester(home, store).ingest_all()
    assert store.session("dq")["disqualified"].startswith("the official checkpoint: the code replaces prepare")
    store.close()


def test_a_silenced_flag_recorder_is_harmless_and_the_code_read_from_outside_still_disqualifies(home, tmp_path):
    """Issue 28: the checkpoint's code switches the child's recorder off, then replaces the judge
    and the evaluator. The child reports nothing; the score is still its weights' (the runner
    judges), and the runner's own reading of the frozen code disqualifies it."""
    paths, ended, live, official = run_attack(home, "silenced", "silenced", "--alone")
    assert_scored_as_its_weights(paths, live, official, "silenced-1", tmp_path)
    flags = said(live["silenced-1"])
    assert not [f for f in flags if f.startswith("self-reported: changed")], flags  # the recorder was off
    assert "code replaces prepare: evaluate, judge" in flags
    result = json.loads(paths.result.read_text())
    assert result["checkpoint"] == "silenced-1" and ended["reason"] == "completed"
    assert "the code replaces prepare: evaluate, judge" in result["disqualified"]


FORGED_INVALID = {  # attack: a part of the error it must give
    "empty_part": "not an .npy", "huge_header": "claims 8796093022208", "no_split": "nothing else",
    "text_size": "not a byte count", "parts_not_list": "not a list", "object_dtype": "object",
    "structured_dtype": "structured",
    # two parts where one was asked for: refused, unread where they pass the size bound (the
    # session's canary probe widens what the child may answer), else by the part check
    "duplicate_part": ("more than the predictions asked for can be", "two parts for"),
    "extra_part": ("more than the predictions", "which was not asked for"),
    "second_answer": "more than one answer", "close_pipe": "the evaluation died (exit 0)",
    "flood": "more than the task's predictions can be",  # stopped by the worker before it was whole
}


def test_forged_answers_fail_only_their_own_checkpoint_and_the_session_goes_on(home, tmp_path):
    """Issue 28: the checkpoint's code writes its own answer on the child's answer pipe. Each
    malformed answer is that checkpoint's error with the trusted ``invalid_answer`` flag, live and
    in the official phase; NaN predictions are the task's error; a well-formed answer is just
    predictions; the honest checkpoint after them is scored, and the session ends in order."""
    attacks = [*FORGED_INVALID, "nan", "forged_zeros", "hang"]
    # the hanging one takes the task's eval timeout (t0: 20 s) live and again in the official phase
    paths, ended, live, official = run_attack(home, "forged", ",".join(attacks), budget_s=240, wait_s=420)
    assert ended["reason"] == "completed", ended  # never a harness error a study would retry
    result = json.loads(paths.result.read_text())
    assert result["checkpoint"] in ("honest-1", "forged_zeros-1") and result["value"] == ended["score"] is not None
    assert_scored_as_its_weights(paths, live, official, "honest-1", tmp_path)
    # on a loaded machine the live scorer falls behind these quick saves and thins its backlog (the
    # newest of each 5-minute window is kept: runner/scoring/checkpoints.py): such a checkpoint is
    # only ever "not scored live", never scored, and the official phase judges it all the same
    thinned = {name for name, e in live.items() if e.get("error", "").startswith("not scored live: ")}
    assert all(live[n].get("value") is None for n in thinned)
    for attack, says in FORGED_INVALID.items():
        for phase in (live, official):
            e = phase[f"{attack}-1"]
            if phase is live and f"{attack}-1" in thinned:
                continue
            parts = (says,) if isinstance(says, str) else says
            assert e.get("value") is None and any(s in e.get("error", "") for s in parts), (attack, e)
            assert "invalid_answer" in said(e), (attack, e)
    for phase in (live, official):
        if phase is live and {"nan-1", "forged_zeros-1"} & thinned:
            continue
        assert "must be" in phase["nan-1"]["error"] and "invalid_answer" not in said(phase["nan-1"])
        assert phase["forged_zeros-1"].get("value") is not None
        assert "invalid_answer" not in said(phase["forged_zeros-1"])
    hang = official["hang-1"]
    assert hang.get("value") is None and "timed out" in hang["error"]
    assert "timed out" in said(hang) and "invalid_answer" in said(hang)
    runner_log = (paths.root / "runner.log").read_text() if (paths.root / "runner.log").exists() else ""
    assert "Traceback" not in runner_log, runner_log[-2000:]
