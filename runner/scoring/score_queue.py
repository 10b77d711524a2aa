"""The live score queue: what the checkpoint watcher found (runner/scoring/checkpoint_watcher.py),
scored one at a time on the selection split by the session's warm sealed scorer
(runner/scoring/scorer.py). It reads the watcher's :class:`FoundCheckpoint`; the watcher knows
nothing of it (one direction).

A scorer that falls behind (a checkpoint flood: INTEGRITY.md R2) is not allowed to lose the best
checkpoint to recency (issue 46 part 6):

- byte-identical snapshots (the same :attr:`FoundCheckpoint.content`) are scored once: every
  later one is given the first one's score at once, reported with ``same_as``, and costs no child;
- when several wait, the next is the one with the best evidence at hand
  (runner/scoring/evidence.py): its own reported score, best first, else the newest. None is
  dropped: a flood waits (the watcher's checkpoint cap bounds how many can), and whatever still
  waits when the queue is closed is reported then as not scored live; the official phase
  re-evaluates it within its own bounds (runner/scoring/official.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from runner.scoring.checkpoint_watcher import FoundCheckpoint
from runner.scoring.evidence import evidence_key
from runner.scoring.scorer import SELECTION_SPLIT, Score, SealedScorer

NOT_SCORED_LIVE = ("not scored live: {n} checkpoints still waited for the live scorer when the agent's "
                   "session ended (the official phase re-evaluates them within its bounds)")


def _higher(a: float, b: float) -> bool:
    return a > b


def _no_score(found: FoundCheckpoint) -> float | None:
    return None  # waiting: not scored yet


def _claimed(found: FoundCheckpoint) -> float | None:
    return found.self_reported


def _seen(found: FoundCheckpoint) -> float:
    return found.seen_at


class ScoreQueue:
    """A worker thread that scores found checkpoints (the scorer warmed first); see the module.
    ``on_scored(found, score, same_as)``: ``same_as`` names the byte-identical checkpoint whose
    score this is, None when it was scored itself. ``better``: the task's order of scores."""

    def __init__(self, scorer: SealedScorer, on_scored: Callable[[FoundCheckpoint, Score, str | None], None],
                 better: Callable[[float, float], bool] = _higher):
        self.scorer = scorer
        self.on_scored = on_scored
        self.left = 0  # checkpoints still waiting when the queue was closed
        self.deduplicated = 0  # checkpoints given the score of a byte-identical one
        self._key = evidence_key(better, _no_score, _claimed, _seen)
        self._waiting: list[FoundCheckpoint] = []
        self._scored: dict[str, tuple[str, Score]] = {}  # content -> (the label scored, its score)
        self._closed = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="scorer", daemon=True)

    def start(self) -> None:
        self.scorer.launch()  # from the caller's (long-lived) thread: the worker dies with the thread that made it
        self._thread.start()

    def put(self, found: FoundCheckpoint) -> None:
        with self._cond:
            self._waiting.append(found)
            self._cond.notify()

    def close(self, wait_s: float) -> bool:
        """Let waiting work go on for up to ``wait_s``, then give up on the rest (each reported as not
        scored live); True when all finished (the scorer is then left running, for the official
        phase to reuse)."""
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join(timeout=wait_s)
        finished = not self._thread.is_alive()
        with self._cond:
            left, self._waiting = self._waiting, []  # the worker takes nothing more
        if not finished:
            self.scorer.deadline = time.monotonic()  # no child starts any more (a probe's neither)
            self.scorer.close()  # a checkpoint still being scored fails, and the thread ends
            self._thread.join(timeout=5)
        self.left = len(left)
        for found in left:
            self.on_scored(found, Score(None, NOT_SCORED_LIVE.format(n=len(left))), None)
        return finished

    def _next(self) -> tuple[FoundCheckpoint, tuple[str, Score] | None] | None:
        """The next checkpoint and, where a byte-identical one was scored, that one's label and
        score; None once closed with nothing waiting (or given up)."""
        with self._cond:
            while True:
                for i, found in enumerate(self._waiting):  # scored already: costs nothing, so first
                    if found.content is not None and found.content in self._scored:
                        return self._waiting.pop(i), self._scored[found.content]
                if self._waiting:
                    pick = min(self._waiting, key=self._key)
                    self._waiting.remove(pick)
                    return pick, None
                if self._closed:
                    return None
                self._cond.wait()

    def _run(self) -> None:
        while (step := self._next()) is not None:
            found, same = step
            if same is not None:
                self.deduplicated += 1
                self.on_scored(found, same[1], same[0])
                continue
            score = live_score(self.scorer, found)  # never raises: a failure is that checkpoint's error
            if found.content is not None:
                with self._cond:
                    self._scored[found.content] = (found.label, score)
            self.on_scored(found, score, None)


def live_score(scorer: SealedScorer, found: FoundCheckpoint) -> Score:
    """A checkpoint's live score: its trusted validation score (which ranks checkpoints) from one
    fresh child of ``scorer``; the queue's, and ``onegc verify``'s when it scores a stored session
    again (runner/scoring/rescore.py). Never raises: a failure is that checkpoint's error
    (SealedScorer.score); probed where validation is the scored split (T1): a live score that
    reads ahead is an error too."""
    return scorer.score(found.path, found.snapshot, [SELECTION_SPLIT], probe=True)[SELECTION_SPLIT]
