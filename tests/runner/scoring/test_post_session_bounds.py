"""The work after a session is bounded whatever the agent saved (issue 38 part 4, INTEGRITY.md R2):
302 checkpoints of a 120 s session were 246 re-evaluations and 577 s after its end."""

from __future__ import annotations

import threading

from runner.scoring.checkpoints import MAX_LIVE_BACKLOG, FoundCheckpoint, ScoreQueue
from runner.scoring.official import (
    MAX_FALLBACK,
    UNSCORED_PER_WINDOW,
    Candidate,
    Evaluation,
    evaluation_cap,
    select,
)
from runner.scoring.scorer import Score
from tests.runner.scoring.test_official import HIGHER, fake


def test_a_flood_of_checkpoints_without_live_scores_is_a_bounded_number_of_re_evaluations():
    cands = [Candidate(f"c{i}", i * 0.4, None) for i in range(302)]  # 120 s: one window, none scored live
    evaluate, calls = fake({c.label: Evaluation(0.1 + c.elapsed_s / 1000, 0.2) for c in cands})
    sel = select(cands, HIGHER, evaluate, max_evaluations=evaluation_cap(120))
    assert len(calls) <= UNSCORED_PER_WINDOW + 1 + 1  # the newest of its window, then the val-best is among them
    assert calls[0] == "c301" and sel.best == "c301"  # the agent's latest model of the window
    assert len(sel.left_out) == 302 - len(calls)
    assert all("newer checkpoints of its 5-minute window" in why for why in sel.left_out.values())
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
    assert calls == [] and sel.best is None and "post-session phase" in sel.left_out["w39"]


def found(i: int, at: float) -> FoundCheckpoint:
    return FoundCheckpoint(f"c{i}.pt", f"c{i}-1", None, None, None, None, at, at)  # type: ignore[arg-type]


class SlowScorer:
    """A live scorer that scores one checkpoint when told to."""

    def __init__(self):
        self.go = threading.Semaphore(0)
        self.scored: list[str] = []

    def launch(self):
        pass

    def close(self):
        pass

    def score(self, path, snapshot, splits, probe=False):
        self.go.acquire()
        return {splits[0]: Score(0.5, None)}


def test_a_live_scorer_that_falls_behind_keeps_the_newest_of_each_window_and_reports_the_rest():
    scorer = SlowScorer()
    results: dict[str, Score] = {}
    done = threading.Event()

    def on_scored(f, score):
        results[f.label] = score
        if len(results) == 60:
            done.set()

    q = ScoreQueue(scorer, on_scored, window_of=lambda f: int(f.saved_at // 300))  # type: ignore[arg-type]
    q.start()
    for i in range(60):  # 60 checkpoints over two windows while the first is being scored
        q.put(found(i, 100.0 + i * 10))
    for _ in range(60):
        scorer.go.release()
    assert done.wait(30)
    assert q.close(10)
    scored = [label for label, s in results.items() if s.value is not None]
    skipped = [s for s in results.values() if s.error]
    assert len(scored) <= 1 + MAX_LIVE_BACKLOG + 2 and "c59-1" in scored  # the newest of the last window
    assert len(skipped) == 60 - len(scored) and q.skipped == len(skipped)
    assert all("not scored live" in s.error and "newest of each 5-minute window" in s.error for s in skipped)
