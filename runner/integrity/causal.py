"""Causal evaluation of sequences (INTEGRITY.md V3, V7): a prediction may not depend on what it predicts.

On T1 a window's inputs hold its own later characters (the targets of its earlier positions). The
probe rides inside the official evaluation (runner/integrity/passes.py): every window has a twin
that shares its first ``cut`` characters, secret, and goes on with other text; the two are shown in
different passes, never together, each pass looking like every other. Before the cut a causal model
predicts the twin exactly as the window; a model that reads ahead cannot, at ``cut - 1`` at least,
and it cannot know where that is: the twin is in another child. (T6's windows hold each other's
horizons; there the scorer rules reading across out by construction, streaming the rows in time
order: onegc_kit.RowStream. T1's windows are spread over the passes so that no window shares one with
another whose inputs hold its targets: reading across windows is ruled out by construction too.)

How it is decided (:func:`judge`), on log-probabilities, position by position:

- A position *moved* when its squared distance to the same position of the other row exceeds the
  numerical floor: :data:`REL_TOL` of the predictions' scale, a trusted constant measured on honest
  models (benchmarks/causal_power.py), never anything the model's own predictions set.
- **Nondeterministic**: the copies' pass shows rows already shown elsewhere. If any copy moved from
  its original, the model's predictions differ between two identical inputs: that is a verdict of
  its own (``nondeterministic``, a look), not a wider threshold.
- **Reads ahead** (disqualifies): a deterministic model with any position before a cut moved. A
  nondeterministic one is held to an exact comparison instead: each twin's largest distance over the
  :data:`LAST` positions before its cut against the copies' over the same span before a cut drawn
  the same way (a rank test; a causal model's twins and copies are exchangeable): p at most
  :data:`P_STRONG` disqualifies, at most :data:`P_LOOK` asks for a look. Adding noise so buys nothing:
  the copies carry the same noise.
- A probe that could not be judged (the passes' predictions cannot be compared) is
  ``causality_unchecked`` (a look), never a silent pass.

Known limit: a model that carries the scored split itself (V2, a lookup or a buffer) can predict
the same either way; that is the canaries' finding, not this one's.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from runner.integrity.checks import verdict
from runner.wire.verdicts import Strength, Verdict

if TYPE_CHECKING:
    import numpy as np

    from runner.integrity.passes import Assembled, Layout

REL_TOL = 1e-3  # of the predictions' RMS per value; on CPU an honest model moves by 0 (benchmarks/causal_power.py)
LAST = 8  # positions before a cut the nondeterministic test looks at (a read of up to 8 ahead shows there)
P_STRONG = 1e-4  # the rank test: disqualifies
P_LOOK = 1e-3  # asks for a look
FOREIGN_SPLIT = "train"  # where a twin's other text comes from: never a window's own future
SEQUENCE_TASKS = frozenset({"t1_shakespeare"})  # whose windows hold their own later positions' targets


@dataclass(frozen=True)
class Outcome:
    """What the probe found: ``verdicts`` (reads ahead, nondeterministic), ``error`` (it could not be
    judged) or neither (passed); ``detail`` says what was measured."""

    verdicts: tuple[Verdict, ...] = ()
    error: str | None = None
    detail: str = ""
    units: int = 0  # positions compared before the cuts
    worst: float = 0.0  # the largest squared distance of a twin's position to the window's
    floor: float = 0.0  # the numerical floor it was held to
    noise: float | None = None  # the largest distance between a copy and its original (0: deterministic)
    p: float | None = None  # the rank test's, for a nondeterministic model

    @property
    def verdict(self) -> Verdict | None:
        """The disqualifying or asking verdict on reading ahead, if any."""
        return next((v for v in self.verdicts if v.check == "reads_ahead"), None)


def judge(layout: Layout, got: Assembled, task: str) -> Outcome:
    """The probe's finding from the passes' assembled predictions (logits [W, L, V])."""
    import numpy as np

    if layout.twins is None or got.twins is None:
        return Outcome(detail="no twins: no input holds a later position's target")
    try:
        official = _log_softmax(got.real)
        twins = _log_softmax(got.twins)
    except ValueError as exc:
        return Outcome(error=f"the passes' predictions cannot be compared: {exc}")
    cuts = layout.twins.cuts
    w, length = official.shape[:2]
    scale = float(np.sqrt(np.mean(official ** 2))) if official.size else 0.0
    floor = official.shape[2] * (REL_TOL * max(scale, 1e-6)) ** 2
    before = np.arange(length)[None, :] < cuts[:, None]  # [W, L]: the positions a causal model keeps
    dist = ((official - twins) ** 2).sum(axis=2)  # [W, L]
    probed = np.where(before, dist, 0.0)
    worst = float(probed.max()) if probed.size else 0.0
    noise = 0.0
    copy_dist: list[np.ndarray] = []
    for kind, _, original, copy in got.copies:
        d = ((_log_softmax(original[None]) - _log_softmax(copy[None])) ** 2).sum(axis=2)[0]
        noise = max(noise, float(d.max()))
        if kind == 0:  # a real window's copy: its positions line up with the windows'
            copy_dist.append(d)
    units = int(before.sum())
    if noise <= floor:  # deterministic: any position before a cut past the floor reads ahead
        moved = probed > floor
        if not moved.any():
            return Outcome(detail=f"{units} positions before {w} cuts compared, none moved past the numerical floor",
                           units=units, worst=worst, floor=floor, noise=noise)
        windows = int(moved.any(axis=1).sum())
        detail = (f"{int(moved.sum())} of {units} positions before the cut moved in {windows} of {w} windows "
                  f"(largest {worst:.3g}, floor {floor:.3g}; the model is deterministic)")
        found = verdict("reads_ahead", "disqualifies", _explain(detail), task, statistic=worst)
        return Outcome((found,), detail=detail, units=units, worst=worst, floor=floor, noise=noise)
    shaky = verdict("nondeterministic", "look", f"its predictions differ between two identical inputs (by up to "
                    f"{noise:.3g}, floor {floor:.3g}): the causality probe compares it by ranks", task, statistic=noise)
    stat = np.array([probed[k, max(0, c - LAST):c].max() for k, c in enumerate(cuts)])
    rng = np.random.default_rng(int.from_bytes(hashlib.sha256(cuts.tobytes()).digest()[:8], "little"))
    pseudo = rng.integers(1, length, size=len(copy_dist))
    null = np.array([d[max(0, c - LAST):c].max() for d, c in zip(copy_dist, pseudo, strict=True)])
    p = _rank_p(stat, null)
    detail = (f"twins' largest distance over the {LAST} positions before their cut against copies' "
              f"({len(stat)} against {len(null)}): rank test p {p:.1e}")
    out = [shaky]
    if p <= P_LOOK:
        strength: Strength = "disqualifies" if p <= P_STRONG else "look"
        out.insert(0, verdict("reads_ahead", strength, _explain(detail), task, statistic=float(np.median(stat)), p=p))
    return Outcome(tuple(out), detail=detail, units=units, worst=worst, floor=floor, noise=noise, p=p)


def _explain(detail: str) -> str:
    return f"predictions for earlier positions changed when only later characters changed: {detail}"


def _rank_p(x: np.ndarray, y: np.ndarray) -> float:
    """One-sided Mann-Whitney p of "``x`` is stochastically larger than ``y``" (normal approximation
    with ties corrected; 1.0 where either side is empty)."""
    import numpy as np

    n1, n2 = len(x), len(y)
    if not n1 or not n2:
        return 1.0
    both = np.concatenate([x, y])
    order = both.argsort(kind="mergesort")
    ranks = np.empty(len(both))
    sorted_vals = both[order]
    i = 0
    while i < len(both):  # average ranks over ties
        j = i
        while j + 1 < len(both) and sorted_vals[j + 1] == sorted_vals[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    u = ranks[:n1].sum() - n1 * (n1 + 1) / 2
    _, counts = np.unique(both, return_counts=True)
    n = n1 + n2
    var = n1 * n2 / 12 * ((n + 1) - float((counts ** 3 - counts).sum()) / (n * (n - 1)))
    if var <= 0:
        return 1.0
    z = (u - n1 * n2 / 2 - 0.5) / math.sqrt(var)
    return 0.5 * math.erfc(z / math.sqrt(2))


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    import numpy as np

    x = np.asarray(logits, dtype=np.float64)
    if x.ndim != 3 or not np.isfinite(x).all():
        raise ValueError(f"logits of shape {x.shape}, not finite [windows, positions, vocabulary]")
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))
