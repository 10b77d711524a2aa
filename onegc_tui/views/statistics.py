"""The few statistics every view and result shares: sample std (ddof = 1), SEM, a mean that is
``None`` on no values, and the paper's relative improvement r_t. Pure; no UI."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from tasks import Direction


def sample_std(values: Sequence[float]) -> float | None:
    """Sample standard deviation (ddof = 1); ``None`` below two values."""
    return statistics.stdev(values) if len(values) >= 2 else None


def sem(values: Sequence[float]) -> float | None:
    """Standard error of the mean, ``std / sqrt(n)`` with the sample std; ``None`` below two."""
    sd = sample_std(values)
    return None if sd is None else sd / math.sqrt(len(values))


def mean_or_none(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def relative_improvement(score: float, baseline: float, direction: Direction) -> float:
    """The paper's r_t: ``(s - b) / b`` where higher is better, ``(b - s) / b`` where lower is."""
    if baseline == 0:
        raise ValueError("relative improvement needs a non-zero baseline")
    return (score - baseline) / baseline if direction == "higher" else (baseline - score) / baseline


__all__ = ["mean_or_none", "relative_improvement", "sample_std", "sem"]
