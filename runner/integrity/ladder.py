"""The Ladder (Blum and Hardt, "The Ladder: A Reliable Leaderboard for Machine Learning
Competitions", ICML 2015): what a sealed split's answer says (INTEGRITY.md V9).

An answer is a new value only when the public part's figure beats the best value given so far by
the task's step (``ladder_step`` in task.toml), and the new value is that figure rounded to the
step's grid; otherwise the answer repeats the best so far. Released values are kept inside the
metric's range (``metric_range``: a figure beyond it is released at its edge).

What a session's answers can tell, whatever the agent sends (:func:`bits_bound`): a transcript of
``k`` answers is fixed by which answers gave a new value and by those values, which rise strictly
on a grid of ``G`` points, so there are at most ``sum_j C(k, j) C(G, j) = C(k + G, k)`` transcripts
(Vandermonde's identity), and the answers carry at most ``log2 C(k + G, k)`` bits, all of them about
the public part: the private part, where the official number is judged, gets none. A refused
request says only what the predictions' shape and type are, never a target. :func:`transcript_bits`
is the same count for the transcript a session actually got (``j`` new values among ``k`` answers).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


def _log2_comb(n: int, k: int) -> float:
    return (math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)) / math.log(2)


def grid_points(step: float, lo: float, hi: float) -> int:
    """The values a ladder of ``step`` can release in ``[lo, hi]``."""
    return math.floor((hi - lo) / step + 1e-9) + 1


def bits_bound(answers: int, step: float, lo: float, hi: float) -> float:
    """The most bits ``answers`` answers of the Ladder can carry (see the module)."""
    return _log2_comb(answers + grid_points(step, lo, hi), answers)


def transcript_bits(answers: int, new_values: int, step: float, lo: float, hi: float) -> float:
    """The bits of a transcript of ``answers`` answers of which ``new_values`` were new values:
    which answers they were, and which rising grid values."""
    g = grid_points(step, lo, hi)
    j = min(new_values, answers, g)
    return _log2_comb(answers, j) + _log2_comb(g, j)


@dataclass
class Ladder:
    """The best value released so far, and the rule for the next (``higher``: the metric's direction)."""

    step: float
    lo: float
    hi: float
    higher: bool
    best: float | None = None
    new_values: int = 0
    answered: int = 0

    def answer(self, value: float) -> tuple[float, bool]:
        """What an answer on a public figure of ``value`` releases, and whether it is a new value."""
        self.answered += 1
        beats = self.best is None or (value >= self.best + self.step if self.higher else value <= self.best - self.step)
        if beats:
            self.best = self.released(value)
            self.new_values += 1
            return self.best, True
        assert self.best is not None
        return self.best, False

    def released(self, value: float) -> float:
        """``value`` on the grid (steps from ``lo``), inside the range."""
        clamped = min(self.hi, max(self.lo, value))
        steps = round((clamped - self.lo) / self.step)
        return round(self.lo + steps * self.step, 12)

    def record(self, cap: int) -> dict:
        """What the contract and the result say about the ladder: its step and range, the bound for
        a session of ``cap`` answers, and this session's transcript so far."""
        return {"step": self.step, "range": [self.lo, self.hi], "bits_bound": round(bits_bound(cap, self.step, self.lo,
                                                                                              self.hi), 1),
                "answered": self.answered, "new_values": self.new_values,
                "transcript_bits": round(transcript_bits(self.answered, self.new_values, self.step, self.lo, self.hi), 1)}
