"""A sealed split's answers teach nothing a model can carry (issue 47, part 3; INTEGRITY.md V9), in
real t0 sessions of hostile command agents (tests/integrity/hostile_boost.py):

- a boosting attack spends the session's answers on one-item changes and groups of ten, keeps what
  the answers rewarded and carries it in a lookup: the official number (the private part's, which
  no answer touched) gains nothing beyond its noise, and the session is flagged (``answer_probing``);
- an agent that looks for the public and private parts' rows (the session's secret, the parts'
  folders, the harness's files) finds none of them, and its own answer is a public one."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from runner.integrity import canaries
from runner.integrity.split_parts import PRIVATE, PUBLIC
from runner.sandbox.bwrap import status
from runner.scoring.scorer import TaskJudge
from tasks import get_task
from tests.helpers import ROOMY_BUDGET_S, checks_of, start_session, wait_event
from tests.integrity import hostile_boost

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not status().ok, reason=f"no sandbox here: {status().detail}")]

AGENT = Path(hostile_boost.__file__)
CAP = 60


def attack(home: Path, sid: str, mode: str):
    paths = start_session(home, sid, agent="command", budget_s=ROOMY_BUDGET_S, scored_split="sealed",
                          sealed_answers=CAP, command=[sys.executable, str(AGENT), mode])
    ended = wait_event(paths, "session_ended", timeout=ROOMY_BUDGET_S + 120)
    assert ended["reason"] == "completed", ended
    return paths, json.loads((paths.workspace / "report.json").read_text()), json.loads(paths.result.read_text())


def session_judge(home: Path, paths) -> TaskJudge:
    """The session's own parts, as its runner cut them (its secret, its folders)."""
    judge = TaskJudge(get_task("t0"), home / "data" / "t0_demo",
                      secret=canaries.session_secret(paths.root, canaries.PASSES_KEY_FILE))
    judge.cut(paths.root / "scoring" / "parts")
    return judge


def test_a_boosting_attack_gains_nothing_on_the_official_number_and_is_flagged(home: Path) -> None:
    paths, report, result = attack(home, "boost", "boost")
    assert report["answers"] == CAP and "spent" in report["spent"], report
    judge = session_judge(home, paths)

    def figure(predictions: list[int], name: str) -> float:
        part = judge.part(name)
        return judge.judge(np.asarray(predictions)[part.rows], "val", part)[0]

    base, final = figure(report["base"], PRIVATE), figure(report["final"], PRIVATE)
    se = result["parts"]["gap"]["private_se"]
    # the official number is the boosted model's private part's: no better than the weak model's beyond its noise
    assert result["checkpoint"] == "boosted-1" and result["value"] == final, result
    assert final <= base + 2 * se, (base, final, se)
    # one-item changes never beat the Ladder's step; what a group carried is the public part's alone
    assert figure(report["final"], PUBLIC) - figure(report["base"], PUBLIC) <= 0.01 * report["new_values"] + 1e-9
    # flagged in result.json, on the official checkpoint's event, and in the store's count
    assert ("answer_probing", "look") in checks_of(result), result["verdicts"]
    events = [json.loads(line) for line in paths.events.read_text().splitlines()]
    official = [e for e in events if e["type"] == "checkpoint_scored" and e["official"]]
    assert official and all(("answer_probing", "look") in checks_of(e) for e in official), official
    assert official[-1]["part"] == "private" and official[-1]["whole"] is not None
    assert result["answers"]["probes"]["fresh_rows"] >= 15, result["answers"]


def test_an_agent_that_looks_for_the_parts_rows_finds_none(home: Path) -> None:
    paths, report, result = attack(home, "ids", "ids")
    assert all(str(v).startswith("refused") for v in report["secrets"].values()), report["secrets"]
    assert set(report["env"]) <= {"ONEGC_DEADLINE", "ONEGC_SESSION", "ONEGC_SEALED_SPLIT", "ONEGC_SEALED_REQUESTS",
                                  "ONEGC_SEALED_ANSWERS", "ONEGC_SEALED_HANDS"}, report["env"]
    assert all(Path(p).suffix == ".json" for p in report["answers_folder"]), report["answers_folder"]
    answer = report["answer"]
    assert answer["part"] == "public" and answer["n"] == 450 and answer["new"] is True, answer
    parts = (paths.root / "scoring" / "parts").is_dir()
    assert parts and result["parts"]["private"] == result["value"]  # the harness's own, outside the sandbox
