"""Paired comparison of two agent configurations on a task, over repeats.

Repeat k of configuration A is paired with repeat k of configuration B (a study runs them under
the same contract, same seed slot, same hardware); a pair counts where both finished with a score
that counts (:attr:`SessionOutcome.succeeded`); the rest are reported as unpaired, never dropped
silently. The difference is oriented so that positive means A did better (``A - B`` where higher
is better, ``B - A`` where lower is). Reported, each labelled:

- ``mean``: the mean paired difference;
- ``sd``: the sample standard deviation of the differences (ddof = 1), a spread of single pairs;
- ``sem``: ``sd / sqrt(n)``, the standard error of the mean difference;
- ``ci``: a percentile bootstrap confidence interval of the mean (:data:`BOOTSTRAP_RESAMPLES`
  resamples of the pairs with a fixed seed, :data:`BOOTSTRAP_SEED`, so the same data always give
  the same interval), at :data:`CI_LEVEL`;
- the noise floor: the sample SD of a baseline's reruns (the same code run again: the seed, the
  machine and the scheduler's noise; in a study, the configurations of the ``scripted`` adapter,
  fixed edits whatever happens, or those named), pooled within configurations, and ``sqrt(2)``
  times it, the SD of the difference of two such runs. ``beyond_noise`` is true when the mean
  difference is larger than that floor.

Below two pairs there is no SD, SEM or interval (``None``). Pure functions; no UI.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from onegc_tui.views.outcomes import SessionOutcome
from onegc_tui.views.statistics import sample_std, sem
from tasks import Direction

BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 20_261_202
CI_LEVEL = 0.95
SD_LABEL = "SD (sample, ddof=1): spread of single paired differences"
SEM_LABEL = "SEM = SD/sqrt(n): standard error of the mean difference"
CI_LABEL = f"{CI_LEVEL:.0%} bootstrap CI of the mean ({BOOTSTRAP_RESAMPLES} resamples, seed {BOOTSTRAP_SEED})"
NOISE_LABEL = "noise floor: sqrt(2) x SD of baseline reruns (the SD of a difference between two reruns)"


@dataclass(frozen=True, slots=True)
class NoiseFloor:
    """The spread of reruns of one fixed configuration (``source``): ``sd`` of its scores and
    ``diff_sd = sqrt(2) * sd``, what a difference between two of its runs typically is."""

    source: str
    n: int
    sd: float | None

    @property
    def diff_sd(self) -> float | None:
        return None if self.sd is None else math.sqrt(2.0) * self.sd


@dataclass(frozen=True, slots=True)
class PairedComparison:
    """A vs B on one task (see the module docstring for each figure's meaning)."""

    task: str
    a: str
    b: str
    direction: Direction
    pairs: tuple[tuple[int, float, float], ...]  # (repeat, score of A, score of B)
    differences: tuple[float, ...]  # oriented: positive = A better
    unpaired: tuple[str, ...]  # session ids without a partner that counts
    mean: float | None
    sd: float | None
    sem: float | None
    ci: tuple[float, float] | None
    noise: NoiseFloor | None = None

    @property
    def n(self) -> int:
        return len(self.differences)

    @property
    def beyond_noise(self) -> bool | None:
        """Is the mean difference larger than the noise floor? None without either."""
        if self.mean is None or self.noise is None or self.noise.diff_sd is None:
            return None
        return abs(self.mean) > self.noise.diff_sd

    @property
    def verdict(self) -> str:
        """One short phrase for tables: who is ahead, and whether the CI excludes zero."""
        if self.mean is None:
            return "no pairs"
        if self.ci is None:
            return f"{self.n} pair: too few for an interval"
        lo, hi = self.ci
        if lo > 0:
            return f"{self.a} better"
        if hi < 0:
            return f"{self.b} better"
        return "CI includes 0"


def bootstrap_ci(values: Sequence[float], level: float = CI_LEVEL, resamples: int = BOOTSTRAP_RESAMPLES,
                 seed: int = BOOTSTRAP_SEED) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the mean of ``values`` (None below two values)."""
    n = len(values)
    if n < 2:
        return None
    rng = random.Random(seed)
    means = sorted(math.fsum(rng.choices(values, k=n)) / n for _ in range(resamples))
    tail = (1.0 - level) / 2.0
    lo = means[int(math.floor(tail * (resamples - 1)))]
    hi = means[int(math.ceil((1.0 - tail) * (resamples - 1)))]
    return (lo, hi)


def noise_floor(source: str, groups: Iterable[Iterable[SessionOutcome]]) -> NoiseFloor:
    """The noise floor from reruns of fixed configurations (``groups``: each one configuration's
    sessions; their successful, finished scores): the pooled within-configuration sample SD
    (variances weighted by their degrees of freedom), so two fixed configurations of different
    means do not count their gap as noise. ``sd`` is None below two reruns in every group."""
    ss = 0.0
    df = n = 0
    for group in groups:
        scores = [o.score for o in group if o.succeeded and o.score is not None]
        n += len(scores)
        if len(scores) >= 2:
            mean = statistics.fmean(scores)
            ss += math.fsum((x - mean) ** 2 for x in scores)
            df += len(scores) - 1
    return NoiseFloor(source, n, math.sqrt(ss / df) if df else None)


def _by_repeat(outcomes: Iterable[SessionOutcome]) -> dict[int, SessionOutcome]:
    """Finished sessions by repeat (a retried repeat: the latest start stands)."""
    out: dict[int, SessionOutcome] = {}
    for o in sorted((o for o in outcomes if o.finished), key=lambda o: o.started_at or 0.0):
        out[o.repeat] = o
    return out


def compare(task: str, a: str, a_runs: Iterable[SessionOutcome], b: str, b_runs: Iterable[SessionOutcome],
            direction: Direction, noise: NoiseFloor | None = None) -> PairedComparison:
    """A vs B on ``task`` by repeat (see the module docstring)."""
    ra, rb = _by_repeat(a_runs), _by_repeat(b_runs)
    pairs: list[tuple[int, float, float]] = []
    unpaired: list[str] = []
    for rep in sorted(set(ra) | set(rb)):
        sa, sb = ra.get(rep), rb.get(rep)
        if sa is not None and sb is not None and sa.succeeded and sb.succeeded:
            assert sa.score is not None and sb.score is not None
            pairs.append((rep, sa.score, sb.score))
        else:
            unpaired += [s.session_id for s in (sa, sb) if s is not None]
    sign = 1.0 if direction == "higher" else -1.0
    diffs = [sign * (x - y) for _, x, y in pairs]
    mean = statistics.fmean(diffs) if diffs else None
    return PairedComparison(task, a, b, direction, tuple(pairs), tuple(diffs), tuple(unpaired), mean,
                            sample_std(diffs), sem(diffs), bootstrap_ci(diffs), noise)


__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "BOOTSTRAP_SEED",
    "CI_LABEL",
    "CI_LEVEL",
    "NOISE_LABEL",
    "SD_LABEL",
    "SEM_LABEL",
    "NoiseFloor",
    "PairedComparison",
    "bootstrap_ci",
    "compare",
    "noise_floor",
    "study_comparisons",
]


NOISE_ADAPTERS = ("scripted",)  # fixed code whatever happens: its reruns measure the harness's noise


def study_comparisons(outcomes: Iterable[SessionOutcome], noise_from: Sequence[str] | None = None
                      ) -> list[PairedComparison]:
    """Every pair of configurations (matrix row labels, in order) on every task they share, each
    with the task's noise floor: reruns of the configurations named in ``noise_from`` (row labels),
    by default those of a :data:`NOISE_ADAPTERS` adapter."""
    from onegc_tui.results.matrix import outcome_row_label, task_sort_key
    from onegc_tui.views.outcomes import resolve_task

    groups: dict[str, dict[str, list[SessionOutcome]]] = {}
    adapters: dict[str, str] = {}
    directions: dict[str, Direction] = {}
    for o in outcomes:
        spec = resolve_task(o.task)
        if spec is None:
            continue
        name = outcome_row_label(o)
        adapters[name] = o.agent
        directions[spec.short] = spec.direction
        groups.setdefault(spec.short, {}).setdefault(name, []).append(o)
    out = []
    for task in sorted(groups, key=task_sort_key):
        by_label = groups[task]
        chosen = [n for n in by_label if (n in noise_from if noise_from is not None else adapters[n] in NOISE_ADAPTERS)]
        noise = noise_floor(", ".join(sorted(chosen)), [by_label[n] for n in chosen]) if chosen else None
        labels = sorted(by_label)
        for i, a in enumerate(labels):
            for b in labels[i + 1:]:
                out.append(compare(task, a, by_label[a], b, by_label[b], directions[task], noise))
    return out
