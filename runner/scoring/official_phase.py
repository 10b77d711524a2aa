"""The official phase, after the agent stopped: paper step 5 by the harness's own validation scores
(the rule: runner/scoring/official.py), each re-evaluation a fresh child of a sealed scorer on the
session's device (the warm live one where that is the CPU too), probed for reading ahead or across
examples (runner/integrity/causal.py), checkpoints saved after the budget left out and labelled
(runner/scoring/official.py's ``within_budget``), the unofficial test-best
(runner/scoring/unofficial.py), the val-test gap check (runner/integrity/selection_gap.py) and the
integrity rule: a disqualifying verdict on the official checkpoint (runner/wire/verdicts.py,
recorded by runner/wire/disqualifications.py). It emits an official ``checkpoint_scored`` per
re-evaluation and gives the :class:`OfficialResult` that result.json records
(runner/scoring/result_file.py).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from runner.integrity import selection_gap
from runner.scoring import unofficial
from runner.scoring.live import LiveScoring, checkpoint_verdicts
from runner.scoring.official import (
    MAX_FALLBACK,
    WINDOW_S,
    Candidate,
    Evaluation,
    evaluation_cap,
    from_live_scores,
    not_reevaluated,
    phase_seconds,
    select,
    windows,
    within_budget,
)
from runner.scoring.scorer import SELECTION_SPLIT, Score, SealedScorer
from runner.wire import disqualifications
from runner.wire.jsonl import EventWriter
from runner.wire.paths import SessionPaths
from runner.wire.session_config import SessionConfig
from runner.wire.verdicts import Verdict, disqualifying, records
from tasks import TaskSpec


@dataclass(frozen=True)
class OfficialResult:
    """A session's result: the official checkpoint and score, and how they were reached."""

    best: tuple[str, float | None] | None = None  # (checkpoint, its scored-split score)
    val: float | None = None  # the official checkpoint's validation score
    scored_by: str | None = None  # the official re-evaluation, or the live scores where the disk was full
    failure: str | None = None  # why there is no score
    found: int = 0  # checkpoints found
    evaluated: list[dict] = field(default_factory=list)  # every re-evaluation, in budget-time order
    trajectory: list[dict] = field(default_factory=list)  # each 5-minute window's val-best
    disqualified: str | None = None  # the integrity rule's verdict
    verdicts: list[Verdict] = field(default_factory=list)  # the official checkpoint's, and the session's (the val-test gap)
    tested: list[dict] | None = None  # the rows the unofficial test-best is chosen from (None: evaluated)
    not_reevaluated: dict | None = None  # the checkpoints the phase's bounds left out, by reason (official.py)
    phase: dict | None = None  # the phase's time bound and the time it took (official.py's phase_seconds)
    val_gap: selection_gap.GapCheck | None = None
    # a sealed split (runner/integrity/split_parts.py): the official checkpoint's whole-split, public and private
    # figures and the gap test between the parts; ``best``'s score is then the private part's
    figures: dict | None = None

    @property
    def score(self) -> float | None:
        return self.best[1] if self.best else None

    @property
    def checkpoint(self) -> str | None:
        return self.best[0] if self.best else None


class OfficialPhase:
    """``make_scorer(device)``: a sealed scorer of this session on ``device``; ``device``: where
    the official re-evaluations run."""

    def __init__(self, spec: TaskSpec, paths: SessionPaths, config: SessionConfig, events: EventWriter,
                 make_scorer: Callable[[str], SealedScorer], device: str, session_verdicts: tuple[Verdict, ...] = ()):
        self.spec = spec
        self.paths = paths
        self.config = config
        self.events = events
        self.make_scorer = make_scorer
        self.device = device
        self.sealed = config.scored_split == "sealed"  # the official value is the private part's
        self.session_verdicts = session_verdicts  # about the whole session (its answers): beside every official figure

    def run(self, live: LiveScoring, disk_full: bool) -> OfficialResult:
        """The official result from ``live``'s checkpoints. ``disk_full``: no unofficial
        re-evaluations, and the live scores stand in where no re-evaluation gave a score."""
        spec, scored = self.spec, self.spec.scored_split
        splits = sorted({SELECTION_SPLIT, scored})
        everyone = live.candidates()
        live_val = {c.label: c.val for c in everyone}
        elapsed = {c.label: c.elapsed_s for c in everyone}
        cands, late = within_budget(everyone, self.config.budget_s)  # the paper's budget is the budget
        found_verdicts: dict[str, list[Verdict]] = {}
        rows: dict[str, dict] = {label: self._after_budget(live, label, elapsed[label], live_val[label], v, found_verdicts)
                                 for label, v in late.items()}
        warm = live.scorer if live.scorer is not None and live.scorer.alive() and \
            live.scorer.plan.device == self.device else None
        scorer: SealedScorer | None = None
        bound_s = phase_seconds(self.config.budget_s)
        began = time.monotonic()  # the phase's bounds (runner/scoring/official.py)
        deadline = began + bound_s
        evaluated_content: set[str] = set()
        calls = 0

        def time_left() -> float:
            return deadline - time.monotonic()

        def evaluate(label: str) -> Evaluation:
            nonlocal scorer, calls
            calls += 1
            if scorer is None:
                scorer = warm if warm is not None else self.make_scorer(self.device)
            scorer.deadline = deadline  # a child is cut at the phase's end: nothing stretches it
            found = live.found[label]
            # never raises: a failure, or a model that reads ahead or across examples, is the score's error
            scores = scorer.score(found.path, found.snapshot, splits, probe=True, parts=self.sealed)
            sel, off = scores[SELECTION_SPLIT], scores[scored]
            if (off.error or sel.error) and time_left() <= 0:  # the phase's time, not the checkpoint's failure
                return Evaluation(None, None, off.error or sel.error, interrupted=True)
            if found.content is not None:
                evaluated_content.add(found.content)
            found_verdicts[label] = checkpoint_verdicts(spec, found, sel, (*off.verdicts, *self.session_verdicts),
                                                        sealed=self.sealed)
            parts = off.figures or {}
            official = parts.get("private") if self.sealed else off.value  # sealed: the part no answer touched
            self.events.emit("checkpoint_scored", name=label, value=official, error=off.error, metric=spec.metric,
                             split=scored, eval_s=off.eval_s, budget_elapsed_s=elapsed[label], official=True,
                             verdicts=found_verdicts[label], val=sel.value if scored != SELECTION_SPLIT else None,
                             **({"part": "private", "whole": off.value, "public": parts.get("public")} if parts else {}))
            rows[label] = {"checkpoint": label, "window": int(elapsed[label] // WINDOW_S),
                           "budget_elapsed_s": round(elapsed[label], 1), "live_val": live_val[label], "val": sel.value,
                           "self_reported": found.self_reported, "official": official,
                           "error": off.error or sel.error, "verdicts": records(found_verdicts[label]),
                           "canaries": sel.evidence,  # runner/integrity/canaries.py: p, losses, counts
                           **({"whole": off.value, "parts": parts} if parts else {})}
            return Evaluation(sel.value, official, off.error or sel.error)

        try:
            chosen = select(cands, spec.better, evaluate, MAX_FALLBACK,
                            max_evaluations=evaluation_cap(self.config.budget_s), time_left=time_left, phase_s=bound_s)
            if not disk_full and scored != SELECTION_SPLIT:  # the unofficial test-best, one more per window at most
                copies = set(chosen.same_as)
                for label in unofficial.still_to_evaluate(elapsed, set(rows) | copies, limit=windows(self.config.budget_s)):
                    if time_left() <= 0:
                        break
                    if live.found[label].content in evaluated_content:  # byte-identical to one evaluated
                        continue
                    evaluate(label)
        finally:
            if scorer is not None and scorer is not warm:
                scorer.close()
            elif scorer is not None:
                scorer.deadline = None
        took_s = time.monotonic() - began

        def row(label: str) -> dict:  # a byte-identical copy's is the evaluated original's
            return rows[label] if label in rows else rows[chosen.same_as[label]]

        trajectory = [{"window": int(elapsed[label] // WINDOW_S), "checkpoint": label, "val": chosen.vals[label],
                       "official": row(label)["official"],
                       **({"same_as": chosen.same_as[label]} if label in chosen.same_as else {})}
                      for label in chosen.trajectory]
        best = (chosen.best, rows[chosen.best]["official"]) if chosen.best else None
        val = chosen.vals.get(chosen.best) if chosen.best else None
        official_verdicts = found_verdicts[chosen.best] if chosen.best else []
        scored_by = "official re-evaluation" if best else None
        if best is None and disk_full:
            best, val, official_verdicts, scored_by = (self._from_live(live, cands, rows)
                                                       or (best, val, official_verdicts, scored_by))
        failure = None
        if best is None:
            failure = "no checkpoint was saved" if not live.found else "no checkpoint could be scored: " + (
                next((r["error"] for r in rows.values() if r["error"]), "") or live.first_error() or "unknown")
        elif best[1] is None:
            failure = f"{scored_by}; the {scored} split needs the re-evaluation, so there is no {scored} score"
        evaluated = sorted(rows.values(), key=lambda r: r["budget_elapsed_s"])
        gap = selection_gap.check_selected(spec, self.paths.root.parent, val, best[1] if best else None,
                                           self.config.study)
        session_verdicts = [*official_verdicts, *([gap.verdict] if gap is not None and gap.verdict else [])]
        chosen_row = rows.get(best[0], {}) if best else {}
        figures = {"whole": chosen_row["whole"], **chosen_row["parts"]} if "parts" in chosen_row else None
        return OfficialResult(
            figures=figures,
            best=best, val=val, scored_by=scored_by, failure=failure, found=len(live.found), evaluated=evaluated,
            trajectory=trajectory, disqualified=self._disqualify(official_verdicts) if best else None,
            verdicts=session_verdicts,
            tested=unofficial.candidates(evaluated, live_val, elapsed, scored == SELECTION_SPLIT),
            not_reevaluated=not_reevaluated(live.found, rows, chosen.left_out, chosen.bounded), val_gap=gap,
            phase={"bound_s": round(bound_s, 1), "took_s": round(took_s, 1), "evaluations": calls})

    def _from_live(self, live: LiveScoring, cands: list[Candidate], rows: dict[str, dict]):
        """``(best, val, verdicts, scored_by)`` from the live scores, for a session whose disk filled up
        and whose re-evaluation gave no score; None without a live score."""
        # sealed: a live score is the whole split's, never the private part's official figure
        pick = from_live_scores(cands, self.spec.better, self.spec.scored_split == SELECTION_SPLIT and not self.sealed)
        if pick is None:
            return None
        why = (rows.get(pick.label) or {}).get("error") or "it could not run"
        found = checkpoint_verdicts(self.spec, live.found[pick.label], live.live[pick.label], sealed=self.sealed)
        return ((pick.label, pick.official), pick.val, found,
                f"live scoring: the disk was full and the official re-evaluation failed ({why})")

    def _after_budget(self, live: LiveScoring, label: str, elapsed_s: float, live_val: float | None, late: Verdict,
                      found_verdicts: dict[str, list[Verdict]]) -> dict:
        """The record of a checkpoint saved after the budget ran out: never evaluated, never
        official, with the verdict ``after_budget`` (an official ``checkpoint_scored`` and a row)."""
        found = live.found[label]
        found_verdicts[label] = [*checkpoint_verdicts(self.spec, found, live.live.get(label) or Score(None, None),
                                                      sealed=self.sealed), late]
        error = f"after the budget: {late.evidence}"
        self.events.emit("checkpoint_scored", name=label, value=None, error=error, metric=self.spec.metric,
                         split=self.spec.scored_split, eval_s=None, budget_elapsed_s=elapsed_s, official=True,
                         verdicts=found_verdicts[label], val=None)
        return {"checkpoint": label, "window": int(elapsed_s // WINDOW_S), "budget_elapsed_s": round(elapsed_s, 1),
                "live_val": live_val, "val": None, "self_reported": found.self_reported, "official": None,
                "error": error, "verdicts": records(found_verdicts[label])}

    def _disqualify(self, official_verdicts: list[Verdict]) -> str | None:
        """The integrity rule: the official checkpoint's first disqualifying verdict, recorded beside the
        session (result.json carries it too); None when it has none."""
        struck = disqualifying(official_verdicts)
        if struck is None:
            return None
        reason = f"the official checkpoint: {struck.evidence} ({struck.check})"
        try:
            disqualifications.record(self.paths, reason, by="integrity rule")
        except OSError as exc:  # a full disk: result.json still carries the verdict
            print(f"onegc runner: verdict not recorded in {disqualifications.FILE}: {exc}", file=sys.stderr, flush=True)
        return reason


def official_device(gpu: str | None) -> str:
    """Where the official re-evaluations run: the session's GPU where torch sees one, else the CPU."""
    return "cuda" if gpu and _cuda_available() else "cpu"


def _cuda_available() -> bool:
    """Whether torch sees a GPU (a fake GPU id on a CPU machine does not count)."""
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:  # no torch, or a broken CUDA install: score on the CPU
        return False
