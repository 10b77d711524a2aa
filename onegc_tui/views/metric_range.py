"""The range a metric can take, so that a plot's axis stays inside it: an accuracy, an mIoU or an
AUROC lies in [0, 1] (its axis never runs past 1, nor below 0); a loss, an MSE or bits per byte
is at least 0; anything else is unbounded. Read from the metric's name (``task.toml``'s
``metric``: ``val_acc``, ``val_miou``, ``test_auroc``, ``val_bpb``, ``test_mse``), so a task added
later gets its bounds without a field of its own.
"""

from __future__ import annotations

from collections.abc import Iterable

Bounds = tuple[float | None, float | None]
UNBOUNDED: Bounds = (None, None)
SHARE_WORDS = ("acc", "top1", "top5", "miou", "iou", "auroc", "auc", "f1", "dice", "precision", "recall")
NON_NEGATIVE_WORDS = ("mse", "mae", "rmse", "bpb", "bits", "loss", "perplexity", "ppl")


def metric_bounds(metric: str | None) -> Bounds:
    """``(0, 1)`` for a share, ``(0, None)`` for a loss, ``(None, None)`` for what is not known."""
    name = (metric or "").lower()
    if any(w in name for w in SHARE_WORDS):
        return (0.0, 1.0)
    if any(w in name for w in NON_NEGATIVE_WORDS):
        return (0.0, None)
    return UNBOUNDED


def task_bounds(task: str | None) -> Bounds:
    """The bounds of a task's metric (by folder name or short id); unbounded for an unknown task."""
    from tasks import UnknownTask, get_task

    try:
        return metric_bounds(get_task(task or "").metric)
    except UnknownTask:
        return UNBOUNDED


def padded_range(values: Iterable[float], bounds: Bounds = UNBOUNDED, share: float = 0.05) -> tuple[float, float] | None:
    """The values' range with a margin of ``share`` each side (a flat series: of its value, or 1),
    kept inside ``bounds``; None without values."""
    ys = list(values)
    if not ys:
        return None
    lo, hi = min(ys), max(ys)
    pad = (hi - lo) * share or abs(hi) * share or 1.0
    lo, hi = lo - pad, hi + pad
    if bounds[0] is not None:
        lo = max(lo, bounds[0])
    if bounds[1] is not None:
        hi = min(hi, bounds[1])
    return (lo, hi) if hi > lo else (lo - pad, hi + pad)
