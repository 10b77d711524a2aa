"""Causal evaluation of sequences (INTEGRITY.md V3): a prediction may not depend on what it predicts.

On T1 a window's inputs hold its own later characters (the targets of its earlier positions). The
official evaluation feeds them as the task's ``predict`` does (unchanged: an honest model's metric
is bit for bit what it was), and this module checks the model beside it, in fresh children of the
sealed worker that never hold the real inputs (runner/scoring/worker.py, ``probe_inputs``): every
window is fed again with its characters from a random cut on replaced by real text from elsewhere
(the train split, so no probed window's future is anywhere in the probe). Every position before the
cut must predict as it did officially. (T6's windows hold each other's horizons; there the scorer
rules reading across out by construction, streaming the rows in time order: onegc_kit.RowStream.)

The official re-evaluation probes the scored split; live scoring probes where validation is the
scored split (T1), so that no view shows a reader's score even before the session ends.

A prediction "moved" when its squared distance to the official one (log-probabilities) exceeds both
a numerical floor (:data:`REL_TOL` of the predictions' scale: what a different batch shape or kernel
changes) and :data:`NOISE_FACTOR` times the largest distance between two runs of the same probe in
two children (dropout left on, GPU non-determinism). The repeat runs only when some prediction is
past the floor, so a deterministic honest model costs one probe. Any prediction that moved is that
checkpoint's error with the disqualifying verdict ``reads_ahead`` (never the official result); a
probe that could not run (too slow for the scorer's time limit, a crash on the probe's inputs) is an
error too, with the verdict ``causality_unchecked`` (a look), never a silent pass. The thresholds
come from benchmarks/causal_power.py.

Known limit: a model that carries the scored split itself (V2, a lookup or a buffer) can predict
the same either way; that is the canaries' finding, not this one's.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from runner.integrity.checks import verdict
from runner.wire.verdicts import Verdict

if TYPE_CHECKING:
    import numpy as np

REL_TOL = 1e-3  # of the predictions' RMS per value; on CPU an honest model moves by 0 (benchmarks/causal_power.py)
NOISE_FACTOR = 4.0  # moved: past this many times the largest run-to-run distance of the same probe
FOREIGN_SPLIT = "train"  # where a probe's replacement text comes from: never a probed window's future


@dataclass(frozen=True)
class Outcome:
    """What the probe found: ``verdict`` (the model moved: it disqualifies), ``error`` (it could not
    check), or neither (passed); ``detail`` says what was measured."""

    verdict: Verdict | None = None
    error: str | None = None
    detail: str = ""
    units: int = 0  # predictions compared
    worst: float = 0.0  # the largest squared distance of a probed prediction to its official one
    floor: float = 0.0  # the numerical floor it was held to
    noise: float | None = None  # the largest distance between two runs of the probe (None: not repeated)


class ProbeScorer(Protocol):
    """What a probe needs of the sealed scorer (runner/scoring/scorer.py's ``SealedScorer``):
    ``plan.judge.module``, ``plan.timeout_s``, ``plan.probes``, ``plan.device``, and fresh children."""

    plan: Any

    def predict_parts(self, ckpt: Path, code: Path, folder: Path, parts: list[str], timeout_s: float,
                      seed: int = 0) -> dict[str, np.ndarray] | str: ...


class Probe(Protocol):
    check: str  # the verdict's check (runner/integrity/checks.py)
    what: str

    def calls(self, repeat: bool = False) -> list[dict[str, dict[str, Any]]]:
        """Each child's parts, in the order it must predict them: ``[{part: inputs}]``; with
        ``repeat``, the same predictions asked again (to measure the run-to-run noise)."""

    def units(self, official: np.ndarray, answers: list[dict[str, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
        """(official, probed) predictions that must agree, one row per unit."""


class SequenceProbe:
    """Reads ahead (T1): inputs ``x`` [W, L] of token ids, predictions [W, L, V] logits."""

    check = "reads_ahead"
    what = "positions"

    def __init__(self, x: np.ndarray, foreign: np.ndarray, rng: np.random.Generator):
        import numpy as np

        self.x = np.asarray(x)
        length = self.x.shape[1]
        self.cuts = rng.integers(1, length, size=len(self.x))  # positions before the cut must not move
        rows = rng.integers(0, len(foreign), size=len(self.x))
        probe = self.x.copy()
        for w, (k, r) in enumerate(zip(self.cuts, rows, strict=True)):
            probe[w, k:] = foreign[r, k:]
        self.probe = probe

    def calls(self, repeat: bool = False) -> list[dict[str, dict[str, Any]]]:
        return [{"probe": {"x": self.probe}}]

    def units(self, official: np.ndarray, answers: list[dict[str, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
        import numpy as np

        probed = answers[0]["probe"]
        if probed.shape != official.shape:
            raise ValueError(f"the probe's predictions have shape {probed.shape}, the official ones {official.shape}")
        before = np.arange(self.x.shape[1])[None, :] < self.cuts[:, None]  # [W, L]
        return _log_softmax(official[before]), _log_softmax(probed[before])


PROBED = {"t1_shakespeare": "sequence"}  # T6 by construction (onegc_kit.RowStream); the others: independent examples


def probe_for(module: Any, split: str, rng: np.random.Generator) -> Probe | None:
    """The task's probe on ``split``'s inputs, or None where no input holds another's target (t0,
    T2-T5, T7: examples are independent images, graphs, rows or texts)."""
    kind = PROBED.get(getattr(module, "TASK", ""))
    if kind == "sequence":
        return SequenceProbe(module.inputs(split)["x"], module.inputs(FOREIGN_SPLIT)["x"], rng)
    return None


def decide(official: np.ndarray, probed: np.ndarray, repeat: np.ndarray | None) -> tuple[bool, np.ndarray, float, float]:
    """``(needs a repeat or moved, which units moved, the threshold, the noise)``: with ``repeat``
    None, only whether any unit is past the numerical floor."""
    import numpy as np

    scale = float(np.sqrt(np.mean(official ** 2))) if official.size else 0.0
    floor = official.shape[1] * (REL_TOL * max(scale, 1e-6)) ** 2 if official.ndim == 2 else 0.0
    moved = ((official - probed) ** 2).sum(axis=1)
    if repeat is None:
        return bool((moved > floor).any()), moved > floor, floor, 0.0
    noise = float(((probed - repeat) ** 2).sum(axis=1).max()) if len(probed) else 0.0
    threshold = NOISE_FACTOR * max(noise, floor)
    return bool((moved > threshold).any()), moved > threshold, threshold, noise


def run(scorer: ProbeScorer, ckpt: Path, code: Path, split: str, official: np.ndarray,
        seed: int | None = None) -> Outcome:
    """The task's probe of one checkpoint whose ``split`` predictions are ``official``."""
    import numpy as np

    rng = np.random.default_rng(seed if seed is not None else int.from_bytes(os.urandom(8), "little"))
    probe = probe_for(scorer.plan.judge.module, split, rng)
    if probe is None:
        return Outcome(detail="no input holds another position's target")
    deadline = time.monotonic() + scorer.plan.timeout_s  # the checks together get the scorer's own limit
    written: list[Path] = []
    try:
        first = _probed_units(scorer, ckpt, code, probe, official, written, deadline)
        if isinstance(first, Outcome):
            return first
        a, b = first
        past, _, floor, _ = decide(a, b, None)
        worst = float(((a - b) ** 2).sum(axis=1).max()) if len(a) else 0.0
        if not past:
            return Outcome(detail=f"{len(a)} {probe.what} probed, none moved past the numerical floor",
                           units=len(a), worst=worst, floor=floor)
        again = _probed_units(scorer, ckpt, code, probe, official, written, deadline, repeat=True,
                              seed=1 + int(rng.integers(1 << 30)))  # another seed: dropout left on draws again
        if isinstance(again, Outcome):
            return again
        c = again[1]
        found, moved, threshold, noise = decide(a, b, c)
        detail = (f"{int(moved.sum())} of {len(a)} {probe.what} moved (largest {worst:.3g}, "
                  f"threshold {threshold:.3g}, run-to-run noise {noise:.3g})")
        task = getattr(scorer.plan.judge.module, "TASK", None)
        moved_verdict = verdict(probe.check, "disqualifies", _explain(probe, detail), task, statistic=worst) if found else None
        return Outcome(verdict=moved_verdict, detail=detail, units=len(a), worst=worst, floor=floor, noise=noise)
    finally:
        for folder in written:
            shutil.rmtree(folder, ignore_errors=True)


def _probed_units(scorer: ProbeScorer, ckpt: Path, code: Path, probe: Probe, official: np.ndarray,
                  written: list[Path], deadline: float, repeat: bool = False,
                  seed: int = 0) -> tuple[np.ndarray, np.ndarray] | Outcome:
    """The probe's (official, probed) units from fresh children, or the Outcome that says why not."""
    import numpy as np

    answers = _answers(scorer, ckpt, code, _write_calls(scorer, probe.calls(repeat=repeat), written), deadline, seed)
    if isinstance(answers, str):
        return Outcome(error=answers)
    try:
        return probe.units(np.asarray(official), answers)
    except ValueError as exc:
        return Outcome(error=f"the probe's predictions cannot be compared: {exc}")


def _explain(probe: Probe, detail: str) -> str:
    return f"predictions for earlier positions changed when only later characters changed: {detail}"


def _write_calls(scorer: ProbeScorer, calls: list[dict[str, dict[str, Any]]], written: list[Path]) -> list[Path]:
    """One folder of inputs per call (each child sees its own only), also noted in ``written``."""
    import numpy as np

    root = scorer.plan.probes
    folders = []
    for call in calls:
        folder = root / f"{scorer.plan.device.replace(':', '-')}-{os.getpid()}-{os.urandom(4).hex()}"
        for part, arrays in call.items():
            (folder / part).mkdir(parents=True)
            for name, array in arrays.items():
                np.save(folder / part / f"{name}.npy", np.ascontiguousarray(array), allow_pickle=False)
        folders.append(folder)
        written.append(folder)
    return folders


def _answers(scorer: ProbeScorer, ckpt: Path, code: Path, folders: list[Path],
             deadline: float, seed: int = 0) -> list[dict[str, np.ndarray]] | str:
    """Each probe child's predictions, in order, or why there are none."""
    out = []
    for folder in folders:
        left = deadline - time.monotonic()
        if left <= 1:
            return f"the model is too slow for the causality check within the scorer's limit of {scorer.plan.timeout_s:.0f} s"
        parts = sorted((p.name for p in folder.iterdir()), key=_part_order)
        answer = scorer.predict_parts(ckpt, code, folder, parts, left, seed)
        if isinstance(answer, str):
            if "timed out" in answer:
                return (f"the model is too slow for the causality check within the scorer's limit of "
                        f"{scorer.plan.timeout_s:.0f} s ({answer})")
            return f"the model failed on the probe's inputs: {answer}"
        out.append(answer)
    return out


def _part_order(name: str) -> tuple[int, str]:
    """Probe parts in time order (``w12`` before ``w130``)."""
    digits = name.lstrip("w")
    return (int(digits), name) if digits.isdigit() else (0, name)


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    import numpy as np

    x = np.asarray(logits, dtype=np.float64)
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))
