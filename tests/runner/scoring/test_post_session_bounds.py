"""The work after a session is bounded whatever the agent saved (issue 38 part 4, issue 46 part 6,
INTEGRITY.md R2): 302 checkpoints of a 120 s session were 246 re-evaluations and 577 s after its
end; 100 byte-identical copies of a slow model pushed the best checkpoint out of both phases."""

from __future__ import annotations

import threading

from runner.scoring.checkpoint_watcher import FoundCheckpoint
from runner.scoring.official import (
    MAX_FALLBACK,
    UNSCORED_PER_WINDOW,
    Candidate,
    Evaluation,
    evaluation_cap,
    not_reevaluated,
    phase_seconds,
    select,
)
from runner.scoring.score_queue import ScoreQueue
from runner.scoring.scorer import Score
from tests.runner.scoring.test_official import HIGHER, LOWER, fake


def test_a_flood_of_checkpoints_without_live_scores_is_a_bounded_number_of_re_evaluations():
    cands = [Candidate(f"c{i}", i * 0.4, None) for i in range(302)]  # 120 s: one window, none scored live
    evaluate, calls = fake({c.label: Evaluation(0.1 + c.elapsed_s / 1000, 0.2) for c in cands})
    sel = select(cands, HIGHER, evaluate, max_evaluations=evaluation_cap(120))
    assert len(calls) <= UNSCORED_PER_WINDOW + 1 + 1  # the newest of its window, then the val-best is among them
    assert calls[0] == "c301" and sel.best == "c301"  # the agent's latest model of the window
    assert len(sel.left_out) == 302 - len(calls)
    assert all("with better evidence were tried first" in why for why in sel.left_out.values())
    assert sel.bounded == set(sel.left_out)  # each left out by the bounds: counted in every view
    # two windows (the budget's one, and the grace's), the val-best, the unscored per window, the fallback
    assert evaluation_cap(120) == 2 + 1 + 2 * UNSCORED_PER_WINDOW + MAX_FALLBACK


def test_the_cap_and_the_phase_time_stop_further_evaluations_and_say_why():
    cands = [Candidate(f"w{i}", i * 300.0 + 1, 0.5 + i / 100) for i in range(40)]  # 40 windows, all scored live
    evaluate, calls = fake({c.label: Evaluation(c.val, c.val) for c in cands})
    sel = select(cands, HIGHER, evaluate, max_evaluations=5)
    assert len(calls) == 5 and calls[0] == "w39" and sel.best == "w39"  # the val-best first: it is official
    assert len(sel.left_out) == 35 and all("cap of 5 evaluations" in why for why in sel.left_out.values())
    evaluate, calls = fake({c.label: Evaluation(c.val, c.val) for c in cands})
    sel = select(cands, HIGHER, evaluate, time_left=lambda: 0.0)
    assert calls == [] and sel.best is None and "official phase's 900 s were spent" in sel.left_out["w39"]


def test_byte_identical_copies_are_one_candidate_evaluated_once_and_the_better_one_is_official():
    best = Candidate("run_best-1", 30.0, None, None, "B")
    copies = [Candidate(f"copy{i:03d}-1", 40.0 + i * 0.1, None, None, "C") for i in range(100)]
    evaluate, calls = fake({"run_best-1": Evaluation(0.4, 0.38), "copy000-1": Evaluation(0.9, 0.88)})
    sel = select([best, *copies], LOWER, evaluate, max_evaluations=evaluation_cap(120))
    assert sorted(calls) == ["copy000-1", "run_best-1"] and sel.best == "run_best-1"
    assert sel.same_as == {f"copy{i:03d}-1": "copy000-1" for i in range(1, 100)}
    assert all("byte-identical to copy000-1" in sel.left_out[c] for c in sel.same_as)
    record = not_reevaluated([c.label for c in [best, *copies]], sel.evaluations, sel.left_out, sel.bounded)
    assert record["count"] == 99 and record["by_bounds"] == 0  # copies are not left out by the bounds


def test_the_unscored_are_tried_by_their_own_claim_before_recency():
    cands = [Candidate(f"c{i}", i * 1.0, None, 0.9 if i == 3 else 0.1) for i in range(30)]  # one window
    evaluate, calls = fake({c.label: Evaluation(0.2 if c.label != "c3" else 0.95, 0.5) for c in cands})
    sel = select(cands, HIGHER, evaluate)
    assert calls[0] == "c3" and sel.best == "c3"  # the old one that claims the most is tried first
    assert len(calls) == UNSCORED_PER_WINDOW  # then the newest of the rest: never dropped for its age alone


def test_when_the_phase_time_runs_out_the_best_evaluated_stands_and_the_cut_one_is_not_held_against_it():
    clock = {"t": 0.0}
    cands = [Candidate("live_best", 10, 0.8), Candidate("unscored", 20, None, 0.99), Candidate("later", 30, None)]

    def evaluate(label):
        clock["t"] += 50
        if label == "unscored":
            return Evaluation(None, None, "evaluation timed out after 40 s", interrupted=True)
        return Evaluation(0.8, 0.7)

    sel = select(cands, HIGHER, evaluate, time_left=lambda: 90 - clock["t"], phase_s=90)
    assert sel.best == "live_best" and sel.evaluations["live_best"].official == 0.7
    assert "ran out during its evaluation" in sel.left_out["unscored"] and "unscored" not in sel.evaluations
    assert "official phase's 90 s were spent" in sel.left_out["later"]
    assert sel.bounded == {"unscored", "later"}


def test_the_phase_bound_is_a_share_of_the_budget_within_a_floor_and_a_ceiling():
    assert phase_seconds(120) == 120 and phase_seconds(40 * 60) == 600 and phase_seconds(8 * 3600) == 900


def found(i: int, at: float, content: str | None = None, reported: float | None = None) -> FoundCheckpoint:
    return FoundCheckpoint(f"c{i}.pt", f"c{i}-1", None, None, None, reported, at, at, content)  # type: ignore[arg-type]


class SlowScorer:
    """A live scorer that scores one checkpoint when told to, its value from the checkpoint's number."""

    def __init__(self):
        self.go = threading.Semaphore(0)
        self.entered = threading.Semaphore(0)
        self.scored: list[str] = []

    def launch(self):
        pass

    def close(self):
        pass

    def score(self, path, snapshot, splits, probe=False):
        self.entered.release()
        self.go.acquire()
        self.scored.append(snapshot)
        return {splits[0]: Score(0.5, None)}


def test_a_live_flood_of_byte_identical_copies_is_scored_once_and_the_best_claim_goes_first():
    # c0 is being scored while the flood arrives: 100 copies of one snapshot, and c101 that claims the best score
    items = [found(0, 1.0, "A")] + [found(i, 1.0 + i, "COPY", reported=0.2) for i in range(1, 101)]
    items.append(found(101, 50.0, "BEST", reported=0.9))
    scorer = SlowScorer()
    results: dict[str, tuple[Score, str | None]] = {}
    done = threading.Event()

    def on_scored(f, score, same):
        results[f.label] = (score, same)
        if len(results) == len(items):
            done.set()

    q = ScoreQueue(scorer, on_scored, better=HIGHER)  # type: ignore[arg-type]
    q.start()
    q.put(items[0])
    assert scorer.entered.acquire(timeout=30)  # c0 is being scored
    for f in items[1:]:
        q.put(f)
    for _ in range(3):  # three scorings: c0, then the best claim, then one copy for all 100
        scorer.go.release()
    assert done.wait(30)
    assert q.close(10) and q.left == 0
    assert scorer.scored == [None, None, None] and len(scorer.scored) == 3  # three children, not 102
    scored_itself = [label for label, (_, same) in results.items() if same is None]
    assert scored_itself[:2] == ["c0-1", "c101-1"]  # the best claim before any copy (not the newest)
    copies = {label: same for label, (_, same) in results.items() if label.startswith("c") and same}
    assert len(copies) == 99 and len(set(copies.values())) == 1 and q.deduplicated == 99


def test_what_still_waits_when_the_queue_closes_is_reported_as_not_scored_live():
    items = [found(i, float(i), f"X{i}") for i in range(6)]
    scorer = SlowScorer()
    results: dict[str, Score] = {}
    q = ScoreQueue(scorer, lambda f, s, same: results.__setitem__(f.label, s), better=HIGHER)  # type: ignore[arg-type]
    q.start()
    for f in items:
        q.put(f)
    scorer.go.release()  # one is scored, one is in flight when the queue is closed
    assert not q.close(0.5)
    scorer.go.release()  # the one in flight ends (a real scorer's close fails it)
    left = [s for s in results.values() if s.error and s.error.startswith("not scored live")]
    assert q.left == len(left) >= 4 and all(s.value is None for s in left)
