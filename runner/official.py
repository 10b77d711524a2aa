"""The official result of a session (paper step 5).

Take the overall best checkpoint plus the best of each 5-minute window of budget time (so the
re-evaluation stays bounded and diverse), re-evaluate each with the pristine ``prepare.py``
against the original data outside the workspace, and report the best. A checkpoint's rank
within its window uses its live score, else its self-reported score, else recency.
"""

from __future__ import annotations

from dataclasses import dataclass

WINDOW_S = 300.0  # paper step 5: the best of each 5-minute window


@dataclass(frozen=True)
class Candidate:
    label: str
    elapsed_s: float  # budget time at which it appeared
    live: float | None  # live score, None if unscored or failed
    reported: float | None
    live_failed: bool = False


def _rank_key(c: Candidate, higher: bool) -> tuple:
    known = c.live if c.live is not None else c.reported
    if known is None:
        return (0, c.elapsed_s)
    return (1, known if higher else -known)


def select_candidates(cands: list[Candidate], higher_is_better: bool, window_s: float = WINDOW_S) -> list[Candidate]:
    """Overall best plus the best of each window; checkpoints that failed live scoring are
    still eligible (the official evaluator has the last word) but rank last."""
    if not cands:
        return []
    usable = [c for c in cands if not c.live_failed] or list(cands)
    chosen: dict[str, Candidate] = {}
    best = max(usable, key=lambda c: _rank_key(c, higher_is_better))
    chosen[best.label] = best
    windows: dict[int, list[Candidate]] = {}
    for c in usable:
        windows.setdefault(int(c.elapsed_s // window_s), []).append(c)
    for members in windows.values():
        top = max(members, key=lambda c: _rank_key(c, higher_is_better))
        chosen.setdefault(top.label, top)
    return sorted(chosen.values(), key=lambda c: c.elapsed_s)


def pick_best(scores: dict[str, float], higher_is_better: bool) -> tuple[str, float] | None:
    if not scores:
        return None
    label = (max if higher_is_better else min)(scores, key=scores.__getitem__)
    return label, scores[label]
