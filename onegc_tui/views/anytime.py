"""Anytime curves, every one of them here: one session's best-so-far against its budget fraction
(:func:`anytime_curve`, the detail screen's plot), the band of several (:func:`anytime_band`), and
the curves across repeats by the official rule (:func:`official_curve`, :class:`RepeatCurves`):
what a session would have scored had it stopped at each point of its budget.

At budget fraction ``f`` the official rule (runner/scoring/official.py: ``val-best``) picks, among the
checkpoints that had appeared by then, the one with the best validation score (ties: the
earlier); the curve's value is that checkpoint's score on the task's scored split. Where the
scored split is the validation split (T0-T3, T7) this is the best-so-far of the live scores;
elsewhere (T4-T6) the val-best's test score, which can go down when a new checkpoint wins on
validation and does worse on test: the curve shows that as it is. A checkpoint without a known
scored-split score is passed over, as the official rule passes over a val-best whose
re-evaluation failed (every checkpoint is re-evaluated since the unofficial test-best,
runner/scoring/unofficial.py; older sessions have live validation scores only, which serve where the
scored split is validation).

The curves of a cell's repeats are shown as their mean with a band (min-max, and the sample SD,
labelled) on a common grid, and as the expected best-of-k (the best of k repeats drawn at random
without replacement, exactly, from order statistics). Two scales besides the raw metric: the
paper's relative improvement over the baseline (``(s - b) / b``, sign by direction) and RE-Bench's
normalisation (baseline 0, reference 1: ``(s - b) / (ref - b)``, the paper's reference where the
task has one). :func:`score_at_budget` answers "what would an N-minute budget have scored" from
the stored checkpoint times; it is a truncation of the session as it ran, not a rerun: an agent
told it had N minutes might have worked differently.

No UI here (no textual, no rich): the history screen, the report and the exports render these.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from onegc_tui.views.statistics import mean_or_none, relative_improvement, sample_std
from tasks import Direction, TaskSpec, better

FRACTIONS = (0.25, 0.5, 0.75, 1.0)  # "score at 25/50/75/100 % of the budget"
GRID_POINTS = 101  # common budget-fraction grid for averaging anytime curves (every 1 %)


@dataclass(frozen=True, slots=True)
class ScorePoint:
    """One scored checkpoint: ``budget_elapsed_s`` is when it appeared (not when it was scored);
    ``value`` is ``None`` when scoring failed. Use the official re-evaluation where there is one."""

    session_id: str
    budget_elapsed_s: float
    value: float | None


@dataclass(frozen=True, slots=True)
class AnytimeCurve:
    """Best-so-far score against budget fraction, a right-continuous step function: ``steps``
    are (fraction, best) at each improvement; before the first it has no value."""

    session_id: str
    direction: Direction
    steps: tuple[tuple[float, float], ...]

    def at(self, fraction: float) -> float | None:
        value = None
        for f, v in self.steps:
            if f > fraction:
                break
            value = v
        return value


@dataclass(frozen=True, slots=True)
class AnytimeBand:
    """Anytime curves of several repeats on a common grid: at each fraction, the mean, sample
    std, min and max over the curves that have a checkpoint by then, and how many (``n``)."""

    grid: tuple[float, ...]
    mean: tuple[float | None, ...]
    std: tuple[float | None, ...]
    lo: tuple[float | None, ...]
    hi: tuple[float | None, ...]
    n: tuple[int, ...]
    n_curves: int


def anytime_curve(
    points: Iterable[ScorePoint], budget_s: float, direction: Direction, session_id: str = ""
) -> AnytimeCurve:
    """Best-so-far of a session's scored checkpoints. Failed scores are skipped; checkpoints
    saved in the grace period after the deadline count at fraction 1.0."""
    if budget_s <= 0:
        raise ValueError(f"budget_s must be positive, got {budget_s}")
    steps: list[tuple[float, float]] = []
    for p in sorted(points, key=lambda p: p.budget_elapsed_s):
        session_id = session_id or p.session_id
        if p.value is None or not math.isfinite(p.value):
            continue
        frac = min(1.0, max(0.0, p.budget_elapsed_s / budget_s))
        if steps and not better(p.value, steps[-1][1], direction):
            continue
        if steps and steps[-1][0] == frac:
            steps.pop()  # two checkpoints at the same moment: keep the better
        steps.append((frac, p.value))
    return AnytimeCurve(session_id, direction, tuple(steps))


def anytime_band(curves: Sequence[AnytimeCurve], grid: Sequence[float] | None = None) -> AnytimeBand:
    """Mean and spread of ``curves`` on ``grid`` (default: 0, 0.01, …, 1)."""
    pts = tuple(grid) if grid is not None else tuple(i / (GRID_POINTS - 1) for i in range(GRID_POINTS))
    mean, std, lo, hi, n = [], [], [], [], []
    for f in pts:
        vals = [v for v in (c.at(f) for c in curves) if v is not None]
        mean.append(mean_or_none(vals))
        std.append(sample_std(vals))
        lo.append(min(vals) if vals else None)
        hi.append(max(vals) if vals else None)
        n.append(len(vals))
    return AnytimeBand(pts, tuple(mean), tuple(std), tuple(lo), tuple(hi), tuple(n), len(curves))


def scores_at(
    curve: AnytimeCurve, fractions: Sequence[float] = FRACTIONS, reached: float = 1.0
) -> dict[float, float | None]:
    """Best score reached by each budget fraction (``None``: no checkpoint by then). A session
    still running has ``reached`` only part of its budget: later fractions are left out (its
    score at 100 % is not today's best)."""
    return {f: curve.at(f) for f in fractions if f <= reached + 1e-9}


def time_to_first_checkpoint(points: Iterable[ScorePoint], scored_only: bool = False) -> float | None:
    """Budget seconds to the first checkpoint (with ``scored_only``, the first that scored)."""
    times = [
        p.budget_elapsed_s
        for p in points
        if not scored_only or (p.value is not None and math.isfinite(p.value))
    ]
    return min(times) if times else None


# ----------------------------------------------------------------------------- across repeats

Scale = Literal["raw", "relative", "rebench"]
SCALES: tuple[Scale, ...] = ("raw", "relative", "rebench")
SCALE_LABELS: Mapping[Scale, str] = {
    "raw": "score (task metric)",
    "relative": "relative improvement over the baseline (paper)",
    "rebench": "normalised: baseline 0, reference 1 (RE-Bench)",
}


@dataclass(frozen=True, slots=True)
class CheckpointScore:
    """One checkpoint as the official rule sees it: when it appeared (budget seconds), its trusted
    validation score (ranks it) and its scored-split score (the value shown); ``None`` = unknown."""

    name: str
    budget_elapsed_s: float
    val: float | None
    scored: float | None


def _finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def official_curve(checkpoints: Iterable[CheckpointScore], budget_s: float, direction: Direction,
                   session_id: str = "") -> AnytimeCurve:
    """The session's anytime curve by the official rule (see the module's docstring): a step at
    every change of the val-best's scored-split score. Checkpoints of the grace period count at 1.0."""
    if budget_s <= 0:
        raise ValueError(f"budget_s must be positive, got {budget_s}")
    steps: list[tuple[float, float]] = []
    best: CheckpointScore | None = None
    for c in sorted(checkpoints, key=lambda c: c.budget_elapsed_s):
        if not _finite(c.val) or not _finite(c.scored):
            continue
        assert c.val is not None and c.scored is not None
        if best is not None and best.val is not None and not better(c.val, best.val, direction):
            continue
        best = c
        frac = min(1.0, max(0.0, c.budget_elapsed_s / budget_s))
        if steps and steps[-1][0] == frac:
            steps.pop()
        if not steps or steps[-1][1] != c.scored:
            steps.append((frac, c.scored))
    return AnytimeCurve(session_id, direction, tuple(steps))


def score_at_budget(checkpoints: Iterable[CheckpointScore], minutes: float, direction: Direction) -> float | None:
    """What an ``minutes``-minute budget would have scored by the official rule: the scored-split
    score of the val-best among the checkpoints that appeared by then (``None``: none had, or its
    scored-split score is unknown). A truncation of the session as it ran, not a rerun."""
    limit = minutes * 60.0
    best: CheckpointScore | None = None
    for c in sorted(checkpoints, key=lambda c: c.budget_elapsed_s):
        if c.budget_elapsed_s > limit or not _finite(c.val) or not _finite(c.scored):
            continue
        assert c.val is not None
        if best is None or (best.val is not None and better(c.val, best.val, direction)):
            best = c
    return best.scored if best is not None and _finite(best.scored) else None


def rescale(value: float | None, scale: Scale, spec: TaskSpec) -> float | None:
    """A score on ``scale``; ``None`` where the scale needs what the task lacks (a baseline, a
    reference different from the baseline)."""
    if value is None:
        return None
    if scale == "raw":
        return value
    b = spec.baseline_score
    if b is None:
        return None
    if scale == "relative":
        return relative_improvement(value, b, spec.direction) if b != 0 else None
    ref = spec.paper_reference
    if ref is None or ref == b:
        return None
    return (value - b) / (ref - b)


def rescale_curve(curve: AnytimeCurve, scale: Scale, spec: TaskSpec) -> AnytimeCurve | None:
    """``curve`` on ``scale`` (both rescalings keep "higher is better"); None where it has no meaning."""
    if scale == "raw":
        return curve
    steps = []
    for f, v in curve.steps:
        r = rescale(v, scale, spec)
        if r is None:
            return None
        steps.append((f, r))
    return AnytimeCurve(curve.session_id, "higher", tuple(steps))


def default_grid() -> tuple[float, ...]:
    return tuple(i / (GRID_POINTS - 1) for i in range(GRID_POINTS))


def expected_best_of_k(values: Sequence[float], k: int, direction: Direction) -> float | None:
    """The expected best of ``k`` values drawn at random without replacement from ``values``:
    with the values sorted worst first, the i-th (1-based) is the best of a draw in
    C(i-1, k-1) of the C(n, k) draws. ``k`` above ``len(values)`` is clipped; None when empty."""
    n = len(values)
    if n == 0 or k < 1:
        return None
    k = min(k, n)
    ordered = sorted(values, reverse=(direction == "lower"))
    total = math.comb(n, k)
    return math.fsum(v * math.comb(i, k - 1) for i, v in enumerate(ordered) if i >= k - 1) / total


@dataclass(frozen=True, slots=True)
class RepeatCurves:
    """One agent × task cell's repeats on a common grid: ``band`` (mean, sample SD, min, max, n
    at each fraction over the repeats that had a scored checkpoint by then) and ``best_of_k``
    (the expected best of k repeats at each fraction, over those same repeats), on ``scale``."""

    label: str
    task: str
    scale: Scale
    curves: tuple[AnytimeCurve, ...]
    band: AnytimeBand
    best_of_k: tuple[float | None, ...]
    k: int


def repeat_curves(label: str, task: str, curves: Sequence[AnytimeCurve], direction: Direction,
                  scale: Scale = "raw", k: int | None = None, grid: Sequence[float] | None = None) -> RepeatCurves:
    """Mean-with-band and best-of-k of a cell's curves (already on ``scale``; ``direction`` is the
    curves' own: "higher" once rescaled). ``k`` defaults to the number of repeats (the best of all)."""
    pts = tuple(grid) if grid is not None else default_grid()
    band = anytime_band(curves, pts)
    kk = k if k is not None else max(1, len(curves))
    bok = []
    for f in pts:
        vals = [v for v in (c.at(f) for c in curves) if v is not None]
        bok.append(expected_best_of_k(vals, kk, direction))
    return RepeatCurves(label, task, scale, tuple(curves), band, tuple(bok), kk)


__all__ = [
    "SCALES",
    "SCALE_LABELS",
    "CheckpointScore",
    "RepeatCurves",
    "Scale",
    "default_grid",
    "expected_best_of_k",
    "official_curve",
    "repeat_curves",
    "rescale",
    "rescale_curve",
    "score_at_budget",
]
