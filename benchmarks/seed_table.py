"""Summarise baseline runs over seeds: mean ± std under val-best, test-best beside it, the paper.

``reproduce_baselines.py TASK --seeds N`` runs the baseline N times and calls :func:`summarise`
and :func:`table` here. The paper reports one run of each baseline, so the question "does the
recipe reproduce the paper?" is answered against the spread of one run: the paper's value agrees
**within noise** when it lies within 2 sample standard deviations (ddof = 1) of our seed mean,
and **differs beyond noise** otherwise. With fewer than 2 scored seeds there is no spread and no
verdict. The rule is deliberately loose (two sigma of a single draw, not of a mean): it flags only
a recipe that lands where one run of it rarely would.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

NOISE_SIGMAS = 2.0


@dataclass(frozen=True)
class SeedSummary:
    task: str
    metric: str
    recipe: str
    seeds: list[int]
    val_best: list[float]  # the official score of each seed (its val-best checkpoint on the scored split)
    test_best: list[float]  # what picking by the scored split would report (T4-T6); empty otherwise
    paper: float | None

    @property
    def n(self) -> int:
        return len(self.val_best)

    def mean_std(self, values: list[float]) -> tuple[float | None, float | None]:
        if not values:
            return None, None
        return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else None)

    @property
    def verdict(self) -> str:
        mean, std = self.mean_std(self.val_best)
        if self.paper is None or mean is None:
            return "no paper value" if self.paper is None else "no scored seed"
        if std is None:
            return "one seed: no spread"
        gap = mean - self.paper
        if abs(gap) <= NOISE_SIGMAS * std:
            return f"agrees within noise ({gap:+.4f}, {abs(gap) / std:.1f} sd)" if std > 0 else "agrees"
        return f"differs beyond noise ({gap:+.4f}, {abs(gap) / std:.1f} sd)" if std > 0 else f"differs ({gap:+.4f}, no spread)"


def summarise(task: str, metric: str, recipe: str, runs: list[dict], paper: float | None) -> SeedSummary:
    """``runs``: the per-seed summaries of reproduce_baselines (``seed``, ``score``,
    ``if_picked_by_scored_split``); seeds without a scored checkpoint are left out of the figures."""
    scored = [r for r in runs if r.get("score") is not None]
    return SeedSummary(
        task=task, metric=metric, recipe=recipe, seeds=[r["seed"] for r in scored],
        val_best=[float(r["score"]) for r in scored],
        test_best=[float(r["if_picked_by_scored_split"]) for r in scored
                   if r.get("if_picked_by_scored_split") is not None and r.get("split") != "val"],
        paper=paper,
    )


def _fmt(mean: float | None, std: float | None) -> str:
    if mean is None:
        return "—"
    return f"{mean:.4f} ± {std:.4f}" if std is not None else f"{mean:.4f}"


def table(rows: list[SeedSummary]) -> str:
    """A markdown table, one line per (task, recipe)."""
    out = ["| task | recipe | seeds | val-best (official) mean ± sd | test-best mean ± sd | paper baseline "
           "| val-best − paper | verdict |", "|---|---|---|---|---|---|---|---|"]
    for s in rows:
        vm, vs = s.mean_std(s.val_best)
        tm, ts = s.mean_std(s.test_best)
        diff = f"{vm - s.paper:+.4f}" if vm is not None and s.paper is not None else "—"
        paper = f"{s.paper:g}" if s.paper is not None else "—"
        seeds = f"{s.n} ({', '.join(map(str, s.seeds))})"
        out.append(f"| {s.task} ({s.metric}) | {s.recipe} | {seeds} | {_fmt(vm, vs)} | {_fmt(tm, ts)} | {paper} "
                   f"| {diff} | {s.verdict} |")
    return "\n".join(out)
