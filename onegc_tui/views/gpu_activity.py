"""What a session's GPU did, by GPM (runner/session/gpm.py): the share of its budget the tensor
cores were active, for history and the report (issue 50).

NVML's utilisation says a kernel ran; GPM's ``tensor_active_pct`` says what share of an interval
any tensor core worked. A session's tensor-active time is the sum over its samples of that share
times the budget time the sample stands for (pauses stand for none: the budget axis is flat
there; a gap in the record stands for at most :data:`MAX_GAP_S`), over the budget: a GPU busy the
whole budget at 30 % tensor activity reads 30 %. Several GPUs: their mean. A session recorded
without GPM (an older GPU, no GPU) has no share, and says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from onegc_tui.store import Store
from onegc_tui.store import queries as sql
from onegc_tui.views.timeline import BudgetAxis, budget_axis

MAX_GAP_S = 5.0  # budget seconds one sample stands for at most (the GPU thread samples every second)
FIRST_S = 1.0  # the first sample stands for the period before it


def tensor_active_s(samples: Sequence[tuple[float, int | None, float]], axis: BudgetAxis, budget_s: float) -> float:
    """Budget seconds the tensor cores were active, per GPU on average: ``samples`` are ``(ts, gpu,
    tensor_pct)`` in order; only the budget's own time counts (not the official phase after it)."""
    active: dict[int, float] = {}
    last: dict[int, float] = {}
    for ts, gpu, pct in samples:
        g, at = gpu or 0, axis.at(ts)
        span = min(MAX_GAP_S, at - last[g]) if g in last else FIRST_S
        last[g] = at
        span = max(0.0, min(span, budget_s - (at - span)))  # the part of it inside the budget
        active[g] = active.get(g, 0.0) + pct / 100.0 * span
    return sum(active.values()) / len(active) if active else 0.0


def tensor_share(store: Store, sid: str) -> float | None:
    """The share of a session's budget its tensor cores were active; None without GPM figures."""
    row = store.session(sid)
    if row is None or not row.get("budget_s"):
        return None
    samples = [(ts, gpu, tensor) for ts, gpu, _, tensor, _ in sql.gpm_series(store, sid) if tensor is not None]
    if not samples:
        return None
    return tensor_active_s(samples, budget_axis(store, sid, row), row["budget_s"]) / row["budget_s"]


def mean_share(shares: Iterable[float | None]) -> tuple[float | None, int]:
    """The mean of the shares known, and how many there were (sessions without GPM are left out)."""
    known = [s for s in shares if s is not None]
    return (sum(known) / len(known) if known else None), len(known)


def share_words(share: float | None, n: int | None = None, of: int | None = None) -> str:
    """``tensor cores active 31% of the budget (GPM, 2 of 3 sessions)``, or why there is no figure."""
    if share is None:
        return "tensor cores: no GPM figures (an older GPU, or none)"
    counted = f", {n} of {of} sessions" if n is not None and of is not None and n != of else ""
    return f"tensor cores active {share:.1%} of the budget (GPM{counted})"


__all__ = ["mean_share", "share_words", "tensor_active_s", "tensor_share"]
