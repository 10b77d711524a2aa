"""The val-test gap flag: a selected checkpoint whose validation score beats its test score by more
than the task's baseline allows (trained on the validation split, or overfit to it by selection).

On T4-T6 the harness picks the official checkpoint by its validation score and reports its test
score (runner/scoring/official.py). An agent that trains on the validation split, or tries many models
and keeps the one that happens to fit validation best, wins that selection without winning on
test; its selected checkpoint then has a validation score far better *relative to its test
score* than an honest model has. The measure is the **val advantage**, relative to the test score:

    lower is better:   a = (test - val) / |test|
    higher is better:  a = (val - test) / |test|

It is not zero for an honest model (T6's validation months are harder than its test months: the
LTSF-recipe DLinear baseline has val MSE 0.650, test MSE 0.371, a = -0.75), so the rule compares
with the baseline's own advantage ``b`` measured under the same data:

    flagged when a > b + margin

**Reference, in this order.** (1) Baseline sessions of the same task recorded on this machine
(``onegc baseline TASK``: the baseline ``train.py`` run as the agent, under the same contract),
found by :func:`baseline_pairs`: b is the mean of their advantages and margin is
``max(MIN_MARGIN, SPREAD_SIGMAS × their sample std)``. (2) Otherwise the figures measured by
``benchmarks/reproduce_baselines.py --seeds 5`` in ``task.toml`` (``baseline_val_gap``,
``val_gap_margin``). (3) Neither: no flag (recorded as such).

**Limits.** It sees only the selected checkpoint's two scores. A model that genuinely generalises
differently from the baseline (another architecture whose val and test errors move apart) can
cross the line without training on val: the flag asks for a look, it strikes nothing. A session
that trained on val only a little (a few epochs of fine-tuning) stays under the margin. On
T1-T3 and T7 the scored split *is* validation, so there is no gap to measure and no flag.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from runner.integrity.checks import verdict
from runner.wire.verdicts import Verdict

MIN_MARGIN = 0.10  # in units of the val advantage: 10 % of the test score
SPREAD_SIGMAS = 3.0  # margin from measured baseline runs: this many sample std of their advantage
BASELINE_STUDY = "baseline"  # the study name `onegc baseline` records its sessions under


@dataclass(frozen=True)
class GapReference:
    value: float  # the baseline's val advantage
    margin: float
    source: str  # where it came from, for the record
    n: int = 0  # baseline runs behind it (0: task.toml's measured figures)


@dataclass(frozen=True)
class GapCheck:
    advantage: float | None  # the selected checkpoint's val advantage (None: no val or no test score)
    reference: GapReference | None
    flag: str | None  # the flag text, or None

    @property
    def verdict(self) -> Verdict | None:
        """The check's verdict (a look), or None when the gap is within the baseline's."""
        return None if self.flag is None else verdict("val_test_gap", "look", self.flag, statistic=self.advantage)

    def record(self) -> dict:
        """What result.json keeps."""
        return {"advantage": self.advantage, "reference": asdict(self.reference) if self.reference else None,
                "flagged": self.flag is not None, "flag": self.flag}


def val_advantage(val: float | None, test: float | None, direction: str) -> float | None:
    """How far the val score beats the test score, relative to the test score (module docstring)."""
    if val is None or test is None or not (math.isfinite(val) and math.isfinite(test)) or test == 0:
        return None
    return (test - val) / abs(test) if direction == "lower" else (val - test) / abs(test)


def reference_from_runs(pairs: Iterable[tuple[float, float]], direction: str, source: str) -> GapReference | None:
    """From baseline runs' (val, test) pairs; None when none has both."""
    adv = [a for a in (val_advantage(v, t, direction) for v, t in pairs) if a is not None]
    if not adv:
        return None
    spread = statistics.stdev(adv) if len(adv) > 1 else 0.0
    return GapReference(statistics.fmean(adv), max(MIN_MARGIN, SPREAD_SIGMAS * spread), source, len(adv))


def reference_from_spec(baseline_val_gap: float | None, val_gap_margin: float | None) -> GapReference | None:
    if baseline_val_gap is None:
        return None
    margin = MIN_MARGIN if val_gap_margin is None else max(MIN_MARGIN, val_gap_margin)
    return GapReference(baseline_val_gap, margin, "task.toml (reproduce_baselines.py --seeds 5)")


def check(val: float | None, test: float | None, direction: str, reference: GapReference | None) -> GapCheck:
    adv = val_advantage(val, test, direction)
    if adv is None or reference is None or adv <= reference.value + reference.margin:
        return GapCheck(adv, reference, None)
    flag = (f"val-test gap: the selected checkpoint's val score beats its test score by {adv:+.3f} (relative), "
            f"beyond the baseline's {reference.value:+.3f} + margin {reference.margin:.3f}: trained on val, or overfit to it")
    return GapCheck(adv, reference, flag)


def baseline_pairs(runs_dir: Path, task_id: str, task_hash: str | None, limit: int = 200) -> list[tuple[float, float]]:
    """(val, test) of the official checkpoints of finished baseline sessions of ``task_id`` under
    ``runs_dir`` (result.json, written by their runner), with the same task files hash when
    ``task_hash`` is given (read from their session_started contract). At most ``limit`` sessions
    are read; unreadable or foreign files are skipped."""
    pairs: list[tuple[float, float]] = []
    try:
        folders = sorted(p for p in runs_dir.iterdir() if p.name.startswith(f"{BASELINE_STUDY}--"))
    except OSError:
        return pairs
    for folder in folders[:limit]:
        try:
            result = json.loads((folder / "result.json").read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(result, dict) or result.get("task") != task_id or result.get("study") != BASELINE_STUDY:
            continue
        val, test = result.get("val"), result.get("value")
        if not isinstance(val, int | float) or not isinstance(test, int | float) or isinstance(val, bool):
            continue
        if task_hash is not None and _task_hash(folder) != task_hash:
            continue
        pairs.append((float(val), float(test)))
    return pairs


def _task_hash(folder: Path) -> str | None:
    try:
        with open(folder / "events.jsonl", encoding="utf-8") as f:
            for _, line in zip(range(20), f, strict=False):
                event = json.loads(line)
                if isinstance(event, dict) and event.get("type") == "session_started":
                    contract = event.get("contract")
                    return contract.get("task_hash") if isinstance(contract, dict) else None
    except (OSError, ValueError):
        return None
    return None


def reference_for(spec, runs: Path | None) -> GapReference | None:
    """The reference of a session of task ``spec`` (a TaskSpec) run under ``runs`` (the runs
    folder): its baseline sessions there, else task.toml's measured figures (module docstring)."""
    if runs is not None:
        found = reference_from_runs(baseline_pairs(runs, spec.id, spec.version_hash()), spec.direction,
                                    f"baseline sessions under {runs}")
        if found is not None:
            return found
    return reference_from_spec(spec.baseline_val_gap, spec.val_gap_margin)


def check_selected(spec, runs: Path | None, val: float | None, test: float | None,
                   study: str | None = None) -> GapCheck | None:
    """The check of a session's selected checkpoint; None where the scored split is validation
    (T1-T3, T7: nothing to compare). A baseline session (``study`` ``baseline``) is a reference
    itself: its advantage is recorded, never flagged."""
    if spec.scored_split == "val":
        return None
    if study == BASELINE_STUDY:
        return GapCheck(val_advantage(val, test, spec.direction), None, None)
    return check(val, test, spec.direction, reference_for(spec, runs))
