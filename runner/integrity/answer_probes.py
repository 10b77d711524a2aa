"""Answers asked for to learn targets (INTEGRITY.md V9): the pattern of a boosting attack on a sealed
split's answers, seen in the requests themselves.

An agent that learns the public part's targets through the answers changes one prediction (or a
small group) of a fixed set and asks again, answer after answer; an honest agent evaluates models.
Two models' predictions can be as close as an attack's (a converged model changes a handful of
points from one epoch to the next), but not in the same rows: an honest model's small changes are
the points near its decision boundary, which went back and forth before; an attack's are rows
picked anew, which never changed. So each answer's predictions on the public part are kept as one
digest per row; an answer is *near* when it differs from some earlier answer in at least one row
and at most :func:`near_limit` rows, and the rows it changed that no answer had changed before
(from the first answer) are *fresh*. A session whose near answers changed at least
:data:`FLAG_FRESH` fresh rows gets the look ``answer_probing``. Measured (benchmarks/
sealed_split_bench.py): honest t0 sessions of the baseline and the scripted agent's runs, 48
answers each, 0-2 fresh rows; the issue's one-item attack over 200 answers about 57, groups of
five or ten about 200. An agent that knows this can first send predictions that change every row
(then none is fresh) and escape the look; it still learns no more than the Ladder lets it, and
nothing of the private part, where the official number is judged (runner/integrity/split_parts.py).
"""

from __future__ import annotations

import hashlib
import math

import numpy as np

from runner.integrity.checks import verdict
from runner.wire.verdicts import Verdict

NEAR_FRACTION = 0.01  # of the public part's rows: an answer that changes no more than this is near
NEAR_MIN = 2
FLAG_FRESH = 15  # fresh rows changed by near answers: a session at or past this gets the look


def near_limit(rows: int) -> int:
    """The most rows a near answer changes, for a public part of ``rows`` rows."""
    return max(NEAR_MIN, math.ceil(NEAR_FRACTION * rows))


def row_digests(predictions: np.ndarray) -> np.ndarray:
    """One 64-bit digest of each row's bytes (an item's class, a window's logits, an image's mask)."""
    rows = np.ascontiguousarray(predictions).reshape(len(predictions), -1)
    return np.array([int.from_bytes(hashlib.blake2b(r.tobytes(), digest_size=8).digest(), "little") for r in rows],
                    dtype=np.uint64)


class AnswerProbes:
    """The session's answers as the detector keeps them (at most the session's cap of them)."""

    def __init__(self) -> None:
        self.kept: list[np.ndarray] = []
        self.varied: np.ndarray | None = None  # rows some answer changed from the first
        self.near = 0
        self.fresh = 0

    def see(self, predictions: np.ndarray) -> int | None:
        """Take one answer's predictions on the public part; the fewest rows in which they differ
        from an earlier answer's (None for the first, or one of another shape)."""
        digests = row_digests(predictions)
        same = [d for d in self.kept if len(d) == len(digests)]
        self.kept.append(digests)
        if not same:
            return None
        distances = [int(np.count_nonzero(d != digests)) for d in same]
        nearest = int(np.argmin(distances))
        if self.varied is None or len(self.varied) != len(digests):
            self.varied = np.zeros(len(digests), dtype=bool)
        if 0 < distances[nearest] <= near_limit(len(digests)):
            self.near += 1
            self.fresh += int(np.count_nonzero((same[nearest] != digests) & ~self.varied))
        self.varied |= same[0] != digests
        return distances[nearest]

    def verdict(self, task: str | None) -> Verdict | None:
        """The look ``answer_probing`` where the session's answers look like label extraction."""
        return probing_verdict(self.record(), task)

    def record(self) -> dict:
        """What result.json keeps (``answers.probes``), from which :func:`probing_verdict` gives the verdict again."""
        return {"answers": len(self.kept), "near": self.near, "fresh_rows": self.fresh,
                "public_rows": len(self.kept[-1]) if self.kept else 0}


def probing_verdict(record: dict, task: str | None) -> Verdict | None:
    """The look ``answer_probing`` from an :meth:`AnswerProbes.record` (a session's, or one read back
    from its result.json by ``onegc verify``), or None."""
    fresh = record.get("fresh_rows")
    if not isinstance(fresh, int) or fresh < FLAG_FRESH:
        return None
    limit = near_limit(int(record.get("public_rows") or 0))
    return verdict("answer_probing", "look", f"{record.get('near')} of the session's {record.get('answers')} answers "
                   f"changed at most {limit} rows of the public part from an earlier answer, {fresh} of them rows no "
                   "answer had changed before: targets asked for a few at a time", task, statistic=float(fresh))
