"""V1, V2 and V8 (../shared/INTEGRITY.md) on real sessions: a command agent (``hostile_canaries.py``)
puts T1's scored split inside its model — counted on val alone, in a final train+val fit, or
carried as a lookup — and the chunks of val held back from its copy disqualify it (it fits the
chunks it was given better than those held back), in result.json, the
store behind ``onegc sessions`` and the history's cell. On t0 an agent that knows the harness
(``hostile_filter.py``) strips from its copy of val every point a tell of the old synthetic
canaries flags, and fits a nearest-neighbour classifier on train and the rest: there is nothing
to strip (every point is real, and every one a canary), and judged on the scores behind its
predictions it is disqualified. The honest
controls are not flagged and their official values are exactly what the pristine evaluator gives
their checkpoints; the demo's scripted baseline likewise. (The fine-tune is measured in
benchmarks/canary_power.py: a count model's one pass over val is its train+val fit.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from runner.integrity.canaries import KEY_FILE
from runner.sandbox.bwrap import status
from tests.helpers import REPO, SHORT_DEMO, start_session, verdicts_of, wait_event
from tests.integrity import hostile_canaries, hostile_filter

SHAKESPEARE = Path("/work/shared/data/tinyshakespeare")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not status().ok, reason=f"no sandbox here: {status().detail}")]
AGENT = Path(hostile_canaries.__file__)
FILTER = Path(hostile_filter.__file__)


@pytest.fixture(scope="module")
def t1_data(tmp_path_factory) -> Path:
    if not (SHAKESPEARE / "input.txt").is_file():
        pytest.skip("TinyShakespeare's input.txt is not here")
    out = tmp_path_factory.mktemp("t1-data") / "t1_shakespeare"
    subprocess.run([sys.executable, str(REPO / "tasks/t1_shakespeare/prepare.py"), "--data-dir", str(out), "--from",
                    str(SHAKESPEARE)], check=True, capture_output=True)
    return out


@pytest.fixture
def t1_home(home: Path, t1_data: Path) -> Path:
    import shutil

    shutil.copytree(t1_data, home / "data" / "t1_shakespeare")
    return home


def run_agent(home: Path, sid: str, mode: str) -> tuple[object, dict]:
    paths = start_session(home, sid, task="t1", agent="command", budget_s=300,
                          command=[sys.executable, str(AGENT), mode])
    wait_event(paths, "session_ended", timeout=600)
    return paths, json.loads(paths.result.read_text())


def pristine_value(home: Path, paths, result: dict, task: str = "t1_shakespeare") -> float:
    """The official checkpoint scored by the pristine evaluator on the pristine data, in a fresh process."""
    name = result["checkpoint"]
    out = subprocess.run([sys.executable, str(REPO / "tasks" / task / "prepare.py"), "--eval",
                          str(paths.snapshots / name / "checkpoint.pt"), "--code", str(paths.snapshots / name),
                          "--data-dir", str(home / "data" / task), "--device", "cpu"],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["value"]


def canary_flags(result: dict) -> list:
    return [v for row in result["evaluated"] for v in verdicts_of(row) if v.check == "canaries"]


def test_an_honest_t1_model_is_not_flagged_and_its_official_value_is_the_pristine_one(t1_home: Path) -> None:
    paths, result = run_agent(t1_home, "honest", "honest")
    assert result["checkpoint"] == "honest-1" and result["disqualified"] is None, result
    assert not canary_flags(result)
    assert result["value"] == pristine_value(t1_home, paths, result)  # bit for bit: canaries never enter it
    row = result["evaluated"][0]
    assert row["canaries"]["level"] == "clean" and (row["canaries"]["canaries"], row["canaries"]["twins"]) == (391, 44)
    # the secret stays in the session folder, out of the workspace and the record
    key = (paths.root / KEY_FILE).read_text().strip()
    for f in [*paths.workspace.rglob("*"), paths.events, paths.result]:
        if f.is_file():
            assert key.encode() not in f.read_bytes(), f
    started = wait_event(paths, "session_started")
    assert started["contract"]["canaries"]["on"] is True


@pytest.mark.parametrize("mode", ["val_only", "train_val", "lookup"])
def test_a_model_holding_the_scored_split_is_disqualified_in_every_record(t1_home: Path, mode: str) -> None:
    from onegc_tui.cli.main import main
    from onegc_tui.results.matrix import build_matrix
    from onegc_tui.store import Store
    from onegc_tui.store.ingest import Ingester
    from onegc_tui.views.monitor_data import outcomes

    sid = mode.replace("_", "-")
    paths, result = run_agent(t1_home, sid, mode)
    assert result["checkpoint"] == f"{mode}-1", result
    assert result["disqualified"] and "the scored split is inside the model" in result["disqualified"]
    assert any(v.strength == "disqualifies" for v in canary_flags(result))
    assert result["value"] == pristine_value(t1_home, paths, result)  # the number is its own; the verdict strikes it
    store = Store.open(t1_home)
    try:
        Ingester(t1_home, store).ingest_all()
        assert store.session(sid)["disqualified"].startswith("the official checkpoint: the scored split is inside the model")
        cell = next(iter(build_matrix([o for o in outcomes(store, include_demo=True) if o.session_id == sid])
                         .rows[0].cells.values()))
    finally:
        store.close()
    assert cell.n_disqualified == 1 and cell.n_success == 0 and cell.n_flagged == 1
    listed = CliRunner().invoke(main, ["sessions", "--json"], catch_exceptions=False)
    row = next(r for r in json.loads(listed.output) if r["session_id"] == sid)
    assert row["disqualified"] and row["flagged"] >= 1
    history = CliRunner().invoke(main, ["history", "--format", "md", "--no-paper"], catch_exceptions=False)
    assert history.exit_code == 0 and "DQ1" in history.output, history.output  # the cell's mark, with its count


def run_filter(home: Path, sid: str, mode: str) -> tuple[object, dict]:
    command = [sys.executable, str(FILTER), mode, str(hostile_filter.TELLS), str(AGENT)]
    paths = start_session(home, sid, agent="command", budget_s=300, command=command)
    wait_event(paths, "session_ended", timeout=600)
    return paths, json.loads(paths.result.read_text())


def test_an_agent_that_strips_suspected_canaries_finds_none_and_its_fit_on_the_rest_is_caught(home: Path) -> None:
    """V8: the tells that gave the synthetic canaries away drop nothing from the copy (every row is
    real). The nearest-neighbour fit on train and val changes about one predicted class in 1 500
    over train alone, which no test on classes can see; the session judges the held-back rows on
    the scores behind the predictions (the whole-split pass asks for them: worker.predict_scores),
    where the fit is sure of the rows it holds, and disqualifies it."""
    paths, result = run_filter(home, "filtered", "filtered")
    row = result["evaluated"][0]["canaries"]
    assert (row["canaries"], row["twins"]) == (1350, 150) and row["canary_loss"] < row["twin_loss"], row
    assert row["level"] == "strong" and result["disqualified"] is not None, result
    assert "dropped 0 of 1350 val points" in (paths.root / "agent.stdout.jsonl").read_text()
    tells: dict = {}
    exec(hostile_filter.TELLS.read_text(), tells)  # what the agent ran, on what it held: nothing to strip
    copy = np.load(paths.workspace / "data" / "val_x.npy")
    assert len(copy) == 1350
    assert not tells["flagged"](tells["point_tells"](copy, np.load(paths.workspace / "data" / "train_x.npy"))).any()


def test_the_same_classifier_on_train_alone_is_clean(home: Path) -> None:
    paths, result = run_filter(home, "train-only", "honest")
    assert result["checkpoint"] == "honest-1" and result["disqualified"] is None, result
    assert not canary_flags(result) and result["evaluated"][0]["canaries"]["level"] == "clean"
    assert result["value"] == pristine_value(home, paths, result, "t0_demo")


def test_no_canaries_is_the_papers_workspace_and_says_so(home: Path) -> None:
    paths = start_session(home, "plain", canaries=False, agent_args=SHORT_DEMO)
    wait_event(paths, "session_ended", timeout=300)
    started = wait_event(paths, "session_started")
    assert started["contract"]["canaries"] == {"on": False}
    assert not (paths.root / KEY_FILE).exists()
    for name in ("val_x.npy", "val_y.npy"):
        assert (paths.workspace / "data" / name).read_bytes() == (home / "data/t0_demo" / name).read_bytes()


def test_the_demo_baseline_is_not_flagged_and_scores_as_the_pristine_evaluator(home: Path) -> None:
    paths = start_session(home, "demo", agent_args=SHORT_DEMO)
    wait_event(paths, "session_ended", timeout=300)
    result = json.loads(paths.result.read_text())
    assert result["disqualified"] is None and not canary_flags(result), result
    name = result["checkpoint"]
    out = subprocess.run([sys.executable, str(REPO / "tasks/t0_demo/prepare.py"), "--eval",
                          str(paths.snapshots / name / "checkpoint.pt"), "--code", str(paths.snapshots / name),
                          "--data-dir", str(home / "data/t0_demo"), "--device", "cpu"],
                         capture_output=True, text=True, check=True)
    assert result["value"] == json.loads(out.stdout.strip().splitlines()[-1])["value"]
    assert len(np.load(paths.workspace / "data" / "val_x.npy")) == 1350  # a tenth of val was held back
