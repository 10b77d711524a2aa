"""The unofficial test-best: the best scored-split score over every checkpoint of a session.

The paper (arXiv 1GC-7RC, step 5) says "the best scored checkpoint" but does not state by which
split's score checkpoints are ranked. onegc's official result ranks by the harness's validation
score (``val-best``, runner/scoring/official.py); ranking by the scored split itself is selection on the
held-out labels and is biased upwards, more so the more checkpoints a session saves. Some readers
of the paper will nonetheless read "best scored" as the best test score, so result.json carries
that figure too, under ``unofficial`` and labelled, beside the official result: it never enters
the matrix, the aggregate or the ranking.

Where the scored split is held out (T4-T6), every checkpoint is re-evaluated on it for this figure
(the official ones already are), at most :data:`MAX_EXTRA_EVALUATIONS` more after the official
choice; where the scored split is validation (T0-T3, T7), each checkpoint's live score is already
one, and its official re-evaluation replaces it where there is one: no extra evaluation (those
tasks' checkpoints are the costly ones to evaluate). When the cap or a full disk leaves some out,
``complete`` is false and ``checkpoints_scored`` < ``checkpoints_found`` says how many stood.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence

LABEL = ("unofficial: the best scored-split score over all checkpoints, picked with the held-out labels "
         "(the paper does not state its ranking key); not the official result, never ranked")
KEY = "test_best"
MAX_EXTRA_EVALUATIONS = 50  # re-evaluations after the official choice, for this figure only


def still_to_evaluate(found_at: Mapping[str, float], evaluated: Iterable[str],
                      limit: int = MAX_EXTRA_EVALUATIONS) -> list[str]:
    """Checkpoints without a scored-split evaluation yet, in budget-time order, at most ``limit``."""
    done = set(evaluated)
    todo = sorted((t, label) for label, t in found_at.items() if label not in done)
    return [label for _, label in todo[:max(0, limit)]]


def candidates(rows: Sequence[Mapping], live: Mapping[str, float | None], found_at: Mapping[str, float],
               scored_is_selection: bool) -> list[dict]:
    """The rows the figure is chosen from: the evaluated ones, and where the scored split is the
    selection split, every other checkpoint with its live score."""
    out = [dict(r) for r in rows]
    if scored_is_selection:
        done = {r["checkpoint"] for r in rows}
        out += [{"checkpoint": label, "budget_elapsed_s": round(found_at.get(label, 0.0), 1), "official": value}
                for label, value in live.items() if label not in done]
    return out


def best_scored(rows: Sequence[Mapping], better: Callable[[float, float], bool], split: str,
              found: int) -> dict:
    """The ``unofficial`` block of result.json from the evaluated rows (each with ``checkpoint``,
    ``budget_elapsed_s`` and ``official``, the scored-split score): the best score, its checkpoint
    and when it appeared (ties: the earlier), and how many checkpoints it was chosen from."""
    scored = [r for r in rows if isinstance(r.get("official"), int | float) and math.isfinite(r["official"])]
    best: Mapping | None = None
    for r in sorted(scored, key=lambda r: r.get("budget_elapsed_s") or 0.0):
        if best is None or better(r["official"], best["official"]):
            best = r
    return {
        KEY: {
            "label": LABEL,
            "split": split,
            "value": best["official"] if best else None,
            "checkpoint": best["checkpoint"] if best else None,
            "budget_elapsed_s": best.get("budget_elapsed_s") if best else None,
            "checkpoints_scored": len(scored),
            "checkpoints_found": found,
            "complete": len(scored) == found,
        }
    }
