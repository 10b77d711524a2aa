"""What the history screen shows under the highlighted cell beyond its statistics: the anytime
curves of its repeats by the official rule (mean, band, best-of-k), its paired comparisons with
the other configurations on the task, and its time ledger; as records and as plain lines.

Reads a ``Store`` opened on the calling thread (the screen's worker); no UI.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from onegc_tui.results.paired import PairedComparison, study_comparisons
from onegc_tui.results.study_data import load_session
from onegc_tui.store import Store
from onegc_tui.views import monitor_data
from onegc_tui.views.anytime import FRACTIONS, RepeatCurves, repeat_curves
from onegc_tui.views.format import clock, fmt_score
from onegc_tui.views.outcomes import resolve_task
from onegc_tui.views.time_ledger import AGENT_PARTS, PART_LABELS, summed


@dataclass(frozen=True)
class CellInsights:
    label: str
    curves: RepeatCurves | None  # by the official rule, raw scale
    comparisons: tuple[PairedComparison, ...]  # this configuration against each other one on the task
    ledger: dict[str, float]  # the time ledger summed over the cell's finished sessions
    n_ledgers: int


def cell_insights(store: Store, study: str | None, task: str, label: str, ids: Sequence[str]) -> CellInsights:
    """The insights of the cell (``label`` × ``task``) whose finished sessions are ``ids``."""
    spec = resolve_task(task)
    wanted = set(ids)
    outcomes = [o for o in monitor_data.outcomes(store, study, include_demo=True)
                if (s := resolve_task(o.task)) is not None and spec is not None and s.short == spec.short]
    sessions = [load_session(store, o) for o in outcomes if o.session_id in wanted]
    curves = [s.curve for s in sessions if s.curve is not None]
    rc = repeat_curves(label, task, curves, spec.direction) if curves and spec is not None else None
    comps = tuple(c for c in study_comparisons(outcomes) if label in (c.a, c.b))
    ledgers = [s.ledger for s in sessions if s.ledger is not None]
    return CellInsights(label, rc, comps, summed(ledgers), len(ledgers))


def insight_lines(ci: CellInsights) -> list[str]:
    """Plain lines for the cell's detail box."""
    lines = []
    if ci.curves is not None:
        grid = ci.curves.band.grid
        at = {f: ci.curves.best_of_k[round(f * (len(grid) - 1))] for f in FRACTIONS}
        lines.append(f"best of {ci.curves.k} (official rule) at " + "  ".join(
            f"{f:.0%}: {fmt_score(v)}" for f, v in at.items()))
    for c in ci.comparisons:
        sign = 1.0 if c.a == ci.label else -1.0
        other = c.b if c.a == ci.label else c.a
        if c.mean is None:
            lines.append(f"vs {other}: no pairs")
            continue
        lo, hi = sorted((sign * c.ci[0], sign * c.ci[1])) if c.ci else (None, None)
        ci_text = f"95% CI [{lo:+.4f}, {hi:+.4f}]" if lo is not None and hi is not None else "no CI"
        noise = f" · noise {c.noise.diff_sd:.4f}" if c.noise and c.noise.diff_sd is not None else ""
        lines.append(f"vs {other}: paired diff {sign * c.mean:+.4f} (+: this better) over {c.n} · "
                     f"SD {fmt_score(c.sd)} · SEM {fmt_score(c.sem)} · {ci_text}{noise}")
    wall = ci.ledger.get("wall_s", 0.0)
    if wall > 0:
        parts = "  ".join(f"{PART_LABELS[k]} {ci.ledger.get(k, 0.0) / wall:.0%}" for k in AGENT_PARTS)
        lines.append(f"time ({ci.n_ledgers} sessions, {clock(wall)}): {parts}")
    return lines


__all__ = ["CellInsights", "cell_insights", "insight_lines"]
