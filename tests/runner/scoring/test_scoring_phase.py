"""The scoring phase lifted out of the session (runner/scoring/live.py, official_phase.py): what a
scorer that breaks does to one checkpoint and to the rest, and the official result from the live
state, without processes (a scorer that answers from a table)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace

from runner.scoring.checkpoint_watcher import FoundCheckpoint
from runner.scoring.live import LiveScoring
from runner.scoring.official_phase import OfficialPhase
from runner.scoring.result_file import result_record, write_result
from runner.scoring.score_queue import ScoreQueue
from runner.scoring.scorer import INVALID, Score, SealedScorer
from runner.wire.jsonl import EventWriter
from runner.wire.paths import SessionPaths
from runner.wire.session_config import SessionConfig
from tasks import get_task
from tests.helpers import checks_of, evidence_of


def found(tmp_path: Path, label: str, reported: float | None = None) -> FoundCheckpoint:
    snap = tmp_path / "snapshots" / label
    snap.mkdir(parents=True, exist_ok=True)
    return FoundCheckpoint(name=f"{label}.pt", label=label, path=snap / f"{label}.pt", snapshot=snap, script=None,
                           self_reported=reported, saved_at=time.time(), seen_at=time.time())


def broken_scorer(raise_for: set[str]) -> SealedScorer:
    """A real SealedScorer whose worker side raises for the checkpoints named in ``raise_for`` and
    times out for the others."""
    scorer = SealedScorer(SimpleNamespace(device="cpu", judge=SimpleNamespace(canaries=None, layout=lambda split: None)))  # type: ignore[arg-type]

    def predict(ckpt, code, splits, scores=()):
        if ckpt.stem in raise_for:
            raise RuntimeError("the socket went away\x1b[2J")
        return None, b"", Score(None, "evaluation timed out after 1 s", verdicts=(INVALID,))

    scorer._predict = predict  # type: ignore[method-assign]
    scorer.launch = lambda: None  # type: ignore[method-assign]
    return scorer


def test_a_scorer_that_breaks_gives_that_checkpoint_one_judging_failed_per_split_and_never_raises(tmp_path):
    out = broken_scorer({"bad"}).score(tmp_path / "bad.pt", tmp_path, ["val", "test"])
    assert set(out) == {"val", "test"}
    for score in out.values():
        assert score.value is None and score.verdicts == (INVALID,)
        assert score.error == "judging failed: RuntimeError: the socket went away [2J"  # its bytes sanitised


def test_the_live_queue_goes_on_after_a_checkpoint_whose_judging_broke(tmp_path):
    scored: list[tuple[str, Score]] = []
    queue = ScoreQueue(broken_scorer({"bad"}), lambda f, s, same: scored.append((f.label, s)))
    queue.start()
    queue.put(found(tmp_path, "bad"))
    queue.put(found(tmp_path, "next"))
    assert queue.close(60)
    got = dict(scored)
    assert sorted(got) == ["bad", "next"]  # the one after the broken one is scored too
    assert got["bad"].error.startswith("judging failed: RuntimeError")
    assert got["next"].error == "evaluation timed out after 1 s"


class TableScorer:
    """Answers each checkpoint from ``table``: ``{label: {split: value or error text}}``."""

    def __init__(self, table: dict[str, dict[str, float | str]], device: str = "cpu"):
        self.table = table
        self.plan = SimpleNamespace(device=device)
        self.calls: list[str] = []
        self.closed = False

    def score(self, ckpt: Path, code: Path, splits: list[str], probe: bool = False,
              parts: bool = False) -> dict[str, Score]:
        assert probe  # every official re-evaluation is probed for reading ahead (runner/integrity/causal.py)
        self.calls.append(ckpt.stem)
        row = self.table[ckpt.stem]
        return {s: Score(row[s], None, 0.1) if isinstance(row[s], float) else Score(None, str(row[s])) for s in splits}

    def alive(self) -> bool:
        return not self.closed

    def close(self) -> None:
        self.closed = True


def session(tmp_path: Path, task: str):
    root = tmp_path / "runs" / "s1"
    root.mkdir(parents=True)
    paths = SessionPaths(root)
    config = SessionConfig(session_id="s1", task=task, agent="scripted", budget_s=600)
    events = EventWriter(paths.events, "s1")
    live = LiveScoring(get_task(task), paths, events, lambda: 0.0, time.time())
    return paths, config, events, live


def add(live: LiveScoring, f: FoundCheckpoint, at: float, val: float | None) -> None:
    live.found[f.label], live.found_at[f.label] = f, at
    if val is not None:
        live.live[f.label] = Score(val, None)


def test_the_official_phase_ranks_by_validation_reuses_the_warm_scorer_and_records_the_result(tmp_path):
    paths, config, events, live = session(tmp_path, "t4")  # T4: the scored split is test, higher is better
    add(live, found(tmp_path, "early", reported=0.99), 10, 0.70)
    add(live, found(tmp_path, "late"), 400, 0.80)
    warm = TableScorer({"early": {"val": 0.70, "test": 0.95}, "late": {"val": 0.81, "test": 0.75}})
    live.scorer = warm  # type: ignore[assignment]
    made: list[str] = []
    result = OfficialPhase(live.spec, paths, config, events, lambda d: made.append(d) or warm,  # type: ignore[arg-type,func-returns-value]
                           "cpu").run(live, disk_full=False)
    assert result.best == ("late", 0.75) and result.val == 0.81  # not early's better test score
    assert result.scored_by == "official re-evaluation" and result.failure is None and result.found == 2
    assert made == [] and not warm.closed  # the warm live scorer, left for the caller to close
    assert [r["checkpoint"] for r in result.evaluated] == ["early", "late"]
    assert "self-reported 0.99 is far better than the harness's 0.7" in evidence_of(result.evaluated[0], "self_report_gap")
    write_result(paths, result_record(config, live.spec, "completed", "the agent finished", result, None))
    record = json.loads(paths.result.read_text())
    assert record["value"] == 0.75 and record["checkpoint"] == "late" and record["checkpoints_found"] == 2
    assert record["unofficial"]["test_best"]["value"] == 0.95  # the test-best, labelled, beside the official
    events.close()
    official = [json.loads(line) for line in paths.events.read_text().splitlines()]
    assert sorted(e["name"] for e in official if e["type"] == "checkpoint_scored" and e.get("official")) == \
        ["early", "late"]


def test_without_any_score_the_failure_names_the_first_error(tmp_path):
    paths, config, events, live = session(tmp_path, "t0")
    add(live, found(tmp_path, "a"), 10, None)
    scorer = TableScorer({"a": {"val": "CUDA out of memory"}})
    result = OfficialPhase(live.spec, paths, config, events, lambda d: scorer, "cpu").run(live, disk_full=False)  # type: ignore[arg-type,return-value]
    assert result.best is None and result.failure == "no checkpoint could be scored: CUDA out of memory"
    assert scorer.closed  # a scorer the phase made, it closes


def test_a_full_disk_falls_back_on_the_live_val_best(tmp_path):
    paths, config, events, live = session(tmp_path, "t0")  # T0: the scored split is validation
    add(live, found(tmp_path, "a"), 10, 0.6)
    scorer = TableScorer({"a": {"val": "no space left on device"}})
    result = OfficialPhase(live.spec, paths, config, events, lambda d: scorer, "cpu").run(live, disk_full=True)  # type: ignore[arg-type,return-value]
    assert result.best == ("a", 0.6) and result.scored_by.startswith("live scoring: the disk was full")


def test_a_checkpoint_saved_after_the_budget_is_recorded_labelled_and_never_evaluated(tmp_path):
    paths, config, events, live = session(tmp_path, "t0")  # a 600 s budget
    add(live, found(tmp_path, "in_budget"), 590, 0.6)
    add(live, found(tmp_path, "in_grace"), 612, 0.99)  # trained on in the grace period
    scorer = TableScorer({"in_budget": {"val": 0.6}})  # in_grace would raise a KeyError: never asked for
    result = OfficialPhase(live.spec, paths, config, events, lambda d: scorer, "cpu").run(live, disk_full=False)  # type: ignore[arg-type,return-value]
    assert result.best == ("in_budget", 0.6) and scorer.calls == ["in_budget"]
    (late,) = [r for r in result.evaluated if r["checkpoint"] == "in_grace"]
    assert late["official"] is None and late["error"].startswith("after the budget: saved 12 s after")
    assert checks_of(late) == {("after_budget", "disqualifies")}
    assert late["error"] == "after the budget: " + evidence_of(late)[0]
    events.close()
    scored = [json.loads(line) for line in paths.events.read_text().splitlines()]
    assert any(e["type"] == "checkpoint_scored" and e["name"] == "in_grace" and e["official"]
               and checks_of(e) == {("after_budget", "disqualifies")} for e in scored)
