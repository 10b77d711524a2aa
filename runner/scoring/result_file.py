"""``result.json``: a session's result, written once at its end (a harness error before the agent
started writes one too). Written whole (a temporary file renamed), so a reader never sees half."""

from __future__ import annotations

import json
import os
import sys

from runner.integrity import canaries, checks
from runner.scoring import unofficial
from runner.scoring.official import SELECTION
from runner.scoring.official_phase import OfficialResult
from runner.scoring.scorer import SELECTION_SPLIT
from runner.wire.paths import SessionPaths
from runner.wire.session_config import SessionConfig
from runner.wire.verdicts import records
from tasks import TaskSpec


def coverage(config: SessionConfig, spec: TaskSpec) -> list[checks.Cover]:
    """How each threat row was met in this session (runner/integrity/checks.py)."""
    planted = config.plants_canaries and canaries.kind_for(spec.id) is not None
    return checks.coverage(spec.id, canaries_on=planted, sealed=config.scored_split == "sealed")


def result_record(config: SessionConfig, spec: TaskSpec, reason: str, detail: str, result: OfficialResult,
                  conditions: dict | None, answers: dict | None = None) -> dict:
    """What result.json holds: the session, how it ended, and ``result``; ``answers``: a sealed
    split's answers (runner/integrity/sealed_split.py: how many, the Ladder's transcript and bound)."""
    return {
        "session_id": config.session_id,
        "task": spec.id,
        "agent": config.agent,
        "model": config.model,
        "repeat": config.repeat,
        "study": config.study,
        "metric": spec.metric,
        "direction": spec.direction,
        "split": spec.scored_split,
        "scored_split": config.scored_split,  # "sealed": value is the private part's, beside the whole split's
        "value": result.score,
        # a sealed split (runner/integrity/split_parts.py): the official checkpoint's whole-split figure (what the
        # paper compares against), its public (the answers') and private parts' and the gap test between them
        "whole": result.figures.get("whole") if result.figures else None,
        "parts": {k: v for k, v in result.figures.items() if k != "whole"} if result.figures else None,
        "answers": answers,
        "checkpoint": result.checkpoint,
        "selection": SELECTION,  # the checkpoint is the best by the harness's validation score
        "selection_split": SELECTION_SPLIT,
        "val": result.val,
        "scored_by": result.scored_by,  # the official re-evaluation, or the live scores where the disk was full
        "end_reason": reason,
        "end_detail": detail,
        "failure": result.failure,
        "checkpoints_found": result.found,
        "evaluated": result.evaluated,
        "trajectory": result.trajectory,  # each 5-minute window's val-best on the scored split
        "disqualified": result.disqualified,  # the integrity rule's (runner/scoring/official_phase.py); people add theirs later
        "verdicts": records(result.verdicts),  # the official checkpoint's and the session's (runner/wire/verdicts.py)
        "checks": [c.record() for c in coverage(config, spec)],  # how each threat row was met
        "not_checked": checks.not_checked(coverage(config, spec)),
        "val_test_gap": result.val_gap.record() if result.val_gap else None,  # runner/integrity/selection_gap.py
        "conditions": conditions,  # runner/session/contention.py: contended or clean
        "not_reevaluated": result.not_reevaluated,  # runner/scoring/official.py: the post-session bounds
        "official_phase": result.phase,  # its time bound, the time it took, its evaluations (official.py)
        "unofficial": unofficial.best_scored(result.evaluated if result.tested is None else result.tested,
                                             spec.better, spec.scored_split, result.found),
    }


def write_result(paths: SessionPaths, record: dict) -> None:
    """Write ``record`` as the session's result.json; on a disk with no room left, say so on stderr
    (session_ended still says how the session ended)."""
    tmp = paths.root / ".result.json.tmp"
    try:
        tmp.write_text(json.dumps(record, indent=2))
        os.replace(tmp, paths.result)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        print(f"onegc runner: {paths.result} not written: {exc}", file=sys.stderr, flush=True)
