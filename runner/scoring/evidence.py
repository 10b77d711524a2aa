"""The order in which checkpoints are tried when more wait than can be scored at once: a backlog in
the live scorer (runner/scoring/score_queue.py), the official phase's bounds (runner/scoring/official.py).

By the best evidence at hand (issue 46 part 6), never by recency alone:

1. a trusted validation score (the live scorer's), best first;
2. else the checkpoint's own reported score (``self_reported``), best first: the agent's claim
   only orders, it never counts (no figure of it reaches a result);
3. else nothing: newest first (an agent's latest model is its current best guess).

Within each tier, ties go to the newer checkpoint. A figure that is not a finite number is no
evidence. An agent that claims too much for a checkpoint only moves its own checkpoints: the claim
cannot push anything of another session, and the official choice is still made by the harness's
own validation scores.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from functools import cmp_to_key
from typing import Any, TypeVar

T = TypeVar("T")


def _finite(x: float | None) -> bool:
    return isinstance(x, int | float) and math.isfinite(x)


def evidence_key(better: Callable[[float, float], bool], trusted: Callable[[T], float | None],
                 claimed: Callable[[T], float | None], when: Callable[[T], float]) -> Callable[[T], Any]:
    """A sort key that puts the item to try first first (see the module): ``trusted(item)`` its
    harness score, ``claimed(item)`` its self-reported one, ``when(item)`` when it appeared."""

    def tier(item: T) -> tuple[int, float | None]:
        if _finite(score := trusted(item)):
            return 0, score
        if _finite(score := claimed(item)):
            return 1, score
        return 2, None

    def compare(a: T, b: T) -> int:
        (ta, sa), (tb, sb) = tier(a), tier(b)
        if ta != tb:
            return ta - tb
        if sa is not None and sb is not None and sa != sb:
            return -1 if better(sa, sb) else 1 if better(sb, sa) else 0
        wa, wb = when(a), when(b)
        return -1 if wa > wb else 1 if wa < wb else 0

    return cmp_to_key(compare)


def by_evidence(items: Iterable[T], better: Callable[[float, float], bool], trusted: Callable[[T], float | None],
                claimed: Callable[[T], float | None], when: Callable[[T], float]) -> list[T]:
    """``items`` in the order to try them (:func:`evidence_key`)."""
    return sorted(items, key=evidence_key(better, trusted, claimed, when))
