"""The official result of a session (paper step 5): selected by validation, judged by the harness.

Every checkpoint has a trusted validation score from the sealed scorer (runner/scoring/scorer.py): its
live one, else one from its re-evaluation after the session on the session's device (a
checkpoint whose live scoring failed — a CPU timeout, CUDA-only code — is never dropped). The
official checkpoint is the best by that score (``val-best``; the paper's "overall best" among
scored checkpoints, then ``prepare.py --eval``), and its score on the task's scored split is the
official result. Ranking by a test score would be selection on the held-out split; ranking by
the agent's self-reported figure would let it choose. The self-reported figure is recorded,
never used. The best of each 5-minute window of budget time, by the same rule, is re-evaluated
on the scored split as the session's trajectory (the anytime curves); it does not compete.
For T1-T3 and T7 the scored split is validation: the rule is the paper's "best scored checkpoint".

The paper's budget is the budget (INTEGRITY.md V5): a checkpoint that appeared after it ran out —
in the grace period of the stop, an agent that ignores SIGINT and SIGTERM training and saving —
never competes (:func:`within_budget`). It is recorded with the verdict ``after_budget``.

The work after the session is bounded, whatever the agent saved (issue 38 part 4, INTEGRITY.md
R2): at most :func:`evaluation_cap` re-evaluations — one per 5-minute window of the budget
(the trajectory), one for the val-best, :data:`UNSCORED_PER_WINDOW` per window for checkpoints
without a live score (the newest of each window first: the agent's latest model there), and the
fallback's — and none started once the phase's time (:data:`POST_SESSION_S`) is spent. What is left
out is named in :attr:`Selection.left_out` with its reason, and result.json records it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import dataclass, field

from runner.integrity.checks import verdict
from runner.wire.verdicts import Verdict

SELECTION = "val-best"  # recorded in the contract
WINDOW_S = 300.0  # paper step 5: the best of each 5-minute window
MAX_FALLBACK = 10  # when the val-best's official evaluation fails, this many more of the ranking are tried
# checkpoints without a live validation score re-evaluated per window, newest first: one saved every
# 20 s of a window whose live scoring failed throughout (CUDA-only code scored live on the CPU) is judged
UNSCORED_PER_WINDOW = 15
# no re-evaluation starts after this long (one in flight ends within its task's eval_timeout_s): an
# honest session's official phase is a few evaluations of seconds to minutes each
POST_SESSION_S = 900.0
CAPPED = "not re-evaluated: the post-session cap of {cap} evaluations was reached"
TIMED_OUT = "not re-evaluated: the post-session phase's {s:.0f} s were spent"
UNSCORED_LEFT = "not re-evaluated: no live score, and {n} newer checkpoints of its 5-minute window were tried first"
NOT_NEEDED = "not re-evaluated: neither the val-best nor a window's best (its live score stands)"


def windows(budget_s: float, window_s: float = WINDOW_S) -> int:
    """The number of windows of budget time (a checkpoint of the grace falls in the last + 1)."""
    return max(1, math.ceil(budget_s / window_s)) + 1


def evaluation_cap(budget_s: float, max_fallback: int = MAX_FALLBACK, window_s: float = WINDOW_S) -> int:
    """The most re-evaluations the official phase makes for a session of ``budget_s``."""
    w = windows(budget_s, window_s)
    return w + 1 + w * UNSCORED_PER_WINDOW + max_fallback


@dataclass(frozen=True)
class Candidate:
    label: str
    elapsed_s: float  # budget time at which it appeared
    val: float | None  # trusted validation score; None while unknown or when scoring failed


def _known(c: Candidate) -> bool:
    return c.val is not None and math.isfinite(c.val)


def within_budget(cands: list[Candidate], end_s: float) -> tuple[list[Candidate], dict[str, Verdict]]:
    """(the checkpoints that appeared by ``end_s`` seconds of budget time — when the budget ran
    out, or the session began to stop — and ``{label: verdict}`` of those that appeared after it).

    A checkpoint's time is the budget time at which it was written, as the session stamps it
    (the watcher's sighting, moved earlier by the file's own mtime by a few seconds at most)."""
    inside = [c for c in cands if c.elapsed_s <= end_s]
    late = {c.label: verdict("after_budget", "disqualifies", f"saved {c.elapsed_s - end_s:.0f} s after the budget ran "
                             f"out ({end_s:.0f} s); never the official result") for c in cands if c.elapsed_s > end_s}
    return inside, late


def ranked(cands: list[Candidate], better: Callable[[float, float], bool]) -> list[Candidate]:
    """Checkpoints with a validation score, best first (ties: the earlier checkpoint)."""
    out: list[tuple[float, Candidate]] = []
    for c in sorted((c for c in cands if _known(c)), key=lambda c: c.elapsed_s):
        val = c.val if c.val is not None else math.nan  # known: never None
        at = next((i for i, (o, _) in enumerate(out) if better(val, o)), len(out))
        out.insert(at, (val, c))
    return [c for _, c in out]


def window_best(cands: list[Candidate], better: Callable[[float, float], bool],
                window_s: float = WINDOW_S) -> list[Candidate]:
    """The val-best checkpoint of each window of budget time, in window order."""
    windows: dict[int, list[Candidate]] = {}
    for c in cands:
        windows.setdefault(int(c.elapsed_s // window_s), []).append(c)
    out = []
    for w in sorted(windows):
        top = ranked(windows[w], better)
        if top:
            out.append(top[0])
    return out


@dataclass(frozen=True)
class Evaluation:
    """A checkpoint's official re-evaluation: its validation score and its scored-split score."""

    val: float | None
    official: float | None
    error: str | None = None


@dataclass(frozen=True)
class Selection:
    best: str | None  # the official checkpoint (None: no checkpoint could be scored)
    evaluations: dict[str, Evaluation]  # every checkpoint re-evaluated, by label
    trajectory: list[str]  # each window's val-best, in window order
    vals: dict[str, float | None]  # the final validation score of every checkpoint
    left_out: dict[str, str] = field(default_factory=dict)  # checkpoints the bounds left unevaluated, and why


class _Budget:
    """The official phase's bounds: a count and a time; says why an evaluation may not start."""

    def __init__(self, cap: int | None, time_left: Callable[[], float] | None):
        self.cap, self.time_left, self.used = cap, time_left, 0

    def refusal(self) -> str | None:
        if self.cap is not None and self.used >= self.cap:
            return CAPPED.format(cap=self.cap)
        if self.time_left is not None and self.time_left() <= 0:
            return TIMED_OUT.format(s=POST_SESSION_S)
        return None


def select(cands: list[Candidate], better: Callable[[float, float], bool], evaluate: Callable[[str], Evaluation],
           max_fallback: int = MAX_FALLBACK, window_s: float = WINDOW_S, max_evaluations: int | None = None,
           time_left: Callable[[], float] | None = None) -> Selection:
    """Paper step 5 by trusted validation scores, re-evaluating through ``evaluate(label)``.

    1. Checkpoints without a validation score (their live scoring failed, never ran, or was
       skipped) are re-evaluated, newest of each window first, :data:`UNSCORED_PER_WINDOW` per
       window: none is dropped for a live failure alone.
    2. The val-best and each window's val-best are re-evaluated on the scored split. A
       re-evaluation's validation score replaces the live one (the official device has the last
       word), which may reorder the ranking: repeated until every one wanted is evaluated.
    3. The official checkpoint is the val-best whose re-evaluation gave a score; when it failed,
       the next by validation (at most ``max_fallback`` more evaluations).

    No evaluation starts past ``max_evaluations`` (None: no cap) or once ``time_left()`` is not
    positive; the checkpoints left out are named in ``left_out`` with the reason."""
    vals = {c.label: c.val for c in cands}
    elapsed = {c.label: c.elapsed_s for c in cands}
    done: dict[str, Evaluation] = {}
    left_out: dict[str, str] = {}
    budget = _Budget(max_evaluations, time_left)

    def current() -> list[Candidate]:
        return [Candidate(label, elapsed[label], vals[label]) for label in vals]

    def run(label: str) -> bool:
        why = budget.refusal()
        if why is not None:
            left_out.setdefault(label, why)
            return False
        budget.used += 1
        left_out.pop(label, None)
        result = evaluate(label)
        done[label] = result
        if result.val is not None:
            vals[label] = result.val
        return True

    unscored: dict[int, list[str]] = {}
    for label in sorted((label for label, v in vals.items() if v is None), key=lambda lb: -elapsed[lb]):
        unscored.setdefault(int(elapsed[label] // window_s), []).append(label)
    for labels in unscored.values():
        for label in labels[:UNSCORED_PER_WINDOW]:
            run(label)
        for label in labels[UNSCORED_PER_WINDOW:]:
            left_out.setdefault(label, UNSCORED_LEFT.format(n=UNSCORED_PER_WINDOW))
    while True:
        cs = current()
        wanted = [c.label for c in ranked(cs, better)[:1] + window_best(cs, better, window_s) if c.label not in done]
        if not wanted or not all([run(label) for label in dict.fromkeys(wanted)]):  # each refused one is named
            break
    best = None
    extra = 0
    for c in ranked(current(), better):
        if c.label not in done:
            if extra >= max_fallback or not run(c.label):
                break
            extra += 1
        if done[c.label].official is not None:
            best = c.label
            break
    trajectory = [c.label for c in window_best(current(), better, window_s) if c.label in done]
    return Selection(best, done, trajectory, vals, {k: v for k, v in left_out.items() if k not in done})


def not_reevaluated(found: Iterable[str], evaluated: Container[str], left_out: Mapping[str, str]) -> dict:
    """result.json's record of the checkpoints without an official re-evaluation: how many, and how
    many for each reason (a few reasons, whatever the count)."""
    reasons = Counter(left_out.get(label, NOT_NEEDED) for label in found if label not in evaluated)
    return {"count": sum(reasons.values()), "by_reason": dict(reasons)}


@dataclass(frozen=True)
class LiveChoice:
    """The official choice made from the live scores alone."""

    label: str
    val: float  # its live validation score
    official: float | None  # that score where the scored split is the selection split, else None


def from_live_scores(cands: list[Candidate], better: Callable[[float, float], bool],
                     scored_is_selection: bool) -> LiveChoice | None:
    """The official choice where no re-evaluation could give a score because the disk filled up:
    the val-best by live validation scores (the same rule, without the official device's last
    word). Its live score is the result only where the scored split is the selection split
    (T1-T3, T7); elsewhere the checkpoint stands without a score. None without a live score."""
    top = ranked(cands, better)
    if not top:
        return None
    val = top[0].val
    assert val is not None  # ranked() keeps only checkpoints with a validation score
    return LiveChoice(top[0].label, val, val if scored_is_selection else None)
