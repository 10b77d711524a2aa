"""Cost-normalised views: what a configuration's results cost, and its score per dollar.

A session's cost is what its agent CLI reported or what ``runner/agents/prices.toml`` prices
its tokens at (``sessions.cost_usd``); a session with no cost recorded (the scripted agent, a
model whose price is unknown) has none here, and never a cost of $0. "Score per dollar" is on
the paper's relative scale (improvement over the baseline, so a session that only reproduces the
baseline is worth 0), per cell: the mean relative improvement of the successful repeats divided
by the mean cost of every finished repeat (failures cost money too).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from onegc_tui.results.matrix import outcome_row_label
from onegc_tui.views.outcomes import SessionOutcome, resolve_task
from onegc_tui.views.statistics import relative_improvement

PER_DOLLAR_LABEL = "mean relative improvement over the baseline per mean USD per session (failures' cost included)"


@dataclass(frozen=True, slots=True)
class CostCell:
    """One configuration × task: sessions with a known cost, their mean cost and the score per dollar."""

    label: str
    task: str
    n_costed: int
    n_finished: int
    mean_cost_usd: float | None
    mean_relative: float | None
    per_dollar: float | None


def cost_cells(outcomes: Iterable[SessionOutcome], costs: Mapping[str, float | None]) -> list[CostCell]:
    """The cost view of every configuration × task (``costs``: USD by session id; None = unknown)."""
    groups: dict[tuple[str, str], list[SessionOutcome]] = {}
    for o in outcomes:
        spec = resolve_task(o.task)
        if spec is None or not o.finished:
            continue
        groups.setdefault((outcome_row_label(o), spec.short), []).append(o)
    out = []
    for (label, task), runs in sorted(groups.items()):
        spec = resolve_task(task)
        assert spec is not None
        known = [c for c in (costs.get(o.session_id) for o in runs) if c is not None and math.isfinite(c) and c > 0]
        rel = [relative_improvement(o.score, spec.baseline_score, spec.direction) for o in runs
               if o.succeeded and o.score is not None and spec.baseline_score]
        mean_cost = statistics.fmean(known) if known and len(known) == len(runs) else None
        mean_rel = statistics.fmean(rel) if rel else None
        per = mean_rel / mean_cost if mean_rel is not None and mean_cost else None
        out.append(CostCell(label, task, len(known), len(runs), mean_cost, mean_rel, per))
    return out


__all__ = ["PER_DOLLAR_LABEL", "CostCell", "cost_cells"]
